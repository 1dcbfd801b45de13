//! What both access methods' scans share: how a scan owns its Rust state, the keys of a
//! rescan, and the checks and statistics of a scan's first call.
//!
//! `ambeginscan` boxes the state and points `scan->opaque` at a small Postgres allocation
//! that carries the box and a callback on the memory context the scan descriptor lives in.
//! `amendscan` takes the box back and drops it ([`detach`]). If the query ends without
//! `amendscan` (an ERROR), the context's reset runs the callback, which drops the state after
//! telling it the transaction was aborted ([`AbortSafe::forget_after_abort`]): the abort has
//! released its locks, pins and Postgres memory already, so nothing may release them again.

use crate::opclass::Method;
use pgrx::pg_sys;
use std::ffi::{c_int, c_void};

/// A scan state that can be dropped after its transaction was aborted.
pub trait AbortSafe {
    /// Forgets, without releasing them, the Postgres resources the abort has released (held
    /// heavyweight locks, a sort's memory). Called before the state is dropped in that case.
    /// Must not call Postgres.
    fn forget_after_abort(&mut self);
}

/// What `scan->opaque` points to.
#[repr(C)]
struct ScanOpaque<T> {
    callback: pg_sys::MemoryContextCallback,
    state: *mut T,
}

/// Frees the Rust state when the scan's memory context goes away without `amendscan`.
///
/// Not `#[pg_guard]`ed, because it must not raise: it runs during abort cleanup, where an ERROR
/// would escalate. The state only forgets its resources and frees Rust memory
/// ([`AbortSafe::forget_after_abort`] must not call Postgres).
unsafe extern "C-unwind" fn release_on_reset<T: AbortSafe>(arg: *mut c_void) {
    let opaque = arg.cast::<ScanOpaque<T>>();
    // SAFETY: arg is the ScanOpaque this callback was registered with, which lives in the
    // context being reset; state is either null (already ended) or the Box leaked by attach.
    unsafe {
        let state = std::mem::replace(&mut (*opaque).state, std::ptr::null_mut());
        if !state.is_null() {
            let mut state = Box::from_raw(state);
            state.forget_after_abort();
            drop(state);
        }
    }
}

/// Gives `state` to the scan (from `ambeginscan`).
///
/// # Safety
///
/// `scan` is a descriptor just made by `RelationGetIndexScan` in the current memory context,
/// whose `opaque` is not set.
pub unsafe fn attach<T: AbortSafe>(scan: pg_sys::IndexScanDesc, state: T) {
    // SAFETY: the ScanOpaque is palloc'd in the current context (the one the scan descriptor
    // lives in), initialized before the callback that reads it is registered.
    unsafe {
        let opaque = pg_sys::palloc0(std::mem::size_of::<ScanOpaque<T>>()).cast::<ScanOpaque<T>>();
        (*opaque).state = Box::into_raw(Box::new(state));
        (*opaque).callback.func = Some(release_on_reset::<T>);
        (*opaque).callback.arg = opaque.cast();
        pg_sys::MemoryContextRegisterResetCallback(
            pg_sys::CurrentMemoryContext,
            &mut (*opaque).callback,
        );
        (*scan).opaque = opaque.cast();
    }
}

/// The scan's state.
///
/// # Safety
///
/// `scan` was given a `T` by [`attach`] and not yet ended.
pub unsafe fn state<'a, T>(scan: pg_sys::IndexScanDesc) -> &'a mut T {
    // SAFETY: per the contract, opaque is our ScanOpaque with a live state.
    unsafe {
        let opaque = (*scan).opaque.cast::<ScanOpaque<T>>();
        &mut *(*opaque).state
    }
}

/// The state of a scan that may have ended (null once ended).
///
/// # Safety
///
/// `scan` is a live descriptor that was given a `T` by [`attach`].
pub unsafe fn peek<'a, T>(scan: pg_sys::IndexScanDesc) -> Option<&'a T> {
    // SAFETY: per the contract.
    unsafe {
        let opaque = (*scan).opaque.cast::<ScanOpaque<T>>();
        if opaque.is_null() {
            return None;
        }
        (*opaque).state.as_ref()
    }
}

/// Takes the state back (from `amendscan`); the callback then finds nothing to free.
///
/// # Safety
///
/// `scan` was given a `T` by [`attach`].
pub unsafe fn detach<T>(scan: pg_sys::IndexScanDesc) -> Option<Box<T>> {
    // SAFETY: per the contract; the state is taken out once.
    unsafe {
        let opaque = (*scan).opaque.cast::<ScanOpaque<T>>();
        let state = std::mem::replace(&mut (*opaque).state, std::ptr::null_mut());
        (!state.is_null()).then(|| Box::from_raw(state))
    }
}

/// `amrescan`'s keys: copies the new scan keys and ORDER BY keys into the descriptor.
///
/// # Safety
///
/// `scan` is a live descriptor; `keys` and `orderbys` are null or hold as many entries as the
/// scan was begun with (Postgres's contract for amrescan).
pub unsafe fn copy_keys(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    orderbys: pg_sys::ScanKey,
) {
    // SAFETY: per the contract.
    unsafe {
        let s = &mut *scan;
        if !keys.is_null() && s.numberOfKeys > 0 {
            std::ptr::copy(keys, s.keyData, s.numberOfKeys as usize);
        }
        if !orderbys.is_null() && s.numberOfOrderBys > 0 {
            std::ptr::copy(orderbys, s.orderByData, s.numberOfOrderBys as usize);
        }
    }
}

/// The checks and statistics of a scan's first `amgettuple` (pgvector's errors, with the
/// method's name): counts the scan, requires an ORDER BY and an MVCC snapshot, and returns the
/// ORDER BY argument and whether it is NULL.
///
/// # Safety
///
/// `scan` is a live scan descriptor of an index of `method`.
pub unsafe fn first_call(scan: pg_sys::IndexScanDesc, method: Method) -> (pg_sys::Datum, bool) {
    // SAFETY: per the contract.
    let s = unsafe { &mut *scan };
    count_index_scan(s);
    if s.orderByData.is_null() {
        pgrx::error!("cannot scan {} index without order", method.name());
    }
    // SAFETY: xs_snapshot is the scan's snapshot, set by index_beginscan.
    let snapshot_type = unsafe { (*s.xs_snapshot).snapshot_type };
    if snapshot_type != pg_sys::SnapshotType::SNAPSHOT_MVCC
        && snapshot_type != pg_sys::SnapshotType::SNAPSHOT_HISTORIC_MVCC
    {
        pgrx::error!(
            "non-MVCC snapshots are not supported with {}",
            method.name()
        );
    }
    // SAFETY: orderByData has at least one key (checked non-null; both methods have one).
    let key = unsafe { &*s.orderByData };
    (
        key.sk_argument,
        key.sk_flags & pg_sys::SK_ISNULL as c_int != 0,
    )
}

/// `pgstat_count_index_scan`, and on Postgres 18 the EXPLAIN ANALYZE "Index Searches" count.
fn count_index_scan(s: &mut pg_sys::IndexScanDescData) {
    // SAFETY: the index relation is open; pgstat_assoc_relation attaches its stats entry,
    // after which pgstat_info is a valid pointer.
    unsafe {
        let rel = s.indexRelation;
        if (*rel).pgstat_info.is_null() && (*rel).pgstat_enabled {
            pg_sys::pgstat_assoc_relation(rel);
        }
        if !(*rel).pgstat_info.is_null() {
            bump_numscans(&mut *(*rel).pgstat_info);
        }
    }
    count_search(s);
}

#[cfg(feature = "pg15")]
fn bump_numscans(stats: &mut pg_sys::PgStat_TableStatus) {
    stats.t_counts.t_numscans += 1;
}

#[cfg(not(feature = "pg15"))]
fn bump_numscans(stats: &mut pg_sys::PgStat_TableStatus) {
    stats.counts.numscans += 1;
}

#[cfg(feature = "pg18")]
fn count_search(s: &mut pg_sys::IndexScanDescData) {
    if !s.instrument.is_null() {
        // SAFETY: a non-null instrument is the executor's counter for this scan.
        unsafe { (*s.instrument).nsearches += 1 };
    }
}

#[cfg(not(feature = "pg18"))]
fn count_search(_s: &mut pg_sys::IndexScanDescData) {}
