//! `ambuild` and `ambuildempty`: building an index, as pgvector 0.8.6 does.
//!
//! 1. Every heap tuple is inserted into a graph held in memory ([`BuildGraph`]) while what
//!    pgvector would have allocated for it stays below `maintenance_work_mem`.
//! 2. The graph is then written to pages in pgvector's layout and order: the metapage in
//!    block 0, then from block 1 on the elements, the one inserted last first, each element
//!    tuple followed by its neighbor tuple on the same page when both fit on one (a new page is
//!    started otherwise), or by its neighbor tuple first on the next page when they never can.
//!    The last page becomes the insert page and the graph's entry point goes into the metapage.
//! 3. If memory ran out, the build says so with pgvector's NOTICE and inserts the remaining
//!    tuples one by one into the pages, exactly like `aminsert` but without WAL.
//!
//! Pages are written without WAL; when the relation needs WAL (and always for the INIT fork of
//! `ambuildempty`) every page is logged once at the end (`log_newpage_range`).
//! `pg_stat_progress_create_index` shows the "loading tuples" phase and the tuples inserted.

use crate::am::hnsw::insert::{insert_on_disk, random_level};
use crate::am::hnsw::options;
use crate::am::shared::typeinfo::{self, Method, Support, Value};
use crate::storage::page::{BLCKSZ, ITEM_ID_SIZE, PAGE_HEADER_SIZE};
use crate::storage::{
    item_pointer_from, BlockNumber, Fork, ItemPointer, OffsetNumber, PageWriteGuard, Relation,
    WriteMode,
};
use crate::stores::hnsw::build_graph::{BuildGraph, LocalRegion, Region, NO_ELEMENT};
use crate::stores::hnsw::format::{
    element_tuple_size, neighbor_tuple_size, new_opaque, ElementTuple, EntryPoint as MetaEntry,
    MetaPage, NeighborTuple, PageOpaque, HEAD_BLKNO, MAX_ITEM_SIZE, META_PD_LOWER, OPAQUE_SIZE,
};
use crate::stores::hnsw::page_graph::PageGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::{pg_guard, pg_sys, PgMemoryContexts};
use std::ffi::c_void;
use vector_hnsw::storage::NewElement;
use vector_hnsw::GraphParams;

/// pgvector's `PROGRESS_HNSW_PHASE_LOAD`.
pub const PHASE_LOAD: i64 = 2;

/// Where the tuples of a build are.
enum Phase<'s> {
    /// Still in memory.
    Memory(BuildGraph<'s, LocalRegion>),
    /// Written to pages; further tuples are inserted there.
    Disk(Box<PageGraphWriter>),
}

/// State shared with the heap scan callback.
struct BuildState<'s> {
    rel: Relation,
    support: &'s Support,
    checked: BuildParams,
    /// `maintenance_work_mem` in bytes.
    memory_limit: usize,
    phase: Phase<'s>,
    /// Tuples inserted.
    indtuples: i64,
    /// Reset after each tuple.
    tmp_ctx: PgMemoryContexts,
}

/// The index's parameters, checked as pgvector checks them before a build.
#[derive(Clone, Copy)]
struct BuildParams {
    params: GraphParams,
    dimensions: u32,
}

fn check_build(rel: Relation, support: &Support) -> BuildParams {
    let dimensions = typeinfo::check_build_column(rel, support.type_info(), Method::Hnsw);
    let m = options::m(rel);
    let ef_construction = options::ef_construction(rel);
    options::check_build_options(m, ef_construction);
    BuildParams {
        params: GraphParams { m, ef_construction },
        dimensions: dimensions as u32,
    }
}

fn report_progress(param: u32, value: i64) {
    // SAFETY: updates this backend's progress slot; a no-op when no command is tracked.
    unsafe { pg_sys::pgstat_progress_update_param(param as i32, value) }
}

/// `maintenance_work_mem` in bytes.
fn maintenance_work_mem() -> usize {
    // SAFETY: a plain int GUC of the server, read by value.
    let kb = unsafe { pg_sys::maintenance_work_mem };
    usize::try_from(kb).unwrap_or(0).saturating_mul(1024)
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
    let mut state = BuildState {
        rel,
        support: &support,
        checked,
        memory_limit: maintenance_work_mem(),
        phase: Phase::Memory(BuildGraph::new(
            &support,
            checked.params.m,
            LocalRegion::default(),
        )),
        indtuples: 0,
        tmp_ctx: PgMemoryContexts::new("Hnsw build temporary context"),
    };

    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    // SAFETY: heap, index and index_info are the ones Postgres passed in; the callback gets
    // `state` back and only uses it during this call.
    let reltuples = unsafe {
        pg_sys::table_index_build_scan(
            heap,
            index,
            index_info,
            true,
            true,
            Some(build_callback),
            (&raw mut state).cast::<c_void>(),
            std::ptr::null_mut(),
        )
    };
    if let Phase::Memory(graph) = &state.phase {
        write_graph(rel, graph, &checked);
    }
    let indtuples = state.indtuples;
    drop(state);
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
    let empty = BuildGraph::new(&support, checked.params.m, LocalRegion::default());
    write_graph(rel, &empty, &checked);
    log_relation(rel);
}

/// Logs every page once, when the relation needs WAL or it is the INIT fork.
fn log_relation(rel: Relation) {
    if rel.needs_wal() || rel.fork() == Fork::Init {
        rel.log_newpage_range();
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
    // SAFETY: state is the BuildState `build` passed to the scan, alive for its duration and
    // not otherwise borrowed while the scan runs; values and isnull have one entry (one key
    // column) and tid points to the tuple's TID.
    let (state, datum, is_null, tid) = unsafe {
        (
            &mut *state.cast::<BuildState<'_>>(),
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
                    state.insert(value, tid);
                    true
                }
                None => false,
            });
        pg_sys::MemoryContextReset(tmp_ctx);
        inserted
    };
    if inserted {
        state.indtuples += 1;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, state.indtuples);
    }
}

impl BuildState<'_> {
    /// Inserts one value: into memory while it fits, else (after writing the graph out once)
    /// into the pages.
    fn insert(&mut self, value: Value, tid: ItemPointer) {
        let level = random_level(self.checked.params.m);
        if let Phase::Memory(graph) = &mut self.phase {
            let bytes = value.bytes().map_or(0, <[u8]>::len);
            if graph.pgvector_memory() >= self.memory_limit {
                self.move_to_disk(
                    "maintenance_work_mem",
                    "Building will take significantly more time.",
                    "Increase maintenance_work_mem to speed up builds.",
                );
            } else if graph.try_reserve_element(bytes, level).is_err() {
                self.move_to_disk(
                    "memory",
                    "The server could not allocate more memory for it; building will take significantly more time.",
                    "Give the server more memory, or lower maintenance_work_mem, to speed up builds.",
                );
            }
        }
        match &mut self.phase {
            Phase::Memory(graph) => {
                let element = NewElement {
                    value,
                    heap_tid: tid,
                    level,
                };
                vector_hnsw::insert(graph, element, &self.checked.params);
            }
            Phase::Disk(writer) => {
                insert_on_disk(writer, value, tid);
            }
        }
    }

    /// Writes the in-memory graph to the pages, where the build goes on, after a NOTICE that
    /// it no longer fits into `what`.
    fn move_to_disk(&mut self, what: &str, detail: &str, hint: &str) {
        let Phase::Memory(graph) = &self.phase else {
            return;
        };
        pg_sys::panic::ErrorReport::new(
            pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            format!(
                "hnsw graph no longer fits into {what} after {} tuples",
                self.indtuples
            ),
            "build",
        )
        .set_detail(detail)
        .set_hint(hint)
        .report(pgrx::PgLogLevel::NOTICE);
        write_graph(self.rel, graph, &self.checked);
        let graph = PageGraph::open(self.rel);
        self.phase = Phase::Disk(Box::new(PageGraphWriter::new(graph, WriteMode::Build)));
    }
}

// ---------------------------------------------------------------------------------------------
// Writing the in-memory graph
// ---------------------------------------------------------------------------------------------

/// Free space of a page being filled, as `PageGetFreeSpace` computes it.
#[derive(Clone, Copy)]
struct PageFill {
    exact_free: usize,
    items: OffsetNumber,
}

impl PageFill {
    const EMPTY: PageFill = PageFill {
        exact_free: BLCKSZ - PAGE_HEADER_SIZE - OPAQUE_SIZE,
        items: 0,
    };

    fn free_space(&self) -> usize {
        self.exact_free.saturating_sub(ITEM_ID_SIZE)
    }

    /// Adds an item of `size` (already `MAXALIGN`ed); returns its offset.
    fn add(&mut self, size: usize) -> OffsetNumber {
        self.exact_free -= size + ITEM_ID_SIZE;
        self.items += 1;
        self.items
    }
}

/// Places the elements, the one inserted last first, as pgvector's build does, and records in
/// each where its tuples go; returns the last block.
fn plan_layout<R: Region>(graph: &BuildGraph<'_, R>, order: &[u32]) -> BlockNumber {
    let m = graph.m();
    let mut block = HEAD_BLKNO;
    let mut page = PageFill::EMPTY;
    for &id in order.iter().rev() {
        let element_size = element_tuple_size(graph.value_bytes(id).len());
        let neighbor_size = neighbor_tuple_size(graph.level(id), m);
        let combined = element_size + neighbor_size + ITEM_ID_SIZE;
        let together = combined <= MAX_ITEM_SIZE;
        if page.free_space() < element_size || (together && page.free_space() < combined) {
            block += 1;
            page = PageFill::EMPTY;
        }
        let tid = ItemPointer::new(block, page.add(element_size));
        if page.free_space() < neighbor_size {
            block += 1;
            page = PageFill::EMPTY;
        }
        let neighbor_tid = ItemPointer::new(block, page.add(neighbor_size));
        graph.set_page_tids(id, tid, neighbor_tid);
    }
    block
}

/// Writes the metapage and all element pages of `graph` into the (empty) fork of `rel`.
fn write_graph<R: Region>(rel: Relation, graph: &BuildGraph<'_, R>, checked: &BuildParams) {
    let order = graph.elements();
    let last_block = plan_layout(graph, &order);
    let GraphParams { m, ef_construction } = checked.params;
    let mut meta = MetaPage::new(checked.dimensions, m as u16, ef_construction as u16);
    meta.insert_page = last_block;
    meta.set_entry_point(graph.entry().map(|e| MetaEntry {
        tid: graph.page_tids(e.id).0,
        level: e.level,
    }));
    let mut guard = rel.begin_write(WriteMode::Build);
    let slot = guard.add_new_page(OPAQUE_SIZE);
    let mut page = guard.page_mut(slot);
    new_opaque().encode(page.special_mut());
    meta.encode(page.contents_mut());
    page.set_lower(META_PD_LOWER);
    guard.commit();

    let mut pages = PageWriter::start(rel);
    let mut heap_tids = Vec::new();
    let mut ids = Vec::new();
    let mut slots = Vec::new();
    for &id in order.iter().rev() {
        let (tid, neighbor_tid) = graph.page_tids(id);
        graph.heap_tids(id, &mut heap_tids);
        let element = ElementTuple {
            level: graph.level(id),
            deleted: 0,
            version: 1,
            heap_tids: &heap_tids,
            neighbor_tid,
            value: graph.value_bytes(id),
        };
        pages.add(tid, &element.to_vec());
        graph.slots(id, &mut ids);
        slots.clear();
        slots.extend(ids.iter().map(|&n| {
            if n == NO_ELEMENT {
                ItemPointer::INVALID
            } else {
                graph.page_tids(n).0
            }
        }));
        let neighbors = NeighborTuple {
            version: 1,
            tids: &slots,
        };
        pages.add(neighbor_tid, &neighbors.to_vec());
    }
    pages.finish();
}

/// Fills element pages one after the other, each locked only while it is filled.
struct PageWriter {
    rel: Relation,
    guard: Option<PageWriteGuard>,
}

impl PageWriter {
    /// Adds the first element page.
    fn start(rel: Relation) -> Self {
        let mut writer = PageWriter { rel, guard: None };
        writer.new_page();
        writer
    }

    fn new_page(&mut self) {
        let mut guard = self.rel.begin_write(WriteMode::Build);
        let slot = guard.add_new_page(OPAQUE_SIZE);
        new_opaque().encode(guard.page_mut(slot).special_mut());
        self.guard = Some(guard);
    }

    fn block(&self) -> BlockNumber {
        self.guard.as_ref().expect("a page is open").block(0)
    }

    /// Links the current page to the next one, releases it and adds that next page.
    fn next_page(&mut self) {
        let mut guard = self.guard.take().expect("a page is open");
        let next = guard.block(0) + 1;
        PageOpaque::set_next_blkno(guard.page_mut(0).special_mut(), next);
        guard.commit();
        // Can take a while: let the user cancel between pages, holding no buffer lock.
        pgrx::check_for_interrupts!();
        self.new_page();
        assert_eq!(self.block(), next, "index pages are added in order");
    }

    /// Adds `item` where the layout put it.
    fn add(&mut self, tid: ItemPointer, item: &[u8]) {
        while self.block() < tid.block {
            self.next_page();
        }
        let guard = self.guard.as_mut().expect("a page is open");
        if guard.page_mut(0).add_item(item) != Some(tid.offset) {
            pgrx::error!("failed to add index item to \"{}\"", self.rel.name());
        }
    }

    fn finish(mut self) {
        if let Some(guard) = self.guard.take() {
            guard.commit();
        }
    }
}
