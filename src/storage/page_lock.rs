//! Heavyweight page locks (`LockPage`): pgvector's update and scan locks on blocks 0 and 1.

use crate::storage::relation::Relation;
use pgrx::pg_sys;
use vector_formats::page::BlockNumber;

/// Whether this server is a standby replaying WAL. The page locks by which a primary's VACUUM
/// waits for its scans do not reach a standby, whose scans can therefore meet what replay
/// changed under them.
pub fn in_recovery() -> bool {
    // SAFETY: reads shared-memory recovery state; callable in any backend.
    unsafe { pg_sys::RecoveryInProgress() }
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

impl Relation {
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
}
