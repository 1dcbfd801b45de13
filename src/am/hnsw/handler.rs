//! `hnswhandler`: the index access method's entry point. It returns the `IndexAmRoutine` that
//! tells Postgres what the `hnsw` method can do (pgvector 0.8.6's capabilities, shared with
//! ivfflat, and three support functions) and which function implements each callback.

use crate::am::hnsw::build::PHASE_LOAD;
use crate::am::hnsw::{cost, options, scan};
use crate::am::shared::routine;
use crate::am::shared::routine::PHASE_INITIALIZE;
use pgrx::{pg_guard, pg_sys};
use std::ffi::{c_char, CStr};

crate::sql_function! {
    /// `hnswhandler(internal)`.
    fn hnswhandler(_call) {
        crate::fmgr::pointer_datum(am_routine())
    }
}

fn am_routine() -> *mut pg_sys::IndexAmRoutine {
    let routine = routine::new(3);
    routine.ambuild = Some(crate::am::hnsw::build::build);
    routine.ambuildempty = Some(crate::am::hnsw::build::build_empty);
    routine.aminsert = Some(crate::am::hnsw::insert::insert);
    routine.ambulkdelete = Some(crate::am::hnsw::vacuum::bulk_delete);
    routine.amvacuumcleanup = Some(routine::vacuum_cleanup);
    routine.amcostestimate = Some(cost::cost_estimate);
    routine.amoptions = Some(amoptions);
    routine.ambuildphasename = Some(build_phase_name);
    routine.amvalidate = Some(routine::validate);
    routine.ambeginscan = Some(scan::begin_scan);
    routine.amrescan = Some(scan::rescan);
    routine.amgettuple = Some(scan::get_tuple);
    routine.amendscan = Some(scan::end_scan);
    routine
}

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
