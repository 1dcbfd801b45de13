//! Index scans: `ORDER BY col <op> $1 [LIMIT k]` answered from the graph.
//!
//! `ambeginscan` opens the graph and allocates the scan state; `amrescan` takes the new keys
//! and resets it; the first `amgettuple` after a rescan runs the search of
//! [`vector_hnsw::Scan`] (entry point, greedy descent, layer 0 with `hnsw.ef_search`, under
//! the shared scan lock) and each call then returns one heap TID: the nearest element's TIDs
//! first, last slot first, as pgvector does. With `hnsw.iterative_scan` the search resumes
//! when the results run out, within `hnsw.max_scan_tuples` and
//! `work_mem * hnsw.scan_mem_multiplier` (fixed when the scan begins; the other settings are
//! read on every call, as pgvector reads them when it uses them). Distances are exact, so
//! ORDER BY is never rechecked.
//!
//! The query is the ORDER BY argument, normalized for cosine operator classes; a NULL query
//! puts every element at distance 0 (pgvector returns them in graph order).
//!
//! The Rust state lives outside Postgres memory and is owned through `scan->opaque`:
//! `amendscan` frees it, and a callback on the memory context the scan was created in frees it
//! if the query ends without `amendscan` (an error).

use crate::am::graph::PageGraph;
use crate::am::options;
use crate::storage::{Fork, ItemPointer, Relation};
use pgrx::{pg_guard, pg_sys};
use std::ffi::{c_int, c_void};
use vector_hnsw::{Scan, ScanParams};

/// Everything one index scan keeps between calls.
struct ScanState {
    graph: PageGraph,
    /// The running search; `None` until the first `amgettuple` after a rescan.
    search: Option<Scan<PageGraph>>,
    /// Heap TIDs of the element being returned, handed out from the end.
    pending: Vec<ItemPointer>,
    /// The memory budget of iterative scans, fixed when the scan began (as in pgvector).
    max_memory: usize,
    /// Memory context for Postgres allocations made while searching; reset by `amrescan`.
    tmp_ctx: pg_sys::MemoryContext,
}

/// What `scan->opaque` points to: a Postgres allocation that also carries the context callback
/// releasing the Rust state if `amendscan` is never called.
#[repr(C)]
struct ScanOpaque {
    callback: pg_sys::MemoryContextCallback,
    state: *mut ScanState,
}

/// Frees the Rust state when the scan's memory context goes away without `amendscan`.
unsafe extern "C-unwind" fn release_on_reset(arg: *mut c_void) {
    let opaque = arg.cast::<ScanOpaque>();
    // SAFETY: arg is the ScanOpaque this callback was registered with, which lives in the
    // context being reset; state is either null (already ended) or the Box leaked at begin.
    unsafe {
        let state = std::mem::replace(&mut (*opaque).state, std::ptr::null_mut());
        if !state.is_null() {
            let mut state = Box::from_raw(state);
            // The transaction was aborted: Postgres has released the heavyweight locks a
            // search in progress held, so they must not be released again.
            state.graph.forget_locks();
            drop(state);
        }
    }
}

/// The scan's Rust state.
///
/// # Safety
///
/// `scan` is a scan begun by [`begin_scan`] and not yet ended.
unsafe fn state<'a>(scan: pg_sys::IndexScanDesc) -> &'a mut ScanState {
    // SAFETY: per the contract, opaque is our ScanOpaque with a live state.
    unsafe {
        let opaque = (*scan).opaque.cast::<ScanOpaque>();
        &mut *(*opaque).state
    }
}

/// `ambeginscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn begin_scan(
    index: pg_sys::Relation,
    nkeys: c_int,
    norderbys: c_int,
) -> pg_sys::IndexScanDesc {
    // SAFETY: Postgres passes the open index relation; RelationGetIndexScan allocates the
    // descriptor in the current memory context.
    let scan = unsafe { pg_sys::RelationGetIndexScan(index, nkeys, norderbys) };
    // SAFETY: the index stays open until the scan ends, which outlives the state.
    let rel = unsafe { Relation::from_raw(index, Fork::Main) };
    let graph = PageGraph::open(rel);
    let max_memory =
        vector_hnsw::scan::memory_limit(options::work_mem_kb(), options::scan_mem_multiplier());
    // SAFETY: creates a child of the current context, deleted with it or in end_scan.
    let tmp_ctx = unsafe {
        pg_sys::AllocSetContextCreateInternal(
            pg_sys::CurrentMemoryContext,
            c"Hnsw scan temporary context".as_ptr(),
            0,
            8 * 1024,
            256 * 1024,
        )
    };
    let state = Box::new(ScanState {
        graph,
        search: None,
        pending: Vec::new(),
        max_memory,
        tmp_ctx,
    });
    // SAFETY: the ScanOpaque is palloc'd in the current context (the one the scan descriptor
    // lives in), initialized before the callback that reads it is registered.
    unsafe {
        let opaque = pg_sys::palloc0(std::mem::size_of::<ScanOpaque>()).cast::<ScanOpaque>();
        (*opaque).state = Box::into_raw(state);
        (*opaque).callback.func = Some(release_on_reset);
        (*opaque).callback.arg = opaque.cast();
        pg_sys::MemoryContextRegisterResetCallback(
            pg_sys::CurrentMemoryContext,
            &mut (*opaque).callback,
        );
        (*scan).opaque = opaque.cast();
    }
    scan
}

/// `amrescan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn rescan(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    _nkeys: c_int,
    orderbys: pg_sys::ScanKey,
    _norderbys: c_int,
) {
    // SAFETY: scan was begun by begin_scan; the key arrays hold as many entries as the scan
    // was begun with (Postgres's contract for amrescan).
    unsafe {
        let s = &mut *scan;
        if !keys.is_null() && s.numberOfKeys > 0 {
            std::ptr::copy(keys, s.keyData, s.numberOfKeys as usize);
        }
        if !orderbys.is_null() && s.numberOfOrderBys > 0 {
            std::ptr::copy(orderbys, s.orderByData, s.numberOfOrderBys as usize);
        }
        let state = state(scan);
        state.search = None;
        state.pending.clear();
        pg_sys::MemoryContextReset(state.tmp_ctx);
    }
}

/// Switches to a memory context until dropped.
struct ContextSwitch(pg_sys::MemoryContext);

impl ContextSwitch {
    fn to(ctx: pg_sys::MemoryContext) -> Self {
        // SAFETY: ctx is a live context; switching only changes where palloc allocates.
        ContextSwitch(unsafe { pg_sys::MemoryContextSwitchTo(ctx) })
    }
}

impl Drop for ContextSwitch {
    fn drop(&mut self) {
        // SAFETY: restores the context that was current before, which is still alive.
        unsafe { pg_sys::MemoryContextSwitchTo(self.0) };
    }
}

/// `amgettuple`.
#[pg_guard]
pub unsafe extern "C-unwind" fn get_tuple(
    scan: pg_sys::IndexScanDesc,
    _direction: pg_sys::ScanDirection::Type,
) -> bool {
    // SAFETY: scan was begun by begin_scan and not ended.
    let state = unsafe { state(scan) };
    let _ctx = ContextSwitch::to(state.tmp_ctx);

    // The settings as they are now: like pgvector, a cursor sees changes between fetches.
    let params = ScanParams {
        max_memory: state.max_memory,
        ..options::scan_params()
    };
    if state.search.is_none() {
        // SAFETY: scan is a live descriptor of an open index.
        let query = unsafe { start_scan(scan, &state.graph) };
        state.search = Some(Scan::new(query, params));
    }
    let search = state.search.as_mut().expect("started above");
    search.set_params(params);

    let tid = loop {
        if let Some(tid) = state.pending.pop() {
            break tid;
        }
        match search.next(&mut state.graph) {
            Some(element) => {
                // Postgres receives the last slot first, as pgvector hands them out.
                state
                    .pending
                    .extend_from_slice(element.meta.heap_tids.as_slice());
            }
            None => return false,
        }
    };
    // SAFETY: scan is live; these fields are the AM's outputs.
    unsafe {
        let s = &mut *scan;
        s.xs_heaptid = tid_data(tid);
        s.xs_recheck = false;
        s.xs_recheckorderby = false;
    }
    true
}

fn tid_data(tid: ItemPointer) -> pg_sys::ItemPointerData {
    let mut data = pg_sys::ItemPointerData::default();
    data.ip_blkid.bi_hi = (tid.block >> 16) as u16;
    data.ip_blkid.bi_lo = tid.block as u16;
    data.ip_posid = tid.offset;
    data
}

/// The checks and statistics of a scan's first call; returns the query value.
///
/// # Safety
///
/// `scan` is a live scan descriptor of the graph's index.
unsafe fn start_scan(scan: pg_sys::IndexScanDesc, graph: &PageGraph) -> crate::am::typeinfo::Value {
    // SAFETY: per the contract.
    let s = unsafe { &mut *scan };
    count_index_scan(s);
    if s.orderByData.is_null() {
        pgrx::error!("cannot scan hnsw index without order");
    }
    // SAFETY: xs_snapshot is the scan's snapshot, set by index_beginscan.
    let snapshot_type = unsafe { (*s.xs_snapshot).snapshot_type };
    if snapshot_type != pg_sys::SnapshotType::SNAPSHOT_MVCC
        && snapshot_type != pg_sys::SnapshotType::SNAPSHOT_HISTORIC_MVCC
    {
        pgrx::error!("non-MVCC snapshots are not supported with hnsw");
    }
    // SAFETY: orderByData has at least one key (checked non-null; hnsw has one ORDER BY).
    let key = unsafe { &*s.orderByData };
    let is_null = key.sk_flags & pg_sys::SK_ISNULL as c_int != 0;
    // SAFETY: a non-NULL ORDER BY argument of an hnsw operator is a value of the column's type.
    unsafe { graph.support().scan_value(key.sk_argument, is_null) }
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

/// `amendscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn end_scan(scan: pg_sys::IndexScanDesc) {
    // SAFETY: scan was begun by begin_scan; the state is taken out once and freed; the
    // callback sees the null pointer later and does nothing.
    unsafe {
        let opaque = (*scan).opaque.cast::<ScanOpaque>();
        let state = std::mem::replace(&mut (*opaque).state, std::ptr::null_mut());
        if !state.is_null() {
            let state = Box::from_raw(state);
            pg_sys::MemoryContextDelete(state.tmp_ctx);
            drop(state);
        }
    }
}
