//! Read-ahead hints for an index's blocks: one block (`PrefetchBuffer`), or runs of blocks not in
//! shared buffers (`smgrprefetch`).

use crate::storage::relation::Relation;
use pgrx::pg_sys;
use vector_formats::page::{self, BlockNumber};

/// What [`Relation::prefetch_block`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// The block is already in shared buffers.
    Cached,
    /// An advisory read was issued.
    Started,
    /// Neither (no prefetch support on this platform, or the request was not needed).
    NotStarted,
}

impl Relation {
    /// Asks for `block` to be read ahead (`PrefetchBuffer`); no lock, no pin. The result also
    /// tells whether the block is already in shared buffers. `block` must exist.
    pub fn prefetch_block(&self, block: BlockNumber) -> Prefetch {
        if block == page::INVALID_BLOCK_NUMBER {
            // Only a hint: the read that follows reports the bad block.
            return Prefetch::NotStarted;
        }
        // SAFETY: the relation is open; PrefetchBuffer only looks the block up and may issue
        // an advisory read.
        let result = unsafe { pg_sys::PrefetchBuffer(self.raw, self.fork.number(), block) };
        if result.recent_buffer != pg_sys::InvalidBuffer as pg_sys::Buffer {
            Prefetch::Cached
        } else if result.initiated_io {
            Prefetch::Started
        } else {
            Prefetch::NotStarted
        }
    }

    /// Asks the kernel to read ahead the blocks of `first..first + count` that are not in
    /// shared buffers, one advisory read per run of such blocks (`smgrprefetch`; one per block
    /// before PG 17), no pin. A block in shared buffers is skipped: the kernel would read it
    /// from the device again for nothing once the page cache has dropped it (measured: 6 MB
    /// more per ivfflat query, 1.15 of `off`'s time, with Linux's default 128 kB read-ahead).
    /// Every block must exist. Returns whether a read was asked for.
    pub fn prefetch_range(&self, first: BlockNumber, count: u32) -> bool {
        if count == 0 || first.checked_add(count).is_none() {
            return false;
        }
        let mut asked = false;
        let mut run = first;
        for block in first..first + count {
            if self.in_shared_buffers(block) {
                asked |= self.prefetch_run(run, block - run);
                run = block + 1;
            }
        }
        asked | self.prefetch_run(run, first + count - run)
    }

    /// Whether `block` has a buffer in shared buffers (valid or being read), looked up in the
    /// buffer mapping table as `PrefetchBuffer` does, without pinning it. Always false for
    /// relations in local buffers (temporary tables).
    pub(crate) fn in_shared_buffers(&self, block: BlockNumber) -> bool {
        // SAFETY: the relation is open, so rd_rel and its locator are valid; the buffer table
        // is read under its partition's lock in shared mode, as bufmgr.c does, and the lock
        // is released before returning (nothing between can raise an error).
        unsafe {
            let rel = &*self.raw;
            if (*rel.rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_TEMP {
                return false;
            }
            let mut tag = pg_sys::BufferTag::default();
            #[cfg(not(feature = "pg15"))]
            {
                tag.spcOid = rel.rd_locator.spcOid;
                tag.dbOid = rel.rd_locator.dbOid;
                tag.relNumber = rel.rd_locator.relNumber;
            }
            #[cfg(feature = "pg15")]
            {
                tag.rnode = rel.rd_node;
            }
            tag.forkNum = self.fork.number();
            tag.blockNum = block;
            let hash = pg_sys::BufTableHashCode(&mut tag);
            let partition =
                pg_sys::BUFFER_MAPPING_LWLOCK_OFFSET + hash % pg_sys::NUM_BUFFER_PARTITIONS;
            let lock = &raw mut (*pg_sys::MainLWLockArray.add(partition as usize)).lock;
            pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_SHARED);
            let buffer = pg_sys::BufTableLookup(&mut tag, hash);
            pg_sys::LWLockRelease(lock);
            buffer >= 0
        }
    }

    /// One advisory read of blocks `first..first + count` (`smgrprefetch`; one per block
    /// before PG 17).
    fn prefetch_run(&self, first: BlockNumber, count: u32) -> bool {
        if count == 0 {
            return false;
        }
        // SAFETY: the relation is open, so RelationGetSmgr returns its (cached) smgr handle;
        // smgrprefetch only issues posix_fadvise for blocks of existing segments.
        unsafe {
            let smgr = pg_sys::RelationGetSmgr(self.raw);
            #[cfg(any(feature = "pg17", feature = "pg18"))]
            {
                pg_sys::smgrprefetch(smgr, self.fork.number(), first, count as i32)
            }
            #[cfg(not(any(feature = "pg17", feature = "pg18")))]
            {
                let mut asked = false;
                for block in first..first.saturating_add(count) {
                    asked |= pg_sys::smgrprefetch(smgr, self.fork.number(), block);
                }
                asked
            }
        }
    }
}
