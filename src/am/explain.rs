//! `EXPLAIN (ANALYZE, HNSW)` and `EXPLAIN (ANALYZE, IVFFLAT)` (PostgreSQL 18): extension
//! EXPLAIN options and the per-node hook that prints a scan's counters
//! ([`crate::am::shared::scan_counters`]) under each index scan node of an index of that
//! method. The options are known once the library is loaded: `LOAD 'vector'` or
//! `session_preload_libraries` in a new session.

#[cfg(feature = "pg18")]
mod pg18 {
    use crate::am::shared::scan_counters::{text_line, ScanStats, Stat};
    use crate::am::{hnsw, ivfflat};
    use pgrx::pg_sys;
    use std::ffi::{c_char, CString};

    static mut EXTENSION_ID: i32 = -1;
    static mut PREVIOUS_PER_NODE_HOOK: pg_sys::explain_per_node_hook_type = None;

    /// Which methods' counters an EXPLAIN asked for (its extension state).
    #[repr(C)]
    #[derive(Default)]
    struct Wanted {
        hnsw: bool,
        ivfflat: bool,
    }

    /// Registers the options and installs the hook (from `_PG_init`).
    pub fn init() {
        // SAFETY: runs once per backend from _PG_init, before any EXPLAIN; the names and the
        // handlers are static; the previous hook is kept and called first.
        unsafe {
            EXTENSION_ID = pg_sys::GetExplainExtensionId(c"vector".as_ptr());
            pg_sys::RegisterExtensionExplainOption(c"hnsw".as_ptr(), Some(apply_hnsw));
            pg_sys::RegisterExtensionExplainOption(c"ivfflat".as_ptr(), Some(apply_ivfflat));
            PREVIOUS_PER_NODE_HOOK = pg_sys::explain_per_node_hook;
            pg_sys::explain_per_node_hook = Some(print_node_counters);
        }
    }

    /// The EXPLAIN's state, made on first use.
    ///
    /// # Safety
    ///
    /// `es` is a live EXPLAIN state being set up.
    unsafe fn wanted_mut(es: *mut pg_sys::ExplainState) -> *mut Wanted {
        // SAFETY: per the contract; the state is null or ours, palloc'd in the current
        // (statement) context, which outlives the EXPLAIN.
        unsafe {
            let mut state = pg_sys::GetExplainExtensionState(es, EXTENSION_ID).cast::<Wanted>();
            if state.is_null() {
                state = pg_sys::palloc0(size_of::<Wanted>()).cast::<Wanted>();
                pg_sys::SetExplainExtensionState(es, EXTENSION_ID, state.cast());
            }
            state
        }
    }

    /// `HNSW [boolean]`.
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn apply_hnsw(
        es: *mut pg_sys::ExplainState,
        opt: *mut pg_sys::DefElem,
        _pstate: *mut pg_sys::ParseState,
    ) {
        // SAFETY: Postgres passes the EXPLAIN state being built and the option.
        unsafe { (*wanted_mut(es)).hnsw = pg_sys::defGetBoolean(opt) }
    }

    /// `IVFFLAT [boolean]`.
    #[pgrx::pg_guard]
    unsafe extern "C-unwind" fn apply_ivfflat(
        es: *mut pg_sys::ExplainState,
        opt: *mut pg_sys::DefElem,
        _pstate: *mut pg_sys::ParseState,
    ) {
        // SAFETY: as above.
        unsafe { (*wanted_mut(es)).ivfflat = pg_sys::defGetBoolean(opt) }
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
            let wanted = pg_sys::GetExplainExtensionState(es, EXTENSION_ID).cast::<Wanted>();
            if !(*es).analyze || wanted.is_null() {
                return;
            }
            if (*planstate).type_ != pg_sys::NodeTag::T_IndexScanState {
                return;
            }
            let desc = (*planstate.cast::<pg_sys::IndexScanState>()).iss_ScanDesc;
            if (*wanted).hnsw {
                if let Some(counters) = hnsw::scan::counters_of(desc) {
                    print_counters(&counters, es);
                }
            }
            if (*wanted).ivfflat {
                if let Some(counters) = ivfflat::scan::counters_of(desc) {
                    print_counters(&counters, es);
                }
            }
        }
    }

    /// One line in text format, a group in the others.
    ///
    /// # Safety
    ///
    /// `es` is a live EXPLAIN state being printed.
    unsafe fn print_counters<S: ScanStats>(stats: &S, es: *mut pg_sys::ExplainState) {
        // SAFETY: per the contract; strings passed are NUL-terminated and outlive the calls.
        unsafe {
            if (*es).format == pg_sys::ExplainFormat::EXPLAIN_FORMAT_TEXT {
                pg_sys::ExplainIndentText(es);
                let line = CString::new(text_line(stats)).expect("no NUL in the line");
                pg_sys::appendStringInfoString((*es).str_, line.as_ptr());
                return;
            }
            pg_sys::ExplainOpenGroup(S::GROUP.as_ptr(), S::GROUP.as_ptr(), true, es);
            for field in stats.fields() {
                match field.value {
                    Stat::Count(n) => pg_sys::ExplainPropertyInteger(
                        field.label.as_ptr(),
                        std::ptr::null(),
                        n as i64,
                        es,
                    ),
                    Stat::Mean(x) => pg_sys::ExplainPropertyFloat(
                        field.label.as_ptr(),
                        std::ptr::null(),
                        x,
                        1,
                        es,
                    ),
                }
            }
            pg_sys::ExplainCloseGroup(S::GROUP.as_ptr(), S::GROUP.as_ptr(), true, es);
        }
    }
}

/// Installs the EXPLAIN options where the server has extension options (PG 18).
pub fn init() {
    #[cfg(feature = "pg18")]
    pg18::init();
}
