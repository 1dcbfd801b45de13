//! What an index scan's graph walk did: hops, elements visited and its reads (see
//! [`crate::storage::io`]).
//!
//! * On PostgreSQL 18, `EXPLAIN (ANALYZE, HNSW)` prints them under each index scan node of an
//!   hnsw index ([`crate::am::explain`]).
//! * On every version, `hnsw_last_scan_stats()` returns them for the last hnsw scan that ended
//!   in this session.

use crate::storage::io::IoCounters;
use pgrx::pg_sys;
use std::cell::Cell;

/// Counters of one index scan (all its rescans together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScanCounters {
    /// Candidates expanded (neighbor lists read).
    pub hops: u64,
    /// Elements whose distance was computed.
    pub visited: u64,
    pub io: IoCounters,
    /// Table blocks requested ahead of the rows returned (cold scans only).
    pub heap_prefetches: u64,
}

thread_local! {
    static LAST_SCAN: Cell<Option<ScanCounters>> = const { Cell::new(None) };
}

/// Records the counters of a scan that ended.
pub fn record_finished_scan(counters: ScanCounters) {
    LAST_SCAN.with(|last| last.set(Some(counters)));
}

crate::sql_function! {
    /// `hnsw_last_scan_stats()`: the counters of the last hnsw scan that ended in this
    /// session, or a row of NULLs if there was none.
    fn hnsw_last_scan_stats(call) {
        let last = LAST_SCAN.with(Cell::get);
        let values = last.map(|c| {
            [
                c.hops as i64,
                c.visited as i64,
                c.io.blocks as i64,
                c.io.hits as i64,
                c.io.reads as i64,
                c.io.prefetched as i64,
                c.io.unused as i64,
            ]
        });
        let mean_in_flight = last.map(|c| c.io.mean_in_flight());
        let heap_prefetches = last.map(|c| c.heap_prefetches as i64);
        // SAFETY: the SQL declaration returns a record of seven bigint columns, one float8
        // and one bigint column; the tuple is built in the current memory context and
        // returned as a datum.
        unsafe { composite_result(call.raw(), values, mean_in_flight, heap_prefetches) }
    }
}

/// Forms the function's result row.
///
/// # Safety
///
/// `fcinfo` is the live call of a function declared to return 7 bigints, a float8, a bigint.
unsafe fn composite_result(
    fcinfo: pg_sys::FunctionCallInfo,
    values: Option<[i64; 7]>,
    mean_in_flight: Option<f64>,
    heap_prefetches: Option<i64>,
) -> pg_sys::Datum {
    // SAFETY: per the contract; get_call_result_type resolves the OUT parameters into a tuple
    // descriptor, which BlessTupleDesc registers so the datum can be returned.
    unsafe {
        let mut desc: pg_sys::TupleDesc = std::ptr::null_mut();
        let kind = pg_sys::get_call_result_type(fcinfo, std::ptr::null_mut(), &mut desc);
        if kind != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE {
            pgrx::error!("hnsw_last_scan_stats must return a record");
        }
        let desc = pg_sys::BlessTupleDesc(desc);
        let mut datums = [pg_sys::Datum::from(0usize); 9];
        let mut nulls = [true; 9];
        if let (Some(values), Some(mean), Some(heap)) = (values, mean_in_flight, heap_prefetches) {
            for (i, v) in values.iter().enumerate() {
                datums[i] = pg_sys::Datum::from(*v);
                nulls[i] = false;
            }
            datums[7] = crate::fmgr::float8_datum(mean);
            datums[8] = pg_sys::Datum::from(heap);
            nulls[7] = false;
            nulls[8] = false;
        }
        let tuple = pg_sys::heap_form_tuple(desc, datums.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)
    }
}
