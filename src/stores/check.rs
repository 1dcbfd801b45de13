//! The pages the verifier (`vector_check`) reads: an index's main fork, through the buffer
//! manager with a bulk-read strategy, each page share-locked while it is looked at.

use crate::storage::{AccessStrategy, ReadMode, Relation};
use vector_formats::page::BlockNumber;

pub struct IndexPages {
    rel: Relation,
    strategy: AccessStrategy,
}

impl IndexPages {
    /// `rel` must carry no page id check: the verifier reports a wrong id itself, with more
    /// to say about it.
    pub fn new(rel: Relation) -> Self {
        IndexPages {
            rel,
            strategy: AccessStrategy::bulk_read(),
        }
    }
}

impl vector_check::Pages for IndexPages {
    fn nblocks(&mut self) -> BlockNumber {
        self.rel.nblocks()
    }

    fn read<R>(&mut self, block: BlockNumber, f: impl FnOnce(&[u8]) -> R) -> R {
        pgrx::check_for_interrupts!();
        let guard = self
            .rel
            .read_page_with(block, ReadMode::Shared, &self.strategy);
        f(guard.page().bytes())
    }
}
