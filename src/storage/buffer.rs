//! Buffer guards: a locked page ([`PageReadGuard`]) and a unit of page changes
//! ([`PageWriteGuard`]). The rules are in the module documentation of [`crate::storage`].

#[cfg(not(feature = "pg15"))]
use crate::storage::relation::buffer_manager_relation;
use crate::storage::relation::Relation;
use crate::storage::strategy::AccessStrategy;
use pgrx::pg_sys;
use std::marker::PhantomData;
use vector_formats::page::{
    self, BlockNumber, OffsetNumber, PageRef, BLCKSZ, INVALID_OFFSET_NUMBER,
};

/// Pages one [`PageWriteGuard`] can change together (`MAX_GENERIC_XLOG_PAGES`).
pub const MAX_WRITE_PAGES: usize = 4;

const _: () = assert!(pg_sys::MAX_GENERIC_XLOG_PAGES as usize == MAX_WRITE_PAGES);

/// How a page is locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// Share lock: read only; other readers proceed.
    Shared,
    /// Exclusive lock: needed to change the page (through a [`PageWriteGuard`]).
    Exclusive,
    /// Exclusive lock taken once no other backend holds a pin on the buffer
    /// (`LockBufferForCleanup`), for removing items others may still point into.
    Cleanup,
}

/// How a [`PageWriteGuard`] applies its changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// One generic WAL record (`GenericXLog*`); changes are all-or-nothing.
    Wal,
    /// In place, no WAL, no undo: for index builds, which WAL-log every page once at the end
    /// ([`Relation::log_newpage_range`]) and whose relation is dropped if they fail.
    Build,
}

/// How a page registered in a [`PageWriteGuard`] is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// The difference between the old and new page.
    Delta,
    /// The whole new page (`GENERIC_XLOG_FULL_IMAGE`): for pages being initialized.
    Full,
}

/// One pinned and locked buffer. Unlocks and unpins on drop.
pub struct PageReadGuard {
    buffer: pg_sys::Buffer,
    block: BlockNumber,
    /// `None` while only pinned (during construction).
    locked: Option<ReadMode>,
}

impl PageReadGuard {
    pub(super) fn read(
        rel: Relation,
        block: BlockNumber,
        mode: ReadMode,
        strategy: pg_sys::BufferAccessStrategy,
    ) -> Self {
        rel.check_block(block);
        // SAFETY: the relation is open (Relation's contract) and strategy is null or a live
        // strategy borrowed from the caller. If the read fails, Postgres raises an ERROR and
        // its resource owner drops any pin taken on the way.
        let buffer = unsafe {
            pg_sys::ReadBufferExtended(
                rel.raw,
                rel.fork.number(),
                block,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                strategy,
            )
        };
        // From here on, the pin is owned by the guard and released if locking fails.
        let mut guard = PageReadGuard {
            buffer,
            block,
            locked: None,
        };
        guard.lock(mode);
        rel.check_page_id(block, guard.page());
        guard
    }

    /// Takes ownership of a buffer this backend has pinned once and locked in `mode`.
    ///
    /// # Safety
    ///
    /// `buffer` is valid, pinned by this backend and locked in `mode`, and nothing else will
    /// unlock or unpin it.
    pub(super) unsafe fn from_locked(buffer: pg_sys::Buffer, mode: ReadMode) -> Self {
        // SAFETY: the buffer is valid and pinned (caller's contract).
        let block = unsafe { pg_sys::BufferGetBlockNumber(buffer) };
        // SAFETY: the caller's contract, and `block` is the buffer's.
        unsafe { Self::from_locked_block(buffer, block, mode) }
    }

    /// Takes ownership of a buffer this backend has pinned once and not locked, and locks it
    /// exclusively.
    ///
    /// # Safety
    ///
    /// `buffer` is valid, pinned by this backend and not locked by it, and nothing else will
    /// unpin it.
    pub(super) unsafe fn lock_pinned(buffer: pg_sys::Buffer) -> Self {
        // SAFETY: the buffer is valid and pinned (caller's contract).
        let block = unsafe { pg_sys::BufferGetBlockNumber(buffer) };
        // From here on, the pin is owned by the guard and released if locking fails.
        let mut guard = PageReadGuard {
            buffer,
            block,
            locked: None,
        };
        guard.lock(ReadMode::Exclusive);
        guard
    }

    /// [`PageReadGuard::from_locked`] for a buffer known to hold `block`.
    ///
    /// # Safety
    ///
    /// As for [`PageReadGuard::from_locked`], and the buffer holds `block`.
    pub(super) unsafe fn from_locked_block(
        buffer: pg_sys::Buffer,
        block: BlockNumber,
        mode: ReadMode,
    ) -> Self {
        PageReadGuard {
            buffer,
            block,
            locked: Some(mode),
        }
    }

    fn lock(&mut self, mode: ReadMode) {
        // SAFETY: the buffer is pinned by this guard and not locked by this backend.
        unsafe {
            match mode {
                ReadMode::Shared => {
                    pg_sys::LockBuffer(self.buffer, pg_sys::BUFFER_LOCK_SHARE as i32)
                }
                ReadMode::Exclusive => {
                    pg_sys::LockBuffer(self.buffer, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32)
                }
                ReadMode::Cleanup => pg_sys::LockBufferForCleanup(self.buffer),
            }
        }
        self.locked = Some(mode);
    }

    pub fn block(&self) -> BlockNumber {
        self.block
    }

    pub fn mode(&self) -> ReadMode {
        self.locked.expect("a guard handed out is locked")
    }

    /// The page as it is in the buffer.
    pub fn page(&self) -> PageRef<'_> {
        // SAFETY: the buffer is pinned, so its block stays mapped, and locked, so no other
        // backend changes it while this borrow lives (a write guard owning this guard would
        // hand out its own view instead).
        let bytes = unsafe { page_bytes(pg_sys::BufferGetPage(self.buffer)) };
        PageRef::new(bytes)
    }

    fn page_ptr(&self) -> pg_sys::Page {
        // SAFETY: the buffer is pinned by this guard.
        unsafe { pg_sys::BufferGetPage(self.buffer) }
    }
}

impl Drop for PageReadGuard {
    fn drop(&mut self) {
        // SAFETY: the guard owns one pin and, if `locked`, one content lock on the buffer.
        unsafe {
            if self.locked.is_some() {
                pg_sys::UnlockReleaseBuffer(self.buffer);
            } else {
                pg_sys::ReleaseBuffer(self.buffer);
            }
        }
    }
}

/// # Safety
///
/// `page` points to `BLCKSZ` readable bytes that stay valid and unchanged for `'a`.
unsafe fn page_bytes<'a>(page: pg_sys::Page) -> &'a [u8] {
    // SAFETY: per the function's contract.
    unsafe { std::slice::from_raw_parts(page as *const u8, BLCKSZ) }
}

/// A page registered in a write guard.
struct Registered {
    guard: PageReadGuard,
    /// What the caller edits: GenericXLog's copy, or the buffer itself in build mode.
    image: pg_sys::Page,
    /// Build mode: the buffer has been marked dirty.
    dirty: bool,
}

/// A set of exclusively locked pages changed as one unit; see the module documentation of
/// [`crate::storage`]. Pages are addressed by the slot number [`register`](Self::register)
/// returned (0 for the page [`Relation::write_page`] opened).
pub struct PageWriteGuard {
    rel: Relation,
    mode: WriteMode,
    /// The open generic WAL record (null in build mode and once committed or aborted).
    state: *mut pg_sys::GenericXLogState,
    pages: Vec<Registered>,
}

impl PageWriteGuard {
    pub(super) fn begin(rel: Relation, mode: WriteMode) -> Self {
        let state = match mode {
            // SAFETY: the relation is open; the state is allocated in the current memory
            // context and freed by GenericXLogFinish or GenericXLogAbort.
            WriteMode::Wal => unsafe { pg_sys::GenericXLogStart(rel.raw) },
            WriteMode::Build => std::ptr::null_mut(),
        };
        PageWriteGuard {
            rel,
            mode,
            state,
            pages: Vec::with_capacity(MAX_WRITE_PAGES),
        }
    }

    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    /// Number of registered pages.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Block number of the page in `slot`.
    pub fn block(&self, slot: usize) -> BlockNumber {
        self.pages[slot].guard.block()
    }

    /// The slot holding `block`, if it is registered.
    pub fn slot_of(&self, block: BlockNumber) -> Option<usize> {
        self.pages.iter().position(|p| p.guard.block() == block)
    }

    /// Adds an exclusively locked page; returns its slot. Panics if the guard is not
    /// exclusively locked or [`MAX_WRITE_PAGES`] are already registered.
    pub fn register(&mut self, guard: PageReadGuard, image: Image) -> usize {
        assert!(
            matches!(guard.mode(), ReadMode::Exclusive | ReadMode::Cleanup),
            "only exclusively locked pages can be changed"
        );
        assert!(
            self.pages.len() < MAX_WRITE_PAGES,
            "at most {MAX_WRITE_PAGES} pages per write"
        );
        assert!(
            self.slot_of(guard.block()).is_none(),
            "block {} registered twice",
            guard.block()
        );
        let image = match self.mode {
            WriteMode::Wal => {
                assert!(!self.state.is_null(), "write guard already finished");
                let flags = match image {
                    Image::Delta => 0,
                    Image::Full => pg_sys::GENERIC_XLOG_FULL_IMAGE as i32,
                };
                // SAFETY: state is an open record of this relation; the buffer is pinned and
                // exclusively locked by `guard`, which the record keeps until it is finished.
                unsafe { pg_sys::GenericXLogRegisterBuffer(self.state, guard.buffer, flags) }
            }
            WriteMode::Build => guard.page_ptr(),
        };
        self.pages.push(Registered {
            guard,
            image,
            dirty: false,
        });
        self.pages.len() - 1
    }

    /// Registers `block` (reading and locking it exclusively), or returns its slot if it is
    /// already registered.
    pub fn register_block(&mut self, block: BlockNumber) -> usize {
        if let Some(slot) = self.slot_of(block) {
            return slot;
        }
        let guard = self.rel.read_page(block, ReadMode::Exclusive);
        self.register(guard, Image::Delta)
    }

    /// Extends the relation by one block, registers it as a full image and initializes it
    /// with `special_size` bytes of special space (`PageInit`); returns its slot.
    pub fn add_new_page(&mut self, special_size: usize) -> usize {
        assert!(
            self.pages.len() < MAX_WRITE_PAGES,
            "at most {MAX_WRITE_PAGES} pages per write"
        );
        let guard = self.rel.new_page();
        let slot = self.register(guard, Image::Full);
        self.page_mut(slot).init(special_size);
        slot
    }

    /// [`PageWriteGuard::add_new_page`] with a page the caller added to the fork already
    /// (from [`ExtendedPages`]).
    pub fn add_extended_page(&mut self, guard: PageReadGuard, special_size: usize) -> usize {
        assert!(
            self.pages.len() < MAX_WRITE_PAGES,
            "at most {MAX_WRITE_PAGES} pages per write"
        );
        let slot = self.register(guard, Image::Full);
        self.page_mut(slot).init(special_size);
        slot
    }

    /// The page in `slot`, with the changes made so far.
    pub fn page(&self, slot: usize) -> PageRef<'_> {
        // SAFETY: the image is a page-sized copy owned by the open record, or the locked
        // buffer itself; it lives as long as self, and &self excludes writers.
        PageRef::new(unsafe { page_bytes(self.pages[slot].image) })
    }

    /// Changes the page in `slot`.
    pub fn page_mut(&mut self, slot: usize) -> PageMut<'_> {
        let registered = &mut self.pages[slot];
        if self.mode == WriteMode::Build && !registered.dirty {
            // SAFETY: the buffer is pinned and exclusively locked by the registered guard.
            unsafe { pg_sys::MarkBufferDirty(registered.guard.buffer) };
            registered.dirty = true;
        }
        PageMut {
            page: registered.image,
            _borrow: PhantomData,
        }
    }

    /// Applies the changes: writes the WAL record and installs the new pages (or, in build
    /// mode, leaves them in place). The pages stay locked in the returned [`HeldPages`] until
    /// it is dropped, so a caller can keep one for its next change.
    pub fn commit(mut self) -> HeldPages {
        let state = std::mem::replace(&mut self.state, std::ptr::null_mut());
        if !state.is_null() {
            // SAFETY: state is the open record these pages are registered in. Cleared above,
            // so Drop does not touch it again: GenericXLogFinish frees it.
            unsafe { pg_sys::GenericXLogFinish(state) };
        }
        HeldPages {
            guards: self.pages.drain(..).map(|p| Some(p.guard)).collect(),
        }
    }

    /// Discards the changes (in build mode there is nothing to discard) and returns the pages,
    /// still locked.
    pub fn abort(mut self) -> HeldPages {
        self.abort_record();
        HeldPages {
            guards: self.pages.drain(..).map(|p| Some(p.guard)).collect(),
        }
    }

    fn abort_record(&mut self) {
        let state = std::mem::replace(&mut self.state, std::ptr::null_mut());
        if !state.is_null() {
            // SAFETY: state is an open record, aborted once (cleared above).
            unsafe { pg_sys::GenericXLogAbort(state) };
        }
    }
}

impl Drop for PageWriteGuard {
    fn drop(&mut self) {
        // Discard the record before the guards in `pages` unlock and unpin the buffers.
        self.abort_record();
    }
}

/// Pages of a finished [`PageWriteGuard`], still locked; dropping this releases those not
/// taken out.
pub struct HeldPages {
    guards: Vec<Option<PageReadGuard>>,
}

impl HeldPages {
    /// Takes the page of `slot` out, to keep it locked past this value.
    pub fn take(&mut self, slot: usize) -> Option<PageReadGuard> {
        self.guards.get_mut(slot).and_then(Option::take)
    }
}

/// Write access to one page of a [`PageWriteGuard`]. Item functions call Postgres's own
/// (`PageAddItem`, `PageIndexTupleOverwrite`), so pages stay exactly as Postgres lays them out.
pub struct PageMut<'a> {
    page: pg_sys::Page,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl PageMut<'_> {
    /// Read view of the page as changed so far.
    pub fn view(&self) -> PageRef<'_> {
        // SAFETY: the page is valid for the borrow of the write guard, which self holds.
        PageRef::new(unsafe { page_bytes(self.page) })
    }

    /// The whole page.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the page is BLCKSZ writable bytes, exclusively ours for this borrow.
        unsafe { std::slice::from_raw_parts_mut(self.page as *mut u8, BLCKSZ) }
    }

    /// `PageInit`: an empty page with `special_size` bytes (rounded up to `MAXALIGN`) of
    /// special space, zeroed.
    pub fn init(&mut self, special_size: usize) {
        assert!(special_size <= BLCKSZ / 2, "special space too large");
        // SAFETY: the page is BLCKSZ writable bytes.
        unsafe { pg_sys::PageInit(self.page, BLCKSZ, special_size) }
    }

    /// `PageAddItem` at the next offset; `None` if there is no room.
    pub fn add_item(&mut self, item: &[u8]) -> Option<OffsetNumber> {
        let header = self.view().header();
        if !header.is_consistent(BLCKSZ) || item.len() > BLCKSZ {
            return None;
        }
        // SAFETY: the page has a sane header (checked above), `item` is readable for its
        // length and only copied from.
        let offset = unsafe {
            pg_sys::PageAddItemExtended(
                self.page,
                item.as_ptr() as pg_sys::Item,
                item.len(),
                INVALID_OFFSET_NUMBER,
                0,
            )
        };
        (offset != INVALID_OFFSET_NUMBER).then_some(offset)
    }

    /// `PageIndexTupleOverwrite`: replaces item `offset` with `item`, moving other items if the
    /// size changes. False if there is no such item or the new one does not fit.
    pub fn overwrite_item(&mut self, offset: OffsetNumber, item: &[u8]) -> bool {
        let page = self.view();
        if !page.header().is_consistent(BLCKSZ) || page.item(offset).is_none() {
            return false;
        }
        // SAFETY: `offset` names an existing item with storage on a sane page (checked
        // above), and `item` is readable for its length and only copied from.
        unsafe {
            pg_sys::PageIndexTupleOverwrite(
                self.page,
                offset,
                item.as_ptr() as pg_sys::Item,
                item.len(),
            )
        }
    }

    /// `PageIndexMultiDelete`: removes the items at `offsets` (ascending) and compacts the
    /// page, keeping the other items' order.
    pub fn delete_items(&mut self, offsets: &mut [OffsetNumber]) {
        let page = self.view();
        let max = page.max_offset();
        if offsets.is_empty() || !page.header().is_consistent(BLCKSZ) {
            return;
        }
        assert!(
            offsets.iter().all(|&o| o >= 1 && o <= max),
            "deleting an item that is not on the page"
        );
        // SAFETY: the page has a sane header and every offset names one of its line pointers
        // (checked above); the array is read only.
        unsafe {
            pg_sys::PageIndexMultiDelete(self.page, offsets.as_mut_ptr(), offsets.len() as i32)
        }
    }

    /// The bytes of item `offset`, to change in place.
    pub fn item_mut(&mut self, offset: OffsetNumber) -> Option<&mut [u8]> {
        page::item_mut(self.bytes_mut(), offset)
    }

    /// The special space.
    pub fn special_mut(&mut self) -> &mut [u8] {
        page::special_mut(self.bytes_mut())
    }

    /// `PageGetContents` up to the special space (metapage data).
    pub fn contents_mut(&mut self) -> &mut [u8] {
        page::contents_mut(self.bytes_mut())
    }

    /// Sets `pd_lower` (a metapage marks the end of its data with it).
    pub fn set_lower(&mut self, lower: u16) {
        page::set_lower(self.bytes_mut(), lower)
    }
}

impl Relation {
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
