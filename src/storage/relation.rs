//! An open relation and the fork to work on: a plain handle to which the other modules of
//! `storage` add their operations (reads and writes in `buffer`, pins in `pinned`, hints in
//! `prefetch`, page locks in `page_lock`). A block read is checked against the relation's size
//! and, for an index, its page id.

use pgrx::pg_sys;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use vector_formats::page::{self, read_u16, BlockNumber, PageRef, BLCKSZ};

/// Which file of the relation pages are read from and added to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fork {
    /// The relation's data.
    Main,
    /// The initial contents of an unlogged relation (`ambuildempty`).
    Init,
}

impl Fork {
    pub(crate) fn number(self) -> pg_sys::ForkNumber::Type {
        match self {
            Fork::Main => pg_sys::ForkNumber::MAIN_FORKNUM,
            Fork::Init => pg_sys::ForkNumber::INIT_FORKNUM,
        }
    }
}

/// The sizes last read of the last few relation files read (a join may read several indexes
/// in turn). A block below one exists: an index only grows while it is open, and a size gone
/// stale by a truncation only skips the check (the read then raises Postgres's own error).
/// Each entry is two words: the relation's OID and file number, then its fork and size.
/// Atomics with relaxed order cost plain loads here (a thread-local costs a call in a shared
/// library, on every page read); a backend is one thread, so no entry is torn in practice, and
/// a torn one would only cost a size lookup or a generic read error.
static KNOWN_SIZES: [[AtomicU64; 2]; 4] = [const { [const { AtomicU64::new(0) }; 2] }; 4];
static KNOWN_SIZES_NEXT: AtomicUsize = AtomicUsize::new(0);

fn size_words(key: (pg_sys::Oid, pg_sys::Oid, i32), blocks: BlockNumber) -> (u64, u64) {
    let file = (u64::from(key.0.to_u32()) << 32) | u64::from(key.1.to_u32());
    let fork = ((key.2 as u32 as u64) << 32) | u64::from(blocks);
    (file, fork)
}

fn known_size(key: (pg_sys::Oid, pg_sys::Oid, i32)) -> BlockNumber {
    let (file, fork) = size_words(key, 0);
    for [f, s] in &KNOWN_SIZES {
        let size = s.load(Ordering::Relaxed);
        if f.load(Ordering::Relaxed) == file && size >> 32 == fork >> 32 {
            return size as u32;
        }
    }
    0
}

fn remember_size(key: (pg_sys::Oid, pg_sys::Oid, i32), blocks: BlockNumber) {
    let (file, size) = size_words(key, blocks);
    let slot = KNOWN_SIZES
        .iter()
        .position(|[f, s]| {
            f.load(Ordering::Relaxed) == file && s.load(Ordering::Relaxed) >> 32 == size >> 32
        })
        .unwrap_or_else(|| KNOWN_SIZES_NEXT.fetch_add(1, Ordering::Relaxed) % KNOWN_SIZES.len());
    KNOWN_SIZES[slot][0].store(file, Ordering::Relaxed);
    KNOWN_SIZES[slot][1].store(size, Ordering::Relaxed);
}

/// An open relation (an index, for us) and the fork to work on.
///
/// It is a plain handle: it neither opens nor closes the relation.
#[derive(Clone, Copy, Debug)]
pub struct Relation {
    pub(crate) raw: pg_sys::Relation,
    pub(crate) fork: Fork,
    /// The page id every page read from this relation must carry ([`Relation::with_page_id`]).
    page_id: Option<u16>,
}

impl Relation {
    /// Wraps a relation handed over by Postgres.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid, open relation, locked as the caller's Postgres API requires,
    /// for as long as this value, its copies, and every guard made from them are in use.
    pub unsafe fn from_raw(raw: pg_sys::Relation, fork: Fork) -> Self {
        assert!(!raw.is_null(), "null relation");
        Relation {
            raw,
            fork,
            page_id: None,
        }
    }

    /// The same relation, whose pages all carry `id` in the last two bytes of their special
    /// space (an access method's page id, as pgvector writes it): every page read and locked
    /// through it is checked before anything decodes it, and a page without it raises
    /// `ERRCODE_INDEX_CORRUPTED` naming the index and the block. Pages being added are not
    /// checked (they are initialized after).
    pub fn with_page_id(self, id: u16) -> Self {
        Relation {
            page_id: Some(id),
            ..self
        }
    }

    /// Raises the error of [`Relation::with_page_id`] if `page` (just locked) is not one of
    /// this relation's pages.
    #[inline]
    pub(crate) fn check_page_id(&self, block: BlockNumber, page: PageRef<'_>) {
        let Some(expected) = self.page_id else {
            return;
        };
        // A page with a special space ends with it (PageInit), so its last two bytes are the
        // page id: two reads on the hot path, the careful decoding only for a mismatch.
        let bytes = page.bytes();
        let special = usize::from(read_u16(bytes, 16));
        if special < BLCKSZ - 1 && read_u16(bytes, BLCKSZ - 2) == expected {
            return;
        }
        self.page_id_error(block, page)
    }

    /// Refuses to read a block past the end of the relation, `InvalidBlockNumber` included
    /// (which `ReadBuffer` takes as "extend the relation"): a block number that reaches a read
    /// came from a page, and a corrupted one must raise an error naming the index, and never
    /// grow it (not even during a SELECT). The size is looked up (a system call) only for a
    /// block at or past the size last seen.
    #[inline]
    pub(crate) fn check_block(&self, block: BlockNumber) {
        if block >= known_size(self.size_key()) {
            self.check_block_against_size(block)
        }
    }

    /// Which relation file a cached size belongs to: its OID, its file number (a TRUNCATE or
    /// REINDEX gives it a new one) and the fork.
    fn size_key(&self) -> (pg_sys::Oid, pg_sys::Oid, i32) {
        // SAFETY: the relation is open (from_raw's contract); only plain fields are read.
        unsafe {
            (
                (*self.raw).rd_id,
                (*(*self.raw).rd_rel).relfilenode,
                self.fork.number(),
            )
        }
    }

    #[cold]
    fn check_block_against_size(&self, block: BlockNumber) {
        if block != page::INVALID_BLOCK_NUMBER {
            // The relation may have grown since the size was read.
            let blocks = self.nblocks();
            remember_size(self.size_key(), blocks);
            if block < blocks {
                return;
            }
        }
        self.invalid_block_error(block)
    }

    #[cold]
    fn invalid_block_error(&self, block: BlockNumber) -> ! {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!(
                "index \"{}\" links to block {block} past its end",
                self.name()
            )
        );
    }

    #[cold]
    fn page_id_error(&self, block: BlockNumber, page: PageRef<'_>) -> ! {
        let message = if page.header().upper == 0 {
            format!(
                "index \"{}\" contains unexpected zero page at block {block}",
                self.name()
            )
        } else {
            format!(
                "index \"{}\" contains corrupted page at block {block}",
                self.name()
            )
        };
        pg_sys::panic::ErrorReport::new(
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            message,
            "check_page_id",
        )
        .set_hint("Please REINDEX it.")
        .report(pgrx::PgLogLevel::ERROR);
        unreachable!("an ERROR does not return");
    }

    /// The relation's name (for messages).
    pub fn name(&self) -> String {
        // SAFETY: the relation is open (Relation's contract), so rd_rel points to its pg_class
        // row whose relname is a NUL-terminated NameData.
        unsafe {
            let name = &(*(*self.raw).rd_rel).relname;
            std::ffi::CStr::from_ptr(name.data.as_ptr())
                .to_string_lossy()
                .into_owned()
        }
    }

    pub fn raw(&self) -> pg_sys::Relation {
        self.raw
    }

    pub fn fork(&self) -> Fork {
        self.fork
    }

    /// Number of blocks in the fork (`RelationGetNumberOfBlocksInFork`).
    pub fn nblocks(&self) -> BlockNumber {
        // SAFETY: the relation is open (from_raw's contract); the call only reads its size.
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(self.raw, self.fork.number()) }
    }

    /// `RelationNeedsWAL`: changes to this relation must be WAL-logged (it is permanent, and
    /// either WAL is archived/replicated or the relation was not created in this transaction).
    pub fn needs_wal(&self) -> bool {
        // SAFETY: the relation is open, so rd_rel points to its pg_class row; wal_level is a
        // plain integer GUC read by value.
        unsafe {
            let rel = &*self.raw;
            let permanent = (*rel.rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_PERMANENT;
            let xlog_needed = pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32;
            permanent && (xlog_needed || (rel.rd_createSubid == 0 && first_storage_subid(rel) == 0))
        }
    }

    /// WAL-logs a full image of every block of the fork (`log_newpage_range`), as an index
    /// build does once after writing its pages in `WriteMode::Build`. pgvector calls it when
    /// [`needs_wal`](Self::needs_wal) or for the init fork.
    pub fn log_newpage_range(&self) {
        let nblocks = self.nblocks();
        // SAFETY: the relation is open and the range is the whole fork; every page of the index
        // has the standard layout, so page_std = true lets WAL skip the hole.
        unsafe { pg_sys::log_newpage_range(self.raw, self.fork.number(), 0, nblocks, true) }
    }

    /// The largest read, in blocks, worth asking the device for at once (`io_combine_limit`
    /// on PG 17+; 128 kB before, its default there).
    pub fn combine_limit() -> u32 {
        #[cfg(any(feature = "pg17", feature = "pg18"))]
        // SAFETY: a plain integer GUC read by value in the backend's own thread.
        let limit = unsafe { pg_sys::io_combine_limit };
        #[cfg(not(any(feature = "pg17", feature = "pg18")))]
        let limit = 16;
        u32::try_from(limit).unwrap_or(1).max(1)
    }
}

#[cfg(feature = "pg15")]
fn first_storage_subid(rel: &pg_sys::RelationData) -> pg_sys::SubTransactionId {
    rel.rd_firstRelfilenodeSubid
}

#[cfg(not(feature = "pg15"))]
fn first_storage_subid(rel: &pg_sys::RelationData) -> pg_sys::SubTransactionId {
    rel.rd_firstRelfilelocatorSubid
}

/// The buffer manager's handle of an open relation (its smgr and persistence looked up).
#[cfg(not(feature = "pg15"))]
pub(crate) fn buffer_manager_relation(rel: Relation) -> pg_sys::BufferManagerRelation {
    pg_sys::BufferManagerRelation {
        rel: rel.raw,
        smgr: std::ptr::null_mut(),
        relpersistence: 0,
    }
}
