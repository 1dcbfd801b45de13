//! What the builds (and the verifiers' heap pass) of both methods share: the one
//! `table_index_build_scan` callback, which hands each row's non-NULL key value to a closure in a
//! memory context reset after the row; the progress reports of `pg_stat_progress_create_index`;
//! and `maintenance_work_mem`.

use crate::storage::{item_pointer_from, ItemPointer};
use pgrx::{pg_guard, pg_sys, PgMemoryContexts};
use std::ffi::c_void;

/// Sets one field of this backend's `pg_stat_progress_create_index` row.
pub fn report_progress(param: u32, value: i64) {
    // SAFETY: updates this backend's progress slot; a no-op when no command is tracked.
    unsafe { pg_sys::pgstat_progress_update_param(param as i32, value) }
}

/// `maintenance_work_mem` in kB.
pub fn maintenance_work_mem_kb() -> usize {
    // SAFETY: a plain int GUC of the server, read by value.
    usize::try_from(unsafe { pg_sys::maintenance_work_mem }).unwrap_or(0)
}

/// `maintenance_work_mem` in bytes.
pub fn maintenance_work_mem() -> usize {
    maintenance_work_mem_kb().saturating_mul(1024)
}

/// A pass over the table's rows for an index: each row whose first key column is not NULL goes
/// to `row` with its heap TID, inside a temporary memory context that is reset after the row
/// (what Postgres allocates for it, such as a detoasted copy, goes there; Rust allocations kept
/// by the closure are unaffected).
pub struct TableScan<'a> {
    row: &'a mut dyn FnMut(pg_sys::Datum, ItemPointer),
    tmp_ctx: PgMemoryContexts,
}

impl<'a> TableScan<'a> {
    /// A scan whose temporary context is named `context` (seen in memory context dumps).
    pub fn new(context: &str, row: &'a mut dyn FnMut(pg_sys::Datum, ItemPointer)) -> Self {
        TableScan {
            row,
            tmp_ctx: PgMemoryContexts::new(context),
        }
    }

    /// `table_index_build_scan` over the table, or over `scan` (a parallel scan's share, or a
    /// scan the caller began with its own snapshot) when not null; returns the heap tuples seen.
    ///
    /// # Safety
    ///
    /// `heap`, `index` and `index_info` are open and describe the build (or the check); `scan`
    /// is null or a scan of `heap`.
    pub unsafe fn run(
        &mut self,
        heap: pg_sys::Relation,
        index: pg_sys::Relation,
        index_info: *mut pg_sys::IndexInfo,
        progress: bool,
        scan: pg_sys::TableScanDesc,
    ) -> f64 {
        // SAFETY: per the contract; the callback gets `self` back only during this call.
        unsafe {
            pg_sys::table_index_build_scan(
                heap,
                index,
                index_info,
                true,
                progress,
                Some(table_row),
                (self as *mut TableScan<'_>).cast::<c_void>(),
                scan,
            )
        }
    }

    /// `table_index_build_range_scan` of `blocks` blocks from `start`, without the snapshot's
    /// visibility checks and without progress (ivfflat's sample of rows).
    ///
    /// # Safety
    ///
    /// As for [`run`](Self::run).
    pub unsafe fn run_range(
        &mut self,
        heap: pg_sys::Relation,
        index: pg_sys::Relation,
        index_info: *mut pg_sys::IndexInfo,
        start: pg_sys::BlockNumber,
        blocks: pg_sys::BlockNumber,
    ) -> f64 {
        // SAFETY: per the contract; the callback gets `self` back only during this call.
        unsafe {
            pg_sys::table_index_build_range_scan(
                heap,
                index,
                index_info,
                false,
                false,
                false,
                start,
                blocks,
                Some(table_row),
                (self as *mut TableScan<'_>).cast::<c_void>(),
                std::ptr::null_mut(),
            )
        }
    }
}

/// The `table_index_build_scan` callback of every scan: one row.
#[pg_guard]
unsafe extern "C-unwind" fn table_row(
    _index: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    _tuple_is_alive: bool,
    state: *mut c_void,
) {
    // SAFETY: state is the TableScan `run` passed, alive for the scan and not otherwise
    // borrowed during it; values and isnull have an entry for the one key column; tid points
    // to the row's (root) TID.
    let (scan, datum, is_null, tid) = unsafe {
        (
            &mut *state.cast::<TableScan<'_>>(),
            *values,
            *isnull,
            item_pointer_from(tid),
        )
    };
    if is_null {
        return;
    }
    let tmp_ctx = scan.tmp_ctx.value();
    let row = &mut scan.row;
    // SAFETY: the context is the scan's, alive for the whole scan; what the closure keeps is
    // Rust memory, so the reset frees only what Postgres allocated for this row.
    unsafe {
        PgMemoryContexts::For(tmp_ctx).switch_to(|_| row(datum, tid));
        pg_sys::MemoryContextReset(tmp_ctx);
    }
}
