//! Pinned pages: a buffer pinned without a content lock ([`PinnedPage`]), for batch reads.
//!
//! A batch read pins every block of the batch first, asks the CPU to fetch the bytes it is about
//! to read ([`PinnedPage::prefetch_items`]), and only then locks the pages one at a time. The
//! page lines of the whole batch then travel from memory in parallel instead of one cache miss
//! after the other, each behind a lock.
//!
//! Rules, in addition to those of [`crate::storage`]:
//!
//! * A pin alone gives no right to read the page: its bytes may change under another backend's
//!   exclusive lock. [`PinnedPage::prefetch_items`] only computes addresses to hint the CPU
//!   with; what is read under [`PinnedPage::lock`] is what counts.
//! * Pins block nobody except a cleanup lock waiting for them, and that waiter holds no content
//!   lock meanwhile; so holding several pins is safe as long as content locks are still taken one
//!   at a time, with no other lock held while waiting.
//! * Keep at most [`pin_limit`] pages pinned at once.

use crate::storage::buffer::{PageReadGuard, ReadMode};
use crate::storage::relation::Relation;
use crate::storage::strategy::AccessStrategy;
use pgrx::pg_sys;
use std::sync::atomic::{AtomicU32, Ordering};
use vector_formats::page::{
    self, BlockNumber, OffsetNumber, BLCKSZ, ITEM_ID_SIZE, PAGE_HEADER_SIZE,
};

/// Bytes per CPU cache line prefetched.
const CACHE_LINE: usize = 64;

/// How many pages a batch read may keep pinned at once: [`vector_io::pin_limit`] of this
/// server's `shared_buffers`.
pub fn pin_limit() -> usize {
    // SAFETY: NBuffers is a plain int set at server start, read by value.
    vector_io::pin_limit(i64::from(unsafe { pg_sys::NBuffers }))
}

/// A pinned, unlocked buffer. Unpins on drop.
pub struct PinnedPage {
    buffer: pg_sys::Buffer,
    /// Where it was read from (its page id is checked when it is locked).
    rel: Relation,
    /// Known from the request, so no call is needed to ask the buffer.
    block: BlockNumber,
}

impl PinnedPage {
    /// Takes over a buffer this backend has pinned once and not locked.
    ///
    /// # Safety
    ///
    /// `buffer` is valid, holds `block` and is pinned by this backend, and nothing else will
    /// unpin it.
    pub(super) unsafe fn from_pinned(
        rel: Relation,
        buffer: pg_sys::Buffer,
        block: BlockNumber,
    ) -> Self {
        debug_assert_eq!(
            // SAFETY: the buffer is pinned (caller's contract).
            unsafe { pg_sys::BufferGetBlockNumber(buffer) },
            block
        );
        PinnedPage { buffer, rel, block }
    }

    /// The block in the buffer.
    pub fn block(&self) -> BlockNumber {
        self.block
    }

    fn page_ptr(&self) -> *const u8 {
        // SAFETY: the buffer is pinned by this value, so its page stays mapped.
        unsafe { pg_sys::BufferGetPage(self.buffer) as *const u8 }
    }

    /// Hints the CPU to fetch the line pointers of the items at `offsets` (call it well before
    /// [`prefetch_items`](Self::prefetch_items), which reads them).
    /// Also fetches the header and the special space's last line, which the page-id check
    /// reads as soon as the page is locked (otherwise two cache misses in a row there).
    pub fn prefetch_line_pointers(&self, offsets: impl Iterator<Item = OffsetNumber>) {
        let page = self.page_ptr();
        // SAFETY: both offsets are inside the pinned page.
        unsafe {
            prefetch(page);
            prefetch(page.add(BLCKSZ - CACHE_LINE));
        }
        let mut last_line = 0;
        for offset in offsets {
            let at = (PAGE_HEADER_SIZE + usize::from(offset.max(1) - 1) * ITEM_ID_SIZE)
                .min(BLCKSZ - ITEM_ID_SIZE);
            if at / CACHE_LINE != last_line {
                last_line = at / CACHE_LINE;
                // SAFETY: `at` is inside the pinned page.
                prefetch(unsafe { page.add(at) });
            }
        }
    }

    /// Hints the CPU to fetch the first `bytes` bytes of the items at `offsets`. Reads the line pointers without a lock: a concurrent change
    /// only makes the hint point elsewhere. Never reads beyond the page.
    pub fn prefetch_items(&self, offsets: impl Iterator<Item = OffsetNumber>, bytes: usize) {
        let page = self.page_ptr();
        for offset in offsets {
            if offset == 0 {
                continue;
            }
            let at = PAGE_HEADER_SIZE + (usize::from(offset) - 1) * ITEM_ID_SIZE;
            if at + ITEM_ID_SIZE > BLCKSZ {
                continue;
            }
            // SAFETY: `at` is a 4-byte aligned offset inside the pinned page (pages are
            // MAXALIGNed and line pointers start at an aligned offset). The word may be written
            // by another backend under its exclusive lock; an atomic load reads some value of
            // it, which is only used as a hint.
            let word = unsafe { AtomicU32::from_ptr(page.add(at).cast_mut().cast::<u32>()) }
                .load(Ordering::Relaxed);
            let id = page::ItemId::from_word(word);
            let start = usize::from(id.offset);
            let end = (start + bytes.min(usize::from(id.len))).min(BLCKSZ);
            for line in (start..end).step_by(CACHE_LINE) {
                // SAFETY: `line` is inside the pinned page.
                prefetch(unsafe { page.add(line) });
            }
        }
    }

    /// Locks the page in `mode` (waiting for the lock), keeping the pin.
    pub fn lock(self, mode: ReadMode) -> PageReadGuard {
        let (rel, buffer, block) = (self.rel, self.buffer, self.block);
        std::mem::forget(self);
        let lock = match mode {
            ReadMode::Shared => pg_sys::BUFFER_LOCK_SHARE,
            ReadMode::Exclusive => pg_sys::BUFFER_LOCK_EXCLUSIVE,
            ReadMode::Cleanup => {
                // SAFETY: the pin is ours and the buffer is not locked by this backend.
                unsafe { pg_sys::LockBufferForCleanup(buffer) };
                // SAFETY: pinned once and now cleanup-locked; the guard takes both over.
                let guard = unsafe { PageReadGuard::from_locked_block(buffer, block, mode) };
                rel.check_page_id(block, guard.page());
                return guard;
            }
        };
        // SAFETY: the pin is ours and the buffer is not locked by this backend. Should the lock
        // call raise an ERROR, the resource owner releases the pin.
        unsafe { pg_sys::LockBuffer(buffer, lock as i32) };
        // SAFETY: pinned once and now locked in `mode`; the guard takes both over.
        let guard = unsafe { PageReadGuard::from_locked_block(buffer, block, mode) };
        rel.check_page_id(block, guard.page());
        guard
    }
}

impl Drop for PinnedPage {
    fn drop(&mut self) {
        // SAFETY: this value owns one pin on the buffer and no lock.
        unsafe { pg_sys::ReleaseBuffer(self.buffer) }
    }
}

/// Asks the CPU to bring the cache line at `ptr` closer (a hint: never faults).
#[inline(always)]
fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch instruction has no architectural effect and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

impl Relation {
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
