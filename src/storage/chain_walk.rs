//! Walks along chains of pages, bounded by the relation's size.

use crate::storage::relation::Relation;
use vector_formats::page::{self, BlockNumber};

/// A walk along a chain of pages (each page's `next_blkno`), bounded and cancellable: no
/// chain has more pages than the relation, so a longer one loops, and every block named must
/// exist. Both are index corruption, raised as such (`ERRCODE_INDEX_CORRUPTED`, naming the
/// index); the walk checks for interrupts at every page so that a cancel always gets through.
#[derive(Clone, Copy, Debug)]
pub struct ChainWalk {
    rel: Relation,
    /// The relation's size when the walk began (re-read before reporting a block past it:
    /// the index may have grown meanwhile).
    nblocks: BlockNumber,
    pages: BlockNumber,
}

impl ChainWalk {
    pub fn new(rel: Relation) -> Self {
        ChainWalk {
            nblocks: rel.nblocks(),
            rel,
            pages: 0,
        }
    }

    /// Checks `block`, the next page of the chain (`None` at the end: `INVALID_BLOCK_NUMBER`),
    /// before it is read.
    pub fn next(&mut self, block: BlockNumber) -> Option<BlockNumber> {
        pgrx::check_for_interrupts!();
        if block == page::INVALID_BLOCK_NUMBER {
            return None;
        }
        if block >= self.nblocks {
            self.nblocks = self.rel.nblocks();
            if block >= self.nblocks {
                self.corrupt(format!("links to block {block} past its end"));
            }
        }
        self.pages += 1;
        if self.pages > self.nblocks {
            self.corrupt(format!("has a page chain that loops (at block {block})"));
        }
        Some(block)
    }

    fn corrupt(&self, what: String) -> ! {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!("index \"{}\" {what}", self.rel.name())
        );
    }
}
