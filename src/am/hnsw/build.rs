//! `ambuild` and `ambuildempty`: building an index, as pgvector 0.8.6 does.
//!
//! 1. Every heap tuple is inserted into a graph held in memory ([`BuildGraph`]) while what
//!    pgvector would have allocated for it stays below `maintenance_work_mem`.
//! 2. The graph is then written to pages in pgvector's layout and order
//!    ([`crate::stores::hnsw::build_pages`]).
//! 3. If memory ran out, the build says so with pgvector's NOTICE and inserts the remaining
//!    tuples one by one into the pages, exactly like `aminsert` but without WAL.
//!
//! When the table gets parallel workers, they and the leader insert into one graph in the
//! build's dynamic shared memory instead ([`super::build_parallel`]); the same three steps
//! apply, and whichever participant finds the graph full writes it out.
//!
//! Pages are written without WAL; when the relation needs WAL (and always for the INIT fork of
//! `ambuildempty`) every page is logged once at the end (`log_newpage_range`).
//! `pg_stat_progress_create_index` shows the "loading tuples" phase and the tuples inserted.

use crate::am::hnsw::insert::{insert_on_disk, Levels};
use crate::am::hnsw::options;
use crate::am::hnsw::{build_parallel, build_quantized};
use crate::opclass::{self, Method, Support, Value};
use crate::storage::{item_pointer_from, Fork, ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, LocalRegion};
use crate::stores::hnsw::build_pages::{write_graph, Placement, VectorOutput};
use crate::stores::hnsw::page_graph::PageGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::{pg_guard, pg_sys, PgMemoryContexts};
use std::ffi::c_void;
use vector_hnsw::storage::NewElement;
use vector_hnsw::GraphParams;

/// pgvector's `PROGRESS_HNSW_PHASE_LOAD`.
pub const PHASE_LOAD: i64 = 2;

/// The index's parameters, checked as pgvector checks them before a build.
#[derive(Clone, Copy)]
pub struct BuildParams {
    pub params: GraphParams,
    pub dimensions: u32,
    /// `hnsw.build_placement` when the build started.
    pub placement: Placement,
}

pub fn check_build(rel: Relation, support: &Support) -> BuildParams {
    let dimensions = opclass::check_build_column(rel, support.type_info(), Method::Hnsw);
    let m = options::m(rel);
    let ef_construction = options::ef_construction(rel);
    options::check_build_options(m, ef_construction);
    BuildParams {
        params: GraphParams { m, ef_construction },
        dimensions: dimensions as u32,
        placement: options::build_placement(),
    }
}

pub fn report_progress(param: u32, value: i64) {
    // SAFETY: updates this backend's progress slot; a no-op when no command is tracked.
    unsafe { pg_sys::pgstat_progress_update_param(param as i32, value) }
}

/// `maintenance_work_mem` in bytes.
pub fn maintenance_work_mem() -> usize {
    // SAFETY: a plain int GUC of the server, read by value.
    let kb = unsafe { pg_sys::maintenance_work_mem };
    usize::try_from(kb).unwrap_or(0).saturating_mul(1024)
}

/// Writes the in-memory graph to the pages (and a quantized index's vectors), after
/// pgvector's NOTICE that it no longer fits into `what` after `tuples` tuples.
pub fn flush_graph<R: crate::stores::hnsw::build_graph::Region>(
    rel: Relation,
    graph: &BuildGraph<'_, R>,
    checked: &BuildParams,
    tuples: i64,
    why: NoLongerFits,
    vectors: Option<&mut VectorOutput<'_>>,
) {
    let (what, detail, hint) = match why {
        NoLongerFits::MaintenanceWorkMem => (
            "maintenance_work_mem",
            "Building will take significantly more time.",
            "Increase maintenance_work_mem to speed up builds.",
        ),
        NoLongerFits::Memory => (
            "memory",
            "The server could not allocate more memory for it; building will take significantly more time.",
            "Give the server more memory, or lower maintenance_work_mem, to speed up builds.",
        ),
    };
    pg_sys::panic::ErrorReport::new(
        pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        format!("hnsw graph no longer fits into {what} after {tuples} tuples"),
        "build",
    )
    .set_detail(detail)
    .set_hint(hint)
    .report(pgrx::PgLogLevel::NOTICE);
    write_graph(
        rel,
        graph,
        checked.params,
        checked.dimensions,
        checked.placement,
        vectors,
    );
}

/// Why a build's graph moves to the pages.
#[derive(Clone, Copy)]
pub enum NoLongerFits {
    /// What pgvector would have allocated reached `maintenance_work_mem`.
    MaintenanceWorkMem,
    /// The server could not give the memory.
    Memory,
}

/// One participant's heap scan: each indexable value goes to `insert`.
pub struct ScanState<'a> {
    pub support: &'a Support,
    /// Reset after each tuple.
    tmp_ctx: PgMemoryContexts,
    /// Tuples this participant indexed.
    pub indtuples: i64,
    insert: &'a mut dyn FnMut(Value, ItemPointer),
}

impl<'a> ScanState<'a> {
    pub fn new(support: &'a Support, insert: &'a mut dyn FnMut(Value, ItemPointer)) -> Self {
        ScanState {
            support,
            tmp_ctx: PgMemoryContexts::new("Hnsw build temporary context"),
            indtuples: 0,
            insert,
        }
    }

    /// Scans the table (all of it, or a parallel scan's share); returns the heap tuples seen.
    ///
    /// # Safety
    ///
    /// `heap`, `index` and `index_info` are the build's; `scan` is null or a parallel scan of
    /// `heap`.
    pub unsafe fn scan(
        &mut self,
        heap: pg_sys::Relation,
        index: pg_sys::Relation,
        index_info: *mut pg_sys::IndexInfo,
        scan: pg_sys::TableScanDesc,
        progress: bool,
    ) -> f64 {
        // SAFETY: per the contract; the callback gets `self` back and only uses it during this
        // call.
        unsafe {
            pg_sys::table_index_build_scan(
                heap,
                index,
                index_info,
                true,
                progress,
                Some(build_callback),
                (self as *mut ScanState<'_>).cast::<c_void>(),
                scan,
            )
        }
    }
}

/// `table_index_build_scan` callback: one heap tuple.
#[pg_guard]
unsafe extern "C-unwind" fn build_callback(
    _index: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    _tuple_is_alive: bool,
    state: *mut c_void,
) {
    // SAFETY: state is the ScanState `scan` passed, alive for its duration and not otherwise
    // borrowed while the scan runs; values and isnull have one entry (one key column) and tid
    // points to the tuple's TID.
    let (state, datum, is_null, tid) = unsafe {
        (
            &mut *state.cast::<ScanState<'_>>(),
            *values,
            *isnull,
            item_pointer_from(tid),
        )
    };
    if is_null {
        return;
    }
    // Postgres allocations made for this tuple go to the build's temporary context, reset after
    // each tuple (Rust allocations, such as the graph, are unaffected).
    let tmp_ctx = state.tmp_ctx.value();
    // SAFETY: the context is ours and alive for the whole build; the value copied out of the
    // datum is a Rust allocation, so resetting the context frees only what Postgres allocated.
    let inserted = unsafe {
        let inserted =
            PgMemoryContexts::For(tmp_ctx).switch_to(|_| match state.support.index_value(datum) {
                Some(value) => {
                    (state.insert)(value, tid);
                    true
                }
                None => false,
            });
        pg_sys::MemoryContextReset(tmp_ctx);
        inserted
    };
    state.indtuples += i64::from(inserted);
}

/// Where the tuples of a serial build are.
enum Phase<'s> {
    /// Still in memory.
    Memory(BuildGraph<'s, LocalRegion>),
    /// Written to pages; further tuples are inserted there.
    Disk(Box<PageGraphWriter>),
}

/// A serial build.
struct SerialBuild<'s> {
    rel: Relation,
    checked: BuildParams,
    /// `maintenance_work_mem` in bytes.
    memory_limit: usize,
    phase: Phase<'s>,
    levels: Levels,
    /// Tuples inserted.
    indtuples: i64,
}

impl SerialBuild<'_> {
    /// Inserts one value: into memory while it fits, else (after writing the graph out once)
    /// into the pages.
    fn insert(&mut self, value: Value, tid: ItemPointer) {
        let params = self.checked.params;
        if let Phase::Memory(graph) = &mut self.phase {
            let bytes = value.bytes().map_or(0, <[u8]>::len);
            if graph.pgvector_memory() >= self.memory_limit {
                self.move_to_disk(NoLongerFits::MaintenanceWorkMem);
            } else {
                let level = self.levels.draw(params.m);
                if graph.try_reserve_element(bytes, level).is_ok() {
                    let element = NewElement {
                        value,
                        heap_tid: tid,
                        level,
                    };
                    vector_hnsw::insert(graph, element, &params);
                    self.counted();
                    return;
                }
                self.move_to_disk(NoLongerFits::Memory);
            }
        }
        let Phase::Disk(writer) = &mut self.phase else {
            unreachable!("the graph moved to the pages");
        };
        let level = self.levels.draw(params.m);
        insert_on_disk(writer, value, tid, level);
        self.counted();
    }

    fn counted(&mut self) {
        self.indtuples += 1;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, self.indtuples);
    }

    /// Writes the in-memory graph to the pages, where the build goes on.
    fn move_to_disk(&mut self, why: NoLongerFits) {
        let Phase::Memory(graph) = &self.phase else {
            return;
        };
        flush_graph(self.rel, graph, &self.checked, self.indtuples, why, None);
        let graph = PageGraph::open(self.rel, options::graph_settings(self.rel));
        self.phase = Phase::Disk(Box::new(PageGraphWriter::new(graph, WriteMode::Build)));
    }
}

/// A serial build of `rel` from `heap` (all tuples, or none for an INIT fork): the heap
/// tuples seen and the tuples indexed.
///
/// # Safety
///
/// `heap`, `index` and `index_info` are the build's (`heap` may be null for an empty build).
unsafe fn build_serially(
    rel: Relation,
    support: &Support,
    checked: BuildParams,
    heap: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> (f64, i64) {
    let mut build = SerialBuild {
        rel,
        checked,
        memory_limit: maintenance_work_mem(),
        phase: Phase::Memory(BuildGraph::new(
            support,
            checked.params.m,
            LocalRegion::default(),
        )),
        levels: Levels::seeded_by_session_random(),
        indtuples: 0,
    };
    let reltuples = if heap.is_null() {
        0.0
    } else {
        let mut insert = |value: Value, tid: ItemPointer| build.insert(value, tid);
        let mut scan = ScanState::new(support, &mut insert);
        // SAFETY: per the contract.
        unsafe { scan.scan(heap, rel.raw(), index_info, std::ptr::null_mut(), true) }
    };
    if let Phase::Memory(graph) = &build.phase {
        write_graph(
            rel,
            graph,
            checked.params,
            checked.dimensions,
            checked.placement,
            None,
        );
    }
    (reltuples, build.indtuples)
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
    let support = Support::for_index(rel, Method::Hnsw);
    let checked = check_build(rel, &support);
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    // SAFETY: per ambuild's contract.
    let (reltuples, indtuples) = unsafe {
        match options::quantization(rel) {
            Some(bits) => build_quantized::build(rel, &support, checked, bits, heap, index_info),
            None => match build_parallel::build(rel, &support, checked, heap, index_info) {
                Some(counts) => counts,
                None => build_serially(rel, &support, checked, heap, index_info),
            },
        }
    };
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
    let support = Support::for_index(rel, Method::Hnsw);
    let checked = check_build(rel, &support);
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    // SAFETY: no heap: nothing is scanned.
    unsafe {
        let (heap, info) = (std::ptr::null_mut(), std::ptr::null_mut());
        match options::quantization(rel) {
            Some(bits) => build_quantized::build(rel, &support, checked, bits, heap, info),
            None => build_serially(rel, &support, checked, heap, info),
        }
    };
    log_relation(rel);
}
