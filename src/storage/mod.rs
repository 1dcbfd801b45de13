//! Postgres storage for the index: the one module that calls the buffer manager, page, lock
//! and WAL functions. Everything else reaches pages through the guards defined here.
//!
//! # Guard rules
//!
//! * A [`PageReadGuard`] holds one pinned and locked buffer (share, exclusive or cleanup lock)
//!   and unlocks and unpins it when dropped. Its bytes are read through [`PageRef`].
//! * A [`PageWriteGuard`] changes up to [`MAX_WRITE_PAGES`] exclusively locked pages as one
//!   unit. With [`WriteMode::Wal`] it is one generic WAL record: pages are edited in private
//!   copies, [`PageWriteGuard::commit`] writes the record and installs the copies, and dropping
//!   the guard without committing (an early return, a panic, or a Postgres `ERROR` unwinding
//!   through Rust) discards every change. With [`WriteMode::Build`] pages are edited in place
//!   with no WAL (index build only; log the whole fork afterwards with
//!   [`Relation::log_newpage_range`]) and nothing can be undone.
//! * A guard never outlives the Postgres call that created its [`Relation`], and guards are
//!   dropped before control returns to Postgres. Do not reset the memory context that was
//!   current when a write guard started while it lives.
//! * Never lock the same block twice in one backend (buffer locks are not re-entrant and it
//!   deadlocks): register an already locked page into a write guard instead, and use
//!   [`PageWriteGuard::register_block`], which returns the existing slot for a block that is
//!   already registered.
//! * Lock pages in an order that cannot deadlock with other backends (pgvector's: an element
//!   page before the following neighbor page), and do not wait for anything else, nor check
//!   for interrupts, while holding a buffer lock.
//!
//! The byte layout of pages is in [`page`] (no Postgres calls); what the index stores in them
//! is in `crate::stores::hnsw::format`.

mod buffer;
pub mod io;
pub mod lwlock;
pub use vector_formats::page;
pub mod pinned;
pub mod temp_file;
pub mod toast;

pub use buffer::{
    HeldPages, Image, PageMut, PageReadGuard, PageWriteGuard, ReadMode, WriteMode, MAX_WRITE_PAGES,
};
use page::{read_u16, BLCKSZ};
pub use page::{BlockNumber, ItemPointer, OffsetNumber, PageRef};
use pinned::PinnedPage;

use pgrx::pg_sys;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const _: () = assert!(pg_sys::BLCKSZ as usize == page::BLCKSZ);

/// The `ItemPointerData` Postgres expects for a TID.
pub fn item_pointer_data(tid: ItemPointer) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (tid.block >> 16) as u16,
            bi_lo: tid.block as u16,
        },
        ip_posid: tid.offset,
    }
}

/// Reads a TID handed over by Postgres.
///
/// # Safety
///
/// `tid` points to a valid `ItemPointerData`.
pub unsafe fn item_pointer_from(tid: pg_sys::ItemPointer) -> ItemPointer {
    // SAFETY: per the contract.
    let tid = unsafe { &*tid };
    let block = (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo);
    ItemPointer::new(block, tid.ip_posid)
}

/// Which file of the relation pages are read from and added to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fork {
    /// The relation's data.
    Main,
    /// The initial contents of an unlogged relation (`ambuildempty`).
    Init,
}

impl Fork {
    fn number(self) -> pg_sys::ForkNumber::Type {
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
    raw: pg_sys::Relation,
    fork: Fork,
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
    pub(super) fn check_page_id(&self, block: BlockNumber, page: PageRef<'_>) {
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
    pub(super) fn check_block(&self, block: BlockNumber) {
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

    /// The same relation, working on another fork.
    pub fn with_fork(self, fork: Fork) -> Self {
        Relation { fork, ..self }
    }

    /// Number of blocks in the fork (`RelationGetNumberOfBlocksInFork`).
    pub fn nblocks(&self) -> BlockNumber {
        // SAFETY: the relation is open (from_raw's contract); the call only reads its size.
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(self.raw, self.fork.number()) }
    }

    /// Reads `block` into a buffer and locks it.
    pub fn read_page(&self, block: BlockNumber, mode: ReadMode) -> PageReadGuard {
        PageReadGuard::read(*self, block, mode, std::ptr::null_mut())
    }

    /// [`read_page`](Self::read_page) through a buffer access strategy (for whole-index passes
    /// such as vacuum, so they do not evict the rest of shared buffers).
    pub fn read_page_with(
        &self,
        block: BlockNumber,
        mode: ReadMode,
        strategy: &AccessStrategy,
    ) -> PageReadGuard {
        PageReadGuard::read(*self, block, mode, strategy.raw)
    }

    /// Adds a block at the end of the fork and returns it exclusively locked. The page is all
    /// zeros: initialize it before anything else sees it, normally by registering it in a
    /// write guard with [`Image::Full`] (see [`PageWriteGuard::add_new_page`]).
    pub fn new_page(&self) -> PageReadGuard {
        // SAFETY: the relation is open; extend_locked returns a pinned buffer that is
        // exclusively locked, which is what from_locked takes ownership of.
        unsafe { PageReadGuard::from_locked(extend_locked(*self), ReadMode::Exclusive) }
    }

    /// Adds up to `count` blocks to the end of the fork in one call to the buffer manager; see
    /// [`ExtendedPages`]. It adds fewer when this backend may not pin that many more buffers
    /// (at least one), and none on PostgreSQL 15: callers add the rest later or one at a time.
    pub fn extend_by(&self, count: u32) -> ExtendedPages {
        #[cfg(not(feature = "pg15"))]
        let buffers = {
            let mut buffers = vec![0 as pg_sys::Buffer; count as usize];
            let mut added = 0u32;
            if count > 0 {
                let bmr = buffer_manager_relation(*self);
                // SAFETY: the relation is open (Relation's contract); `buffers` has room for
                // `count`. ExtendBufferedRelBy takes the extension lock itself and returns
                // `added` new buffers pinned, not locked (fewer than asked past the pin limit).
                unsafe {
                    pg_sys::ExtendBufferedRelBy(
                        bmr,
                        self.fork.number(),
                        std::ptr::null_mut(),
                        0,
                        count,
                        buffers.as_mut_ptr(),
                        &mut added,
                    );
                }
            }
            buffers.truncate(added as usize);
            buffers.into_iter().collect()
        };
        #[cfg(feature = "pg15")]
        let buffers = {
            let _ = count;
            std::collections::VecDeque::new()
        };
        ExtendedPages { buffers }
    }

    /// Reads `block`, locks it exclusively and opens a write guard on it (slot 0).
    pub fn write_page(&self, block: BlockNumber, mode: WriteMode) -> PageWriteGuard {
        let mut guard = PageWriteGuard::begin(*self, mode);
        guard.register(self.read_page(block, ReadMode::Exclusive), Image::Delta);
        guard
    }

    /// A write guard with no page registered yet.
    pub fn begin_write(&self, mode: WriteMode) -> PageWriteGuard {
        PageWriteGuard::begin(*self, mode)
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
    /// build does once after writing its pages in [`WriteMode::Build`]. pgvector calls it when
    /// [`needs_wal`](Self::needs_wal) or for the init fork.
    pub fn log_newpage_range(&self) {
        let nblocks = self.nblocks();
        // SAFETY: the relation is open and the range is the whole fork; every page of the index
        // has the standard layout, so page_std = true lets WAL skip the hole.
        unsafe { pg_sys::log_newpage_range(self.raw, self.fork.number(), 0, nblocks, true) }
    }

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
    fn in_shared_buffers(&self, block: BlockNumber) -> bool {
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

    /// Takes a heavyweight lock on page number `block` of the relation (`LockPage`), held until
    /// the returned value is dropped. pgvector uses blocks 0 and 1 as its update and scan locks.
    pub fn lock_page(&self, block: BlockNumber, mode: PageLockMode) -> PageLock {
        // SAFETY: the relation is open; LockPage waits for the lock and raises an ERROR on
        // deadlock, in which case no PageLock exists and nothing is to be released.
        unsafe { pg_sys::LockPage(self.raw, block, mode.lockmode()) };
        PageLock {
            rel: self.raw,
            block,
            mode,
        }
    }

    /// [`lock_page`](Self::lock_page) without waiting: `None` if someone else holds a
    /// conflicting lock.
    pub fn try_lock_page(&self, block: BlockNumber, mode: PageLockMode) -> Option<PageLock> {
        // SAFETY: as for lock_page; ConditionalLockPage never waits.
        let got = unsafe { pg_sys::ConditionalLockPage(self.raw, block, mode.lockmode()) };
        got.then_some(PageLock {
            rel: self.raw,
            block,
            mode,
        })
    }

    /// Reads `block` into a buffer and pins it, without locking it.
    #[inline]
    pub fn pin_page(&self, block: BlockNumber) -> PinnedPage {
        self.pin_page_with(block, None)
    }

    /// [`pin_page`](Self::pin_page) with a buffer access strategy.
    #[inline]
    pub fn pin_page_with(
        &self,
        block: BlockNumber,
        strategy: Option<&AccessStrategy>,
    ) -> PinnedPage {
        self.check_block(block);
        let strategy = strategy.map_or(std::ptr::null_mut(), |s| s.raw);
        // SAFETY: the relation is open (Relation's contract); the strategy is null or live (it
        // is borrowed); if the read fails Postgres raises an ERROR and its resource owner drops
        // any pin taken on the way.
        unsafe {
            let buffer = pg_sys::ReadBufferExtended(
                self.raw,
                self.fork.number(),
                block,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                strategy,
            );
            PinnedPage::from_pinned(*self, buffer, block)
        }
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
fn buffer_manager_relation(rel: Relation) -> pg_sys::BufferManagerRelation {
    pg_sys::BufferManagerRelation {
        rel: rel.raw,
        smgr: std::ptr::null_mut(),
        relpersistence: 0,
    }
}

/// Extends the fork by one block; returns the new buffer pinned and exclusively locked.
///
/// # Safety
///
/// `rel` wraps an open relation.
#[cfg(feature = "pg15")]
unsafe fn extend_locked(rel: Relation) -> pg_sys::Buffer {
    /// Holds the relation extension lock; released on drop, also when unwinding.
    struct ExtensionLock(pg_sys::Relation);
    impl Drop for ExtensionLock {
        fn drop(&mut self) {
            // SAFETY: the lock was taken on this open relation by the code that built self.
            unsafe {
                pg_sys::UnlockRelationForExtension(
                    self.0,
                    pg_sys::ExclusiveLock as pg_sys::LOCKMODE,
                )
            }
        }
    }
    // SAFETY: the relation is open (caller's contract). P_NEW under the extension lock gives a
    // block nobody else can be handed; it is locked before the extension lock is released, as
    // pgvector does.
    unsafe {
        pg_sys::LockRelationForExtension(rel.raw, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        let _extension = ExtensionLock(rel.raw);
        let buffer = pg_sys::ReadBufferExtended(
            rel.raw,
            rel.fork.number(),
            pg_sys::InvalidBlockNumber,
            pg_sys::ReadBufferMode::RBM_NORMAL,
            std::ptr::null_mut(),
        );
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32);
        buffer
    }
}

/// Extends the fork by one block; returns the new buffer pinned and exclusively locked.
///
/// # Safety
///
/// `rel` wraps an open relation.
#[cfg(not(feature = "pg15"))]
unsafe fn extend_locked(rel: Relation) -> pg_sys::Buffer {
    let bmr = buffer_manager_relation(rel);
    // SAFETY: the relation is open (caller's contract). ExtendBufferedRel takes and releases
    // the extension lock itself and, with EB_LOCK_FIRST, returns the buffer exclusively locked.
    unsafe {
        pg_sys::ExtendBufferedRel(
            bmr,
            rel.fork.number(),
            std::ptr::null_mut(),
            pg_sys::ExtendBufferedFlags::EB_LOCK_FIRST,
        )
    }
}

/// New blocks at the end of a fork ([`Relation::extend_by`]), handed out in block order, each
/// pinned until taken. Adding many at once is one call to the buffer manager instead of one
/// per page, and past 8 blocks Postgres reserves the file space instead of writing zeros.
/// While nobody else extends the fork (an index build), they are the blocks that adding pages
/// one at a time would give.
pub struct ExtendedPages {
    buffers: std::collections::VecDeque<pg_sys::Buffer>,
}

impl ExtendedPages {
    /// The next block, locked exclusively.
    pub fn take(&mut self) -> Option<PageReadGuard> {
        let buffer = self.buffers.pop_front()?;
        // SAFETY: extend_by pinned the buffer once and did not lock it; the pin moves to the
        // guard, and this set forgets it.
        Some(unsafe { PageReadGuard::lock_pinned(buffer) })
    }

    /// Blocks not taken yet.
    pub fn len(&self) -> usize {
        self.buffers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }
}

impl Drop for ExtendedPages {
    fn drop(&mut self) {
        for &buffer in &self.buffers {
            // SAFETY: each buffer left holds one pin of ours, taken by extend_by.
            unsafe { pg_sys::ReleaseBuffer(buffer) };
        }
    }
}

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

/// The vacuum callback that tells which heap TIDs are dead.
pub struct DeadTids {
    callback: pg_sys::IndexBulkDeleteCallback,
    state: *mut std::ffi::c_void,
}

impl DeadTids {
    /// # Safety
    ///
    /// `callback` and `state` are what Postgres passed to `ambulkdelete`, used only during it.
    pub unsafe fn new(
        callback: pg_sys::IndexBulkDeleteCallback,
        state: *mut std::ffi::c_void,
    ) -> Self {
        DeadTids { callback, state }
    }

    pub fn is_dead(&self, tid: ItemPointer) -> bool {
        let Some(callback) = self.callback else {
            return false;
        };
        let mut data = item_pointer_data(tid);
        // SAFETY: the callback and its state come from ambulkdelete (new's contract); it only
        // reads the TID.
        unsafe { callback(&raw mut data, self.state) }
    }
}

/// `vacuum_delay_point`: vacuum's cost-based sleep, and a chance to be cancelled. Call it
/// between pages, with no buffer locked.
pub fn vacuum_delay_point() {
    // SAFETY: the caller holds no buffer lock; the call may sleep or raise a cancel ERROR.
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::vacuum_delay_point();
        #[cfg(not(feature = "pg15"))]
        pg_sys::vacuum_delay_point(false);
    }
}

/// Mode of a heavyweight page lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageLockMode {
    /// `ShareLock`: conflicts only with exclusive holders.
    Share,
    /// `ExclusiveLock`.
    Exclusive,
}

impl PageLockMode {
    fn lockmode(self) -> pg_sys::LOCKMODE {
        match self {
            PageLockMode::Share => pg_sys::ShareLock as pg_sys::LOCKMODE,
            PageLockMode::Exclusive => pg_sys::ExclusiveLock as pg_sys::LOCKMODE,
        }
    }
}

/// A heavyweight page lock (`LockPage`), released on drop.
#[must_use = "the lock is released as soon as this is dropped"]
pub struct PageLock {
    rel: pg_sys::Relation,
    block: BlockNumber,
    mode: PageLockMode,
}

impl PageLock {
    pub fn block(&self) -> BlockNumber {
        self.block
    }

    pub fn mode(&self) -> PageLockMode {
        self.mode
    }
}

impl Drop for PageLock {
    fn drop(&mut self) {
        // SAFETY: this lock was taken by lock_page/try_lock_page on a relation that is still
        // open (Relation's contract) and has not been released since.
        unsafe { pg_sys::UnlockPage(self.rel, self.block, self.mode.lockmode()) }
    }
}

/// A buffer access strategy (a small ring of buffers) for reads that sweep the whole index.
pub struct AccessStrategy {
    raw: pg_sys::BufferAccessStrategy,
}

impl AccessStrategy {
    /// `GetAccessStrategy(BAS_BULKREAD)`, as pgvector's vacuum uses.
    pub fn bulk_read() -> Self {
        let kind = pg_sys::BufferAccessStrategyType::BAS_BULKREAD;
        // SAFETY: allocates a strategy in the current memory context; it is freed on drop.
        let raw = unsafe { pg_sys::GetAccessStrategy(kind) };
        AccessStrategy { raw }
    }
}

impl AccessStrategy {
    /// For a strategy whose memory a transaction abort has freed already.
    pub fn forget(self) {
        std::mem::forget(self)
    }
}

impl Drop for AccessStrategy {
    fn drop(&mut self) {
        // SAFETY: raw came from GetAccessStrategy and is freed only here.
        unsafe { pg_sys::FreeAccessStrategy(self.raw) }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::page::{BLCKSZ, FIRST_OFFSET_NUMBER};
    use super::*;
    use pgrx::prelude::*;

    /// Opens table `name` for the length of `f`.
    fn with_table<R>(name: &str, f: impl FnOnce(Relation) -> R) -> R {
        let oid = Spi::get_one::<pg_sys::Oid>(&format!("select '{name}'::regclass::oid"))
            .unwrap()
            .unwrap();
        // SAFETY: the table exists; it stays open (and locked) until relation_close below.
        let raw = unsafe { pg_sys::relation_open(oid, pg_sys::AccessExclusiveLock as i32) };
        // SAFETY: raw is open until relation_close, after f returns.
        let rel = unsafe { Relation::from_raw(raw, Fork::Main) };
        let result = f(rel);
        // SAFETY: opened above, closed once.
        unsafe { pg_sys::relation_close(raw, pg_sys::AccessExclusiveLock as i32) };
        result
    }

    /// A new block, initialized with an 8-byte special space, committed through WAL.
    fn add_page(rel: Relation) -> BlockNumber {
        let mut w = rel.begin_write(WriteMode::Wal);
        let slot = w.add_new_page(8);
        w.page_mut(slot)
            .special_mut()
            .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let block = w.block(slot);
        w.commit();
        block
    }

    #[pg_test]
    fn write_commit_and_read_back() {
        Spi::run("create table st1(i int)").unwrap();
        with_table("st1", |rel| {
            assert_eq!(rel.nblocks(), 0);
            assert!(rel.needs_wal());
            let block = add_page(rel);
            assert_eq!(block, 0);
            assert_eq!(rel.nblocks(), 1);

            let mut w = rel.write_page(block, WriteMode::Wal);
            let mut p = w.page_mut(0);
            assert_eq!(p.add_item(&[7u8; 24]), Some(FIRST_OFFSET_NUMBER));
            assert_eq!(p.add_item(&[8u8; 16]), Some(2));
            assert!(p.overwrite_item(1, &[9u8; 24]));
            assert!(!p.overwrite_item(5, &[9u8; 24]));
            p.item_mut(2).unwrap()[0] = 42;
            w.commit();

            let r = rel.read_page(block, ReadMode::Shared);
            let page = r.page();
            assert_eq!(page.max_offset(), 2);
            assert_eq!(page.item(1), Some(&[9u8; 24][..]));
            assert_eq!(page.item(2).unwrap()[0], 42);
            assert_eq!(page.special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
            assert_eq!(page.free_space(), BLCKSZ - 24 - 8 - 8 - 24 - 16 - 4);
            assert_ne!(page.header().lsn, 0, "the change was WAL-logged");
            drop(r);
            assert_eq!(rel.prefetch_block(block), Prefetch::Cached);
        });
    }

    #[pg_test]
    #[cfg(feature = "pg18")]
    fn range_hints_look_blocks_up_in_shared_buffers() {
        Spi::run("create table st_lookup(i int)").unwrap();
        with_table("st_lookup", |rel| {
            let blocks: Vec<BlockNumber> = (0..3).map(|_| add_page(rel)).collect();
            for &block in &blocks {
                assert!(
                    rel.in_shared_buffers(block),
                    "block {block} was just written"
                );
            }
            assert!(!rel.in_shared_buffers(3), "past the end: never read");
            let (mut evicted, mut flushed, mut skipped) = (0, 0, 0);
            // SAFETY: the relation is open and none of its buffers is pinned here.
            unsafe {
                pg_sys::EvictRelUnpinnedBuffers(rel.raw, &mut evicted, &mut flushed, &mut skipped)
            };
            assert_eq!((evicted, skipped), (3, 0));
            for &block in &blocks {
                assert!(!rel.in_shared_buffers(block), "block {block} was evicted");
            }
            drop(rel.read_page(blocks[1], ReadMode::Shared));
            let found: Vec<bool> = blocks.iter().map(|&b| rel.in_shared_buffers(b)).collect();
            assert_eq!(found, [false, true, false]);
            // Blocks 0 and 2 are hinted (two runs), block 1 is skipped.
            assert!(rel.prefetch_range(0, 3));
            assert_eq!(rel.prefetch_block(blocks[1]), Prefetch::Cached);
        });
    }

    #[pg_test]
    fn dropped_write_guard_discards_changes() {
        Spi::run("create table st2(i int)").unwrap();
        with_table("st2", |rel| {
            let block = add_page(rel);
            let before = rel
                .read_page(block, ReadMode::Shared)
                .page()
                .bytes()
                .to_vec();
            {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[1u8; 100]).unwrap();
                w.page_mut(0).special_mut().fill(0);
            }
            // A Rust panic and a Postgres ERROR unwinding through the guard.
            PgTryBuilder::new(|| {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[2u8; 100]).unwrap();
                panic!("boom");
            })
            .catch_others(|_| ())
            .execute();
            PgTryBuilder::new(|| {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[3u8; 100]).unwrap();
                // SAFETY: a valid C string; Postgres raises an ERROR for it, which pgrx turns
                // into a panic that unwinds through the guard.
                unsafe { pg_sys::pg_strtoint32(c"not a number".as_ptr()) };
            })
            .catch_others(|_| ())
            .execute();
            // Each guard released its lock (or this would wait forever) and changed nothing.
            let w = rel.write_page(block, WriteMode::Wal);
            assert_eq!(w.page(0).bytes(), &before[..]);
            w.abort();
        });
    }

    #[pg_test]
    fn multi_page_record_and_kept_buffers() {
        Spi::run("create table st3(i int)").unwrap();
        with_table("st3", |rel| {
            let a = add_page(rel);
            let b = add_page(rel);
            let mut w = rel.write_page(a, WriteMode::Wal);
            let sb = w.register_block(b);
            assert_eq!(w.register_block(a), 0, "same block, same slot");
            let sc = w.add_new_page(8);
            assert_eq!(w.len(), 3);
            let c = w.block(sc);
            assert_eq!(c, 2);
            w.page_mut(0).add_item(&[1u8; 8]).unwrap();
            w.page_mut(sb).add_item(&[2u8; 8]).unwrap();
            w.page_mut(sc).add_item(&[3u8; 8]).unwrap();
            let mut held = w.commit();
            // Keep page a locked for a second record; b and c are released with `held`.
            let kept = held.take(0).unwrap();
            drop(held);
            let mut w = rel.begin_write(WriteMode::Wal);
            let s = w.register(kept, Image::Delta);
            w.page_mut(s).add_item(&[4u8; 8]).unwrap();
            w.commit();

            for (block, items) in [(a, vec![1u8, 4]), (b, vec![2]), (c, vec![3])] {
                let r = rel.read_page(block, ReadMode::Shared);
                let got: Vec<u8> = r.page().items().map(|(_, bytes)| bytes[0]).collect();
                assert_eq!(got, items);
            }
        });
    }

    #[pg_test]
    fn build_mode_and_log_newpage_range() {
        Spi::run("create table st4(i int)").unwrap();
        with_table("st4", |rel| {
            let mut w = rel.begin_write(WriteMode::Build);
            let s = w.add_new_page(8);
            w.page_mut(s).add_item(&[5u8; 40]).unwrap();
            w.commit();
            let new = rel.new_page();
            assert_eq!(new.block(), 1);
            assert!(new.page().is_new());
            let mut w = rel.begin_write(WriteMode::Build);
            let s = w.register(new, Image::Full);
            w.page_mut(s).init(8);
            w.commit();
            assert_eq!(
                rel.read_page(0, ReadMode::Shared).page().header().lsn,
                0,
                "build mode writes no WAL"
            );
            rel.log_newpage_range();
            let r = rel.read_page(0, ReadMode::Shared);
            assert_ne!(r.page().header().lsn, 0);
            assert_eq!(r.page().item(1), Some(&[5u8; 40][..]));
            drop(r);
            let r = rel.read_page(1, ReadMode::Cleanup);
            assert_eq!(r.page().max_offset(), 0);
        });
    }

    /// Rebuilds the pages of an index built by pgvector through the guards (so with
    /// Postgres's `PageInit` and `PageAddItem`, and in WAL mode) and compares the bytes.
    #[pg_test]
    fn guards_reproduce_pgvector_pages() {
        let pages = page::fixture_pages(include_str!(
            "../../tests/fixtures/pgvector-hnsw/t1_idx.pages"
        ));
        Spi::run("create table st6(i int)").unwrap();
        with_table("st6", |rel| {
            for (blkno, original) in pages.iter().enumerate() {
                let original = PageRef::new(original);
                let mut w = rel.begin_write(WriteMode::Wal);
                let slot = w.add_new_page(original.special().len());
                assert_eq!(w.block(slot) as usize, blkno);
                let mut p = w.page_mut(slot);
                p.special_mut().copy_from_slice(original.special());
                if blkno == 0 {
                    let contents = original.contents();
                    let lower = original.header().lower;
                    p.contents_mut().copy_from_slice(contents);
                    p.set_lower(lower);
                } else {
                    for (offset, item) in original.items() {
                        assert_eq!(p.add_item(item), Some(offset));
                    }
                }
                w.commit();
                let r = rel.read_page(blkno as BlockNumber, ReadMode::Shared);
                // Everything but the LSN and checksum, which the server sets.
                assert_eq!(
                    r.page().bytes()[10..],
                    original.bytes()[10..],
                    "block {blkno}"
                );
            }
            // Overwriting an item with itself changes nothing.
            let mut w = rel.write_page(1, WriteMode::Wal);
            let item = w.page(0).item(1).unwrap().to_vec();
            assert!(w.page_mut(0).overwrite_item(1, &item));
            w.commit();
            let r = rel.read_page(1, ReadMode::Shared);
            assert_eq!(r.page().bytes()[10..], pages[1][10..]);
        });
    }

    #[pg_test]
    fn block_ranges_stream_in_order() {
        Spi::run("create table st6(i int)").unwrap();
        with_table("st6", |rel| {
            for _ in 0..40 {
                add_page(rel);
            }
            let mut blocks = io::RelationBlocks::new(rel, false);
            for strategy in [vector_io::Strategy::BulkRead, vector_io::Strategy::Normal] {
                let read: Vec<BlockNumber> = vector_io::read_range(&mut blocks, 3..37, strategy)
                    .map(|page| {
                        let block = page.block();
                        let guard = page.lock(ReadMode::Shared);
                        assert_eq!(guard.page().special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
                        block
                    })
                    .collect();
                assert_eq!(read, (3..37).collect::<Vec<_>>());
                // Left early and empty: the stream releases what it holds.
                let mut range = vector_io::read_range(&mut blocks, 0..40, strategy);
                assert_eq!(range.next().map(|p| p.block()), Some(0));
                drop(range);
                assert_eq!(
                    vector_io::read_range(&mut blocks, 5..5, strategy).count(),
                    0
                );
            }
            // Every pin was released: the table can be dropped... after the relation is closed;
            // a page can be locked exclusively now.
            let w = rel.write_page(36, WriteMode::Wal);
            w.abort();
        });
    }

    #[pg_test]
    fn page_locks_and_strategy() {
        Spi::run("create table st5(i int)").unwrap();
        with_table("st5", |rel| {
            add_page(rel);
            let shared = rel.lock_page(0, PageLockMode::Share);
            let again = rel.try_lock_page(0, PageLockMode::Share);
            assert!(again.is_some());
            drop((shared, again));
            let exclusive = rel.lock_page(1, PageLockMode::Exclusive);
            assert_eq!(exclusive.block(), 1);
            drop(exclusive);
            let strategy = AccessStrategy::bulk_read();
            let r = rel.read_page_with(0, ReadMode::Shared, &strategy);
            assert_eq!(r.page().special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
        });
    }
}
