//! `hnswhandler`: the index access method's entry point. It returns the `IndexAmRoutine` that
//! tells Postgres what the `hnsw` method can do (the same capabilities pgvector 0.8.6 declares:
//! ordering by a distance operator, one key column, three support functions, no strategies)
//! and which function implements each callback.

use crate::am::hnsw::build::{PHASE_INITIALIZE, PHASE_LOAD};
use crate::am::hnsw::{cost, options, scan, validate};
use pgrx::{pg_guard, pg_sys};
use std::ffi::{c_char, CStr};

crate::sql_function! {
    /// `hnswhandler(internal)`.
    fn hnswhandler(_call) {
        crate::fmgr::pointer_datum(am_routine())
    }
}

fn am_routine() -> *mut pg_sys::IndexAmRoutine {
    // SAFETY: palloc0 of the node's size in the current memory context (the caller's, as
    // GetIndexAmRoutine expects); every field not set below stays zero / NULL / false.
    let routine = unsafe {
        let node = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexAmRoutine>())
            .cast::<pg_sys::IndexAmRoutine>();
        (*node).type_ = pg_sys::NodeTag::T_IndexAmRoutine;
        &mut *node
    };

    routine.amstrategies = 0;
    routine.amsupport = 3;
    routine.amoptsprocnum = 0;
    routine.amcanorder = false;
    routine.amcanorderbyop = true;
    routine.amcanbackward = false;
    routine.amcanunique = false;
    routine.amcanmulticol = false;
    routine.amoptionalkey = true;
    routine.amsearcharray = false;
    routine.amsearchnulls = false;
    routine.amstorage = false;
    routine.amclusterable = false;
    routine.ampredlocks = false;
    routine.amcanparallel = false;
    routine.amcaninclude = false;
    routine.amusemaintenanceworkmem = false;
    routine.amparallelvacuumoptions = pg_sys::VACUUM_OPTION_PARALLEL_BULKDEL as u8;
    routine.amkeytype = pg_sys::InvalidOid;
    set_can_build_parallel(routine);

    routine.ambuild = Some(crate::am::hnsw::build::build);
    routine.ambuildempty = Some(crate::am::hnsw::build::build_empty);
    routine.aminsert = Some(crate::am::hnsw::insert::insert);
    routine.ambulkdelete = Some(crate::am::hnsw::vacuum::bulk_delete);
    routine.amvacuumcleanup = Some(crate::am::hnsw::vacuum::vacuum_cleanup);
    routine.amcostestimate = Some(cost::cost_estimate);
    routine.amoptions = Some(amoptions);
    routine.ambuildphasename = Some(build_phase_name);
    routine.amvalidate = Some(validate::validate);
    routine.ambeginscan = Some(scan::begin_scan);
    routine.amrescan = Some(scan::rescan);
    routine.amgettuple = Some(scan::get_tuple);
    routine.amendscan = Some(scan::end_scan);
    routine
}

/// pgvector declares parallel builds (Postgres 17 and later have the flag).
#[cfg(any(feature = "pg17", feature = "pg18"))]
fn set_can_build_parallel(routine: &mut pg_sys::IndexAmRoutine) {
    routine.amcanbuildparallel = true;
}

#[cfg(not(any(feature = "pg17", feature = "pg18")))]
fn set_can_build_parallel(_routine: &mut pg_sys::IndexAmRoutine) {}

/// `amoptions`.
#[pg_guard]
unsafe extern "C-unwind" fn amoptions(
    reloptions: pg_sys::Datum,
    validate: bool,
) -> *mut pg_sys::bytea {
    options::parse(reloptions, validate)
}

/// `ambuildphasename`: names shown in `pg_stat_progress_create_index.phase`.
#[pg_guard]
unsafe extern "C-unwind" fn build_phase_name(phase: i64) -> *mut c_char {
    let name: Option<&'static CStr> = match phase {
        PHASE_INITIALIZE => Some(c"initializing"),
        PHASE_LOAD => Some(c"loading tuples"),
        _ => None,
    };
    // Postgres only reads the string.
    name.map_or(std::ptr::null_mut(), |n| n.as_ptr().cast_mut())
}
