//! `ivfflathandler`: the index access method's entry point. It returns the `IndexAmRoutine`
//! with pgvector 0.8.6's capabilities (shared with hnsw) and five support functions, and which
//! function implements each callback.

use crate::am::ivfflat::build::{PHASE_ASSIGN, PHASE_KMEANS, PHASE_LOAD};
use crate::am::ivfflat::{build, cost, insert, options, scan, vacuum};
use crate::am::shared::routine;
use pgrx::{pg_guard, pg_sys};
use std::ffi::{c_char, CStr};

crate::sql_function! {
    /// `ivfflathandler(internal)`.
    fn ivfflathandler(_call) {
        crate::fmgr::pointer_datum(am_routine())
    }
}

fn am_routine() -> *mut pg_sys::IndexAmRoutine {
    let routine = routine::new(5);
    routine.ambuild = Some(build::build);
    routine.ambuildempty = Some(build::build_empty);
    routine.aminsert = Some(insert::insert);
    routine.ambulkdelete = Some(vacuum::bulk_delete);
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
        routine::PHASE_INITIALIZE => Some(c"initializing"),
        PHASE_KMEANS => Some(c"performing k-means"),
        PHASE_ASSIGN => Some(c"assigning tuples"),
        PHASE_LOAD => Some(c"loading tuples"),
        _ => None,
    };
    // Postgres only reads the string.
    name.map_or(std::ptr::null_mut(), |n| n.as_ptr().cast_mut())
}
