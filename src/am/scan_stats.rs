//! What an index scan's graph walk did: hops, elements visited and its reads (see
//! [`crate::storage::io`]).
//!
//! * On PostgreSQL 18, `EXPLAIN (ANALYZE, HNSW)` prints them under each index scan node of an
//!   hnsw index (an extension EXPLAIN option and the per-node hook). The option is known once
//!   the library is loaded: `LOAD 'vector'` or `session_preload_libraries` in a new session.
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

/// The `EXPLAIN (HNSW)` option and the per-node hook printing the counters (PG 18).
#[cfg(feature = "pg18")]
pub mod explain {
    use super::ScanCounters;
    use crate::am::scan;
    use pgrx::pg_sys;
    use std::ffi::{c_char, CString};

    static mut EXTENSION_ID: i32 = -1;
    static mut PREVIOUS_PER_NODE_HOOK: pg_sys::explain_per_node_hook_type = None;

    /// Registers the option and installs the hook (from `_PG_init`).
    pub fn init() {
        // SAFETY: runs once per backend from _PG_init, before any EXPLAIN; the name and the
        // handler are static; the previous hook is kept and called first.
        unsafe {
            EXTENSION_ID = pg_sys::GetExplainExtensionId(c"vector".as_ptr());
            pg_sys::RegisterExtensionExplainOption(c"hnsw".as_ptr(), Some(apply_option));
            PREVIOUS_PER_NODE_HOOK = pg_sys::explain_per_node_hook;
            pg_sys::explain_per_node_hook = Some(print_node_counters);
        }
    }

    /// `HNSW [boolean]`: remembers the choice in the EXPLAIN state.
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn apply_option(
        es: *mut pg_sys::ExplainState,
        opt: *mut pg_sys::DefElem,
        _pstate: *mut pg_sys::ParseState,
    ) {
        // SAFETY: Postgres passes the EXPLAIN state being built and the option; the flag is
        // palloc'd in the current (statement) context, which outlives the EXPLAIN.
        unsafe {
            let on = pg_sys::defGetBoolean(opt);
            let flag = pg_sys::palloc0(std::mem::size_of::<bool>()).cast::<bool>();
            *flag = on;
            pg_sys::SetExplainExtensionState(es, EXTENSION_ID, flag.cast());
        }
    }

    /// Whether `EXPLAIN (HNSW)` was asked for.
    ///
    /// # Safety
    ///
    /// `es` is a live EXPLAIN state.
    unsafe fn wanted(es: *mut pg_sys::ExplainState) -> bool {
        // SAFETY: per the contract; the state is null or the flag set by apply_option.
        unsafe {
            let flag = pg_sys::GetExplainExtensionState(es, EXTENSION_ID).cast::<bool>();
            !flag.is_null() && *flag
        }
    }

    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn print_node_counters(
        planstate: *mut pg_sys::PlanState,
        ancestors: *mut pg_sys::List,
        relationship: *const c_char,
        plan_name: *const c_char,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: Postgres passes live plan and EXPLAIN states; an index scan node's scan
        // descriptor is null or open until the executor ends, which is after EXPLAIN prints.
        unsafe {
            if let Some(previous) = PREVIOUS_PER_NODE_HOOK {
                previous(planstate, ancestors, relationship, plan_name, es);
            }
            if !(*es).analyze || !wanted(es) {
                return;
            }
            if (*planstate).type_ != pg_sys::NodeTag::T_IndexScanState {
                return;
            }
            let desc = (*planstate.cast::<pg_sys::IndexScanState>()).iss_ScanDesc;
            if let Some(counters) = scan::counters_of(desc) {
                print_counters(&counters, es);
            }
        }
    }

    /// One line in text format, an "HNSW" group in the others.
    ///
    /// # Safety
    ///
    /// `es` is a live EXPLAIN state being printed.
    unsafe fn print_counters(c: &ScanCounters, es: *mut pg_sys::ExplainState) {
        let integers = [
            ("Hops", c.hops),
            ("Visited", c.visited),
            ("Blocks", c.io.blocks),
            ("Hits", c.io.hits),
            ("Reads", c.io.reads),
            ("Prefetched Reads", c.io.prefetched),
            ("Unused Prefetches", c.io.unused),
        ];
        let mean = c.io.mean_in_flight();
        // SAFETY: per the contract; strings passed are NUL-terminated and outlive the calls.
        unsafe {
            if (*es).format == pg_sys::ExplainFormat::EXPLAIN_FORMAT_TEXT {
                pg_sys::ExplainIndentText(es);
                let line = CString::new(format!(
                    "HNSW: hops={} visited={} blocks={} hits={} reads={} prefetched={} \
                     unused={} in-flight={:.1} heap-prefetches={}\n",
                    c.hops,
                    c.visited,
                    c.io.blocks,
                    c.io.hits,
                    c.io.reads,
                    c.io.prefetched,
                    c.io.unused,
                    mean,
                    c.heap_prefetches
                ))
                .expect("no NUL in the line");
                pg_sys::appendStringInfoString((*es).str_, line.as_ptr());
                return;
            }
            pg_sys::ExplainOpenGroup(c"HNSW".as_ptr(), c"HNSW".as_ptr(), true, es);
            for (label, value) in integers {
                let label = CString::new(label).expect("static label");
                pg_sys::ExplainPropertyInteger(label.as_ptr(), std::ptr::null(), value as i64, es);
            }
            pg_sys::ExplainPropertyFloat(c"Mean In Flight".as_ptr(), std::ptr::null(), mean, 1, es);
            pg_sys::ExplainPropertyInteger(
                c"Heap Prefetches".as_ptr(),
                std::ptr::null(),
                c.heap_prefetches as i64,
                es,
            );
            pg_sys::ExplainCloseGroup(c"HNSW".as_ptr(), c"HNSW".as_ptr(), true, es);
        }
    }
}

/// Installs the EXPLAIN option where the server has extension options (PG 18).
pub fn init() {
    #[cfg(feature = "pg18")]
    explain::init();
}
