//! `ambuild` and `ambuildempty` of hnsw: the one place that decides how a build runs.
//!
//! * [`params`]: the options and settings a build reads once;
//! * [`table`]: the scan that hands each indexable value of the table to the build;
//! * [`sink`]: where the values go, the graph in memory and then the pages, and who writes the
//!   graph out;
//! * [`serial`] and [`parallel`]: one process, or a leader and workers around one shared graph;
//! * [`quantized`] and [`shared_rows`]: what a quantized build adds (its rows in temporary
//!   files, the quantizer fixed from them, and in parallel their sharing).
//!
//! Pages are written without WAL; when the relation needs WAL (and always for the INIT fork of
//! `ambuildempty`) every page is logged once at the end (`log_newpage_range`).
//! `pg_stat_progress_create_index` shows the "loading tuples" phase, the table's blocks read
//! and the tuples inserted (and, for a quantized build, how many it will insert).

pub mod parallel;
pub mod params;
pub mod quantized;
pub mod serial;
pub mod shared_rows;
pub mod sink;
pub mod table;

use crate::am::hnsw::build::params::BuildParams;
use crate::am::hnsw::build::quantized::code_kind;
use crate::am::hnsw::build::table::Table;
use crate::am::shared::build::report_progress;
use crate::opclass::{Method, Support};
use crate::storage::{Fork, Relation};
use pgrx::{pg_guard, pg_sys};

/// pgvector's `PROGRESS_HNSW_PHASE_LOAD`.
pub const PHASE_LOAD: i64 = 2;

/// Builds `rel` from `table`: in parallel when the table gets workers, else in this process;
/// in pgvector's format or quantized, as the index's options say. The heap tuples seen and the
/// tuples indexed.
///
/// # Safety
///
/// `rel` is the index being built and `table` its build's (or [`Table::EMPTY`]).
unsafe fn run(rel: Relation, table: Table) -> (f64, i64) {
    let support = Support::for_index(rel, Method::Hnsw);
    let checked = BuildParams::read(rel, &support);
    if let Some(bits) = checked.quantization {
        code_kind(&support, bits);
    }
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    // SAFETY: per the contract.
    unsafe {
        match parallel::build(rel, &support, &checked, table) {
            Some(counts) => counts,
            None => serial::build(rel, &support, &checked, table),
        }
    }
}

/// Logs every page once, when the relation needs WAL or it is the INIT fork.
fn log_relation(rel: Relation) {
    if rel.needs_wal() || rel.fork() == Fork::Init {
        rel.log_newpage_range();
    }
}

/// `ambuild`.
#[pg_guard]
pub unsafe extern "C-unwind" fn build(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> *mut pg_sys::IndexBuildResult {
    // SAFETY: Postgres hands ambuild the open, locked heap and index for the whole call.
    let rel = unsafe { Relation::from_raw(index, Fork::Main) };
    // SAFETY: per ambuild's contract.
    let (reltuples, indtuples) = unsafe { run(rel, Table { heap, index_info }) };
    log_relation(rel);
    // SAFETY: a zeroed IndexBuildResult in the current memory context, returned to Postgres.
    unsafe {
        let result = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBuildResult>())
            .cast::<pg_sys::IndexBuildResult>();
        (*result).heap_tuples = reltuples;
        (*result).index_tuples = indtuples as f64;
        result
    }
}

/// `ambuildempty`: the INIT fork of an unlogged index, an empty graph.
#[pg_guard]
pub unsafe extern "C-unwind" fn build_empty(index: pg_sys::Relation) {
    // SAFETY: Postgres hands ambuildempty the open, locked index for the whole call.
    let rel = unsafe { Relation::from_raw(index, Fork::Init) };
    // SAFETY: no table: nothing is scanned.
    unsafe { run(rel, Table::EMPTY) };
    log_relation(rel);
}
