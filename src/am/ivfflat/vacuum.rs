//! `ambulkdelete`, as pgvector 0.8.6 does it: for every list, each page of its chain under a
//! cleanup lock (no scan has it pinned), its dead tuples deleted; the list's insert page then
//! moves to the first page that lost a tuple, so inserts fill the holes. Pages are never
//! unlinked. Cleanup only reports the number of pages
//! ([`crate::am::shared::routine::vacuum_cleanup`]).

use crate::am::shared::routine;
use crate::storage::{AccessStrategy, DeadTids, Fork, Relation, WriteMode};
use crate::stores::ivfflat::{entries, lists};
use pgrx::{pg_guard, pg_sys};
use std::ffi::c_void;
use vector_formats::page::INVALID_BLOCK_NUMBER;

/// `ambulkdelete`.
#[pg_guard]
pub unsafe extern "C-unwind" fn bulk_delete(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
    callback: pg_sys::IndexBulkDeleteCallback,
    callback_state: *mut c_void,
) -> *mut pg_sys::IndexBulkDeleteResult {
    let stats = routine::bulk_delete_result(stats);
    // SAFETY: Postgres passes a valid IndexVacuumInfo whose index is open and locked for the
    // whole call; the callback and its state are this call's.
    let (rel, dead) = unsafe {
        (
            Relation::from_raw((*info).index, Fork::Main),
            DeadTids::new(callback, callback_state),
        )
    };
    let strategy = AccessStrategy::bulk_read();
    let mut all = Vec::new();
    lists::for_each_list(rel, |list, _| all.push(list));
    for list in all {
        let vacuumed = entries::vacuum_list(
            rel,
            list.start_page,
            &strategy,
            |tid| dead.is_dead(tid),
            crate::storage::vacuum_delay_point,
        );
        // SAFETY: stats is the result this call returns, valid for its duration.
        unsafe {
            (*stats).tuples_removed += vacuumed.removed as f64;
            (*stats).num_index_tuples += vacuumed.kept as f64;
        }
        if let Some(first) = vacuumed.first_freed {
            lists::update_list(
                rel,
                WriteMode::Wal,
                list.location,
                first,
                INVALID_BLOCK_NUMBER,
                INVALID_BLOCK_NUMBER,
            );
        }
    }
    stats
}
