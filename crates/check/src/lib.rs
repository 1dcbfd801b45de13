//! amcheck-style verification of this library's (and pgvector 0.8.6's) index pages.
//!
//! The checks read pages through [`Pages`], which the extension implements over the buffer
//! manager and the tests over page images, and stop at the first [`Corruption`], which names
//! the block and, for an item, its offset. What pgvector can legitimately leave behind (an
//! element its pruning disconnected, a page a crash left uninitialized) is counted in the
//! summary instead.

pub mod heap;
pub mod hnsw;
pub mod ivfflat;
pub mod value;

use std::fmt;
use vector_formats::page::{maxalign, BlockNumber, ChainOpaque, OffsetNumber, PageRef, BLCKSZ};

/// Where the pages come from.
pub trait Pages {
    /// The relation's size now (it may grow during a check under a weak lock).
    fn nblocks(&mut self) -> BlockNumber;
    /// Calls `f` with the bytes of `block` (a whole page), held still while `f` runs.
    fn read<R>(&mut self, block: BlockNumber, f: impl FnOnce(&[u8]) -> R) -> R;
}

/// Page images in memory.
pub struct PageImages(pub Vec<Vec<u8>>);

impl Pages for PageImages {
    fn nblocks(&mut self) -> BlockNumber {
        self.0.len() as BlockNumber
    }

    fn read<R>(&mut self, block: BlockNumber, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&self.0[block as usize])
    }
}

/// The first problem a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub block: BlockNumber,
    /// The item's offset, when the problem is in an item.
    pub offset: Option<OffsetNumber>,
    pub problem: String,
    /// Set when the check stopped because an allocation of this many bytes failed at
    /// `block`: not corruption, and the caller raises "out of memory".
    pub out_of_memory: Option<usize>,
}

impl Corruption {
    pub fn page(block: BlockNumber, problem: impl Into<String>) -> Self {
        Corruption {
            block,
            offset: None,
            problem: problem.into(),
            out_of_memory: None,
        }
    }

    pub fn item(block: BlockNumber, offset: OffsetNumber, problem: impl Into<String>) -> Self {
        Corruption {
            block,
            offset: Some(offset),
            problem: problem.into(),
            out_of_memory: None,
        }
    }

    /// What a check returns when it cannot get `bytes` more memory at `block`.
    pub fn out_of_memory(block: BlockNumber, bytes: usize) -> Self {
        Corruption {
            out_of_memory: Some(bytes),
            ..Corruption::page(block, format!("out of memory ({bytes} bytes)"))
        }
    }
}

/// `len` copies of `value`, or the bytes that could not be had (a check's memory grows with
/// the index, so a failure must become an ERROR, not an abort).
pub(crate) fn filled<T: Clone>(
    len: usize,
    value: T,
    block: BlockNumber,
) -> Result<Vec<T>, Corruption> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Corruption::out_of_memory(block, len.saturating_mul(std::mem::size_of::<T>()))
    })?;
    v.resize(len, value);
    Ok(v)
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(
                f,
                "block {}, offset {}: {}",
                self.block, offset, self.problem
            ),
            None => write!(f, "block {}: {}", self.block, self.problem),
        }
    }
}

impl std::error::Error for Corruption {}

/// One bit per block.
pub(crate) struct BlockSet(Vec<u64>);

impl BlockSet {
    pub(crate) fn new(nblocks: BlockNumber) -> Self {
        BlockSet(vec![0; (nblocks as usize).div_ceil(64)])
    }

    /// Adds `block`; false if it was already there.
    pub(crate) fn insert(&mut self, block: BlockNumber) -> bool {
        let (word, bit) = (block as usize / 64, block % 64);
        let had = self.0[word] & (1 << bit) != 0;
        self.0[word] |= 1 << bit;
        !had
    }

    pub(crate) fn contains(&self, block: BlockNumber) -> bool {
        let (word, bit) = (block as usize / 64, block % 64);
        self.0.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }
}

/// What every page of both methods has: header bounds, an 8-byte special space (pgvector's
/// chain special space) at the end of the page, and the method's page id (`method` names it).
pub(crate) fn check_layout(
    block: BlockNumber,
    page: PageRef<'_>,
    page_id: u16,
    method: &str,
) -> Result<(), Corruption> {
    let header = page.header();
    if !header.is_consistent(BLCKSZ) {
        return Err(Corruption::page(
            block,
            format!(
                "page header has lower {}, upper {}, special {}",
                header.lower, header.upper, header.special
            ),
        ));
    }
    if usize::from(header.special) != BLCKSZ - maxalign(vector_formats::page::CHAIN_OPAQUE_SIZE) {
        return Err(Corruption::page(
            block,
            format!("special space starts at {}", header.special),
        ));
    }
    let opaque = ChainOpaque::decode(page.special()).expect("an 8-byte special space");
    if opaque.page_id != page_id {
        return Err(Corruption::page(
            block,
            format!("page id is {:#06x}, not {method}'s", opaque.page_id),
        ));
    }
    Ok(())
}
