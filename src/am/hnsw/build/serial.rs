//! A build in one process, pgvector's format or quantized.

use crate::am::hnsw::build::params::BuildParams;
use crate::am::hnsw::build::quantized::{code_kind, fix_quantizer, row_value, scan_rows};
use crate::am::hnsw::build::sink::{Alone, GraphSink, Room};
use crate::am::hnsw::build::table::Table;
use crate::am::hnsw::insert::Levels;
use crate::am::shared::build::report_progress;
use crate::opclass::codes::CodeSpace;
use crate::opclass::{Coded, Exact, Support, Value};
use crate::storage::temp_file::TempFile;
use crate::storage::{ItemPointer, Relation};
use crate::stores::hnsw::build_graph::BuildGraph;
use crate::stores::hnsw::build_region::LocalRegion;
use pgrx::pg_sys;
use std::rc::Rc;

/// Builds `rel` from `table` in this process: the heap tuples seen and the tuples indexed.
/// Levels (and a quantized build's rotation) come from one draw of the session's `random()`,
/// so that after `setseed()` a build is repeatable.
///
/// # Safety
///
/// `table` is the build's.
pub unsafe fn build(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    table: Table,
) -> (f64, i64) {
    let mut levels = Levels::seeded_by_session_random();
    let m = checked.params.m;
    let Some(bits) = checked.quantization else {
        let exact = Exact(support.clone());
        let graph = BuildGraph::new(&exact, m, LocalRegion::default());
        let mut sink = GraphSink::new(rel, *checked, graph, Alone::new(checked));
        let mut insert = |value: Value, tid: ItemPointer| sink.insert(value, tid, levels.draw(m));
        // SAFETY: per the contract; a serial scan.
        let (reltuples, _) =
            unsafe { table.scan_values(rel, support, std::ptr::null_mut(), true, &mut insert) };
        let indexed = sink.room().rows();
        sink.finish();
        return (reltuples, indexed);
    };
    // SAFETY: per the contract; a serial scan.
    let scanned = unsafe {
        scan_rows(
            rel,
            support,
            checked,
            bits,
            table,
            TempFile::create(),
            std::ptr::null_mut(),
        )
    };
    let mut scanned = scanned;
    let count = scanned.rows.count();
    let quantizer = fix_quantizer(
        support,
        checked,
        bits,
        &scanned.sum,
        &mut scanned.rows,
        &mut levels,
    );
    // The table is read before any row is inserted: the rows to insert are known.
    report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, count as i64);
    let (dense, _) = code_kind(support, bits);
    let coded = Coded::new(
        support.clone(),
        Rc::new(CodeSpace::for_build(&quantizer, dense)),
    );
    let mut vector = vec![0u8; quantizer.vector_size as usize];
    let graph = BuildGraph::new(&coded, m, LocalRegion::default());
    let mut sink = GraphSink::new(rel, *checked, graph, Alone::new(checked))
        .with_vectors(quantizer, scanned.rows);
    for n in 0..count {
        pgrx::check_for_interrupts!();
        let (_, rows) = sink.vectors_mut().expect("a quantized build");
        let tid = rows.read(n, &mut vector);
        let level = levels.draw(m);
        sink.insert(row_value(&coded, &vector, n), tid, level);
    }
    let indexed = sink.room().rows();
    sink.finish();
    (scanned.reltuples, indexed)
}
