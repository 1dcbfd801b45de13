//! Lightweight locks that the processes of a parallel build share, laid out by this library in
//! the build's dynamic shared memory (pgvector's "HnswBuild" tranche), and taken through guards
//! that release them on drop.
//!
//! An LWLock holds off interrupts while it is held, and Postgres releases every LWLock a
//! process still holds when an ERROR aborts its transaction, so a guard dropped while an ERROR
//! unwinds releases a lock that is still held.

use pgrx::pg_sys;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, Ordering};

/// The tranche's id, once this backend knows it.
static TRANCHE: AtomicI32 = AtomicI32::new(0);

/// `AddinShmemInitLock`: the same slot of the main LWLock array on every supported version.
const ADDIN_SHMEM_INIT_LOCK: usize = 21;

/// The cluster-wide id of the tranche, made once per cluster and named in each backend (the
/// name is what `pg_stat_activity` shows for a wait).
fn tranche_id() -> i32 {
    let known = TRANCHE.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: the struct is looked up or created under AddinShmemInitLock, as Postgres requires
    // for ShmemInitStruct after startup; it holds one int, the id, set by whoever created it.
    let id = unsafe {
        let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(ADDIN_SHMEM_INIT_LOCK)).lock;
        pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let slot =
            pg_sys::ShmemInitStruct(c"hnsw LWLock ids".as_ptr(), size_of::<i32>(), &mut found)
                .cast::<i32>();
        if !found {
            *slot = pg_sys::LWLockNewTrancheId();
        }
        let id = *slot;
        pg_sys::LWLockRelease(init_lock);
        pg_sys::LWLockRegisterTranche(id, c"HnswBuild".as_ptr());
        id
    };
    TRANCHE.store(id, Ordering::Relaxed);
    id
}

/// An LWLock in memory shared by the processes of one build.
#[repr(transparent)]
pub struct SharedLock(UnsafeCell<pg_sys::LWLock>);

/// Bytes a [`SharedLock`] takes.
pub const SHARED_LOCK_SIZE: usize = size_of::<SharedLock>();
const _: () = assert!(SHARED_LOCK_SIZE <= 16 && align_of::<SharedLock>() <= 8);

// SAFETY: the lock is only changed through LWLock calls, which synchronize the processes (and
// threads) that share it.
unsafe impl Sync for SharedLock {}

impl SharedLock {
    /// The lock at `at`.
    ///
    /// # Safety
    ///
    /// `at` is aligned for an LWLock and points to [`SHARED_LOCK_SIZE`] bytes that stay mapped
    /// for `'a` and are used for nothing else.
    pub unsafe fn at<'a>(at: *mut u8) -> &'a SharedLock {
        // SAFETY: per the contract.
        unsafe { &*at.cast::<SharedLock>() }
    }

    /// Makes the memory a free lock; done once, before any other process can reach it.
    pub fn init(&self) {
        let tranche = tranche_id();
        // SAFETY: the memory is ours to initialize (per `at`) and no process holds the lock yet.
        unsafe { pg_sys::LWLockInitialize(self.0.get(), tranche) }
    }

    fn acquire(&self, mode: pg_sys::LWLockMode::Type) -> LockGuard<'_> {
        // SAFETY: the lock was initialized; LWLockAcquire waits and holds off interrupts.
        unsafe { pg_sys::LWLockAcquire(self.0.get(), mode) };
        LockGuard(self)
    }

    /// Takes the lock in share mode until the guard is dropped.
    pub fn share(&self) -> LockGuard<'_> {
        self.acquire(pg_sys::LWLockMode::LW_SHARED)
    }

    /// Takes the lock in exclusive mode until the guard is dropped.
    pub fn exclusive(&self) -> LockGuard<'_> {
        self.acquire(pg_sys::LWLockMode::LW_EXCLUSIVE)
    }

    /// Takes the lock until [`SharedLock::release`], for a caller that holds it across calls.
    pub fn hold(&self, exclusive: bool) {
        let mode = if exclusive {
            pg_sys::LWLockMode::LW_EXCLUSIVE
        } else {
            pg_sys::LWLockMode::LW_SHARED
        };
        std::mem::forget(self.acquire(mode));
    }

    /// Releases a lock taken with [`SharedLock::hold`].
    ///
    /// # Safety
    ///
    /// This process holds the lock through `hold` and has not released it yet (an ERROR's
    /// abort releases it instead).
    pub unsafe fn release(&self) {
        // SAFETY: per the contract.
        unsafe { pg_sys::LWLockRelease(self.0.get()) }
    }
}

/// A held [`SharedLock`].
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard<'a>(&'a SharedLock);

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this process holds the lock (acquired by the guard's constructor).
        unsafe { pg_sys::LWLockRelease(self.0 .0.get()) }
    }
}
