//! `ambulkdelete`, as pgvector 0.8.6 does it.
//!
//! Bulk delete runs [`vector_hnsw::vacuum`] over the pages ([`VacuumGraph`]): drop the heap
//! TIDs the callback reports dead, repair every element that links to an element left without
//! heap TIDs (the entry point first, replacing it if it is being deleted), wait for in-flight
//! inserts and scans, confirm nothing links to those elements any more, then mark them deleted
//! so inserts can reuse their space. `hnsw.vacuum_repair = local` (the default) repairs from
//! the neighbors at hand; `search` searches anew, as pgvector ([`vector_hnsw::RepairMode`]).
//! Cleanup only reports the number of pages ([`crate::am::shared::routine::vacuum_cleanup`]).

use crate::am::hnsw::options;
use crate::am::shared::routine;
use crate::opclass::Compare;
use crate::storage::io::{ChainHints, IoMethod, RelationBlocks};
use crate::storage::{DeadTids, Fork, Relation, WriteMode};
use crate::stores::hnsw::page_graph::{AnyPageGraph, PageGraph};
use crate::stores::hnsw::page_graph_vacuum::VacuumGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::{pg_guard, pg_sys};
use std::ffi::c_void;
use vector_hnsw::GraphParams;
use vector_io::BlockSource;

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
    // whole call.
    let rel = unsafe { Relation::from_raw((*info).index, Fork::Main) };
    // SAFETY: callback and its state are this call's, used only during it.
    let dead = unsafe { DeadTids::new(callback, callback_state) };
    // SAFETY: stats is this call's, used only during it.
    unsafe {
        match AnyPageGraph::open(rel, options::graph_settings(rel)) {
            AnyPageGraph::Exact(graph) => vacuum_graph(graph, dead, stats),
            AnyPageGraph::Coded(graph) => vacuum_graph(graph, dead, stats),
        }
    }
    stats
}

/// Vacuums `graph`: the dead heap TIDs out, the graph repaired around the elements left without
/// any, those marked deleted.
///
/// # Safety
///
/// `stats` points to the statistics `ambulkdelete` returns, valid during the call.
unsafe fn vacuum_graph<C: Compare>(
    graph: PageGraph<C>,
    dead: DeadTids,
    stats: *mut pg_sys::IndexBulkDeleteResult,
) {
    let rel = graph.relation();
    let params = GraphParams {
        m: graph.m(),
        ef_construction: graph.ef_construction(),
    };
    // Read-ahead along the page chain: `maintenance_io_concurrency` runs of up to
    // `io_combine_limit` blocks, unless `hnsw.io_method` is off.
    let hints = ChainHints::new(
        graph.io_settings().method != IoMethod::Off,
        RelationBlocks::new(rel, true).platform().io_concurrency,
        Relation::combine_limit(),
    )
    .for_sequential_pass();
    // SAFETY: the dead TIDs' callback and stats are ambulkdelete's, used only during it.
    let mut store = unsafe {
        VacuumGraph::new(
            PageGraphWriter::new(graph, WriteMode::Wal),
            dead,
            stats,
            hints,
        )
    };
    if vector_hnsw::vacuum_with(&mut store, &params, options::vacuum_repair()).is_err() {
        pgrx::error!("hnsw graph not repaired");
    }
}
