//! `EXPLAIN (ANALYZE, HNSW)` (PostgreSQL 18): an extension EXPLAIN option and the per-node
//! hook that prints a scan's counters under each index scan node of an hnsw index. The option
//! is known once the library is loaded: `LOAD 'vector'` or `session_preload_libraries` in a
//! new session.

#[cfg(feature = "pg18")]
mod pg18 {
    use crate::am::hnsw::scan;
    use crate::am::hnsw::scan_stats::ScanCounters;
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
    pg18::init();
}
