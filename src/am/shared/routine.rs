//! What both access methods declare to Postgres (pgvector 0.8.6 gives hnsw and ivfflat the
//! same capabilities: ordering by a distance operator, one key column, no strategies, parallel
//! builds, parallel bulk delete), and the callbacks they share: `amvalidate` and
//! `amvacuumcleanup`.

use crate::storage::{Fork, Relation};
use pgrx::{pg_guard, pg_sys};

/// `PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE`: the build phase both methods start in.
pub const PHASE_INITIALIZE: i64 = 1;

/// A new `IndexAmRoutine` with pgvector's capabilities and `amsupport` support functions; the
/// caller sets the callbacks.
pub fn new(amsupport: u16) -> &'static mut pg_sys::IndexAmRoutine {
    // SAFETY: palloc0 of the node's size in the current memory context (the caller's, as
    // GetIndexAmRoutine expects); every field not set below stays zero / NULL / false.
    let routine = unsafe {
        let node = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexAmRoutine>())
            .cast::<pg_sys::IndexAmRoutine>();
        (*node).type_ = pg_sys::NodeTag::T_IndexAmRoutine;
        &mut *node
    };
    routine.amstrategies = 0;
    routine.amsupport = amsupport;
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
    routine
}

/// pgvector declares parallel builds (Postgres 17 and later have the flag).
#[cfg(any(feature = "pg17", feature = "pg18"))]
fn set_can_build_parallel(routine: &mut pg_sys::IndexAmRoutine) {
    routine.amcanbuildparallel = true;
}

#[cfg(not(any(feature = "pg17", feature = "pg18")))]
fn set_can_build_parallel(_routine: &mut pg_sys::IndexAmRoutine) {}

/// `amvalidate`: pgvector 0.8.6 accepts every operator class of both methods without looking
/// at it (their support functions are resolved, and their absence reported, when an index is
/// built or scanned), so this does the same.
#[pg_guard]
pub unsafe extern "C-unwind" fn validate(_opclass: pg_sys::Oid) -> bool {
    true
}

/// `amvacuumcleanup`: reports the number of pages, when bulk delete ran.
#[pg_guard]
pub unsafe extern "C-unwind" fn vacuum_cleanup(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    // SAFETY: Postgres passes a valid IndexVacuumInfo whose index is open and locked.
    let (analyze_only, index) = unsafe { ((*info).analyze_only, (*info).index) };
    // Nothing to report when bulk delete did not run (stats is NULL then).
    if analyze_only || stats.is_null() {
        return stats;
    }
    // SAFETY: as above; stats is the result bulk delete returned.
    unsafe {
        let rel = Relation::from_raw(index, Fork::Main);
        (*stats).num_pages = rel.nblocks();
    }
    stats
}

/// The `IndexBulkDeleteResult` to fill: the one Postgres passed, or a new zeroed one.
pub fn bulk_delete_result(
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    if !stats.is_null() {
        return stats;
    }
    // SAFETY: a zeroed result in the current memory context, returned to Postgres.
    unsafe {
        pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBulkDeleteResult>())
            .cast::<pg_sys::IndexBulkDeleteResult>()
    }
}
