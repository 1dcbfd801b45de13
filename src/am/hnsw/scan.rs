//! Index scans: `ORDER BY col <op> $1 [LIMIT k]` answered from the graph.
//!
//! `ambeginscan` opens the graph and allocates the scan state; `amrescan` takes the new keys
//! and resets it; the first `amgettuple` after a rescan runs the search of
//! [`vector_hnsw::Scan`] (entry point, greedy descent, layer 0 with `hnsw.ef_search`, under
//! the shared scan lock) and each call then returns one heap TID: the nearest element's TIDs
//! first, last slot first, as pgvector does. With `hnsw.iterative_scan` the search resumes
//! when the results run out, within `hnsw.max_scan_tuples` and
//! `work_mem * hnsw.scan_mem_multiplier` (fixed when the scan begins; the other settings are
//! read on every call, as pgvector reads them when it uses them). Distances are exact, so
//! ORDER BY is never rechecked.
//!
//! The query is the ORDER BY argument, normalized for cosine operator classes; a NULL query
//! puts every element at distance 0 (pgvector returns them in graph order).
//!
//! On a quantized index the walk compares codes, keeps a queue wider than `hnsw.ef_search`
//! ([`vector_rabitq::walk_candidates`]: estimates order candidates less exactly), descends
//! through the upper layers with a queue of [`vector_hnsw::search::descent_ef`] rather than
//! pgvector's greedy one (unless `hnsw.descent_ef` is set), and its
//! candidates go through [`vector_hnsw::RerankedScan`]: `hnsw.rerank_candidates` of them at a
//! time (16 by default; 0 takes every candidate of the search) have their full vectors read in
//! one batch and come back in exact order with exact distances.
//!
//! The memory limit is checked against the memory pgvector would hold at that point, which
//! [`vector_hnsw::scan_memory`] replays on a model of PostgreSQL's allocator. This module gives
//! it what only the server knows: the allocator's layout (measured once on a context created
//! exactly like pgvector's scan context), the index's `m`, how an index TID is hashed, and the
//! allocations of the query's normalization.
//!
//! The Rust state lives outside Postgres memory and is owned through `scan->opaque`:
//! `amendscan` frees it, and a callback on the memory context the scan was created in frees it
//! if the query ends without `amendscan` (an error).

use crate::am::hnsw::options;
use crate::am::hnsw::scan_stats::{record_finished_scan, RerankCounters, ScanCounters};
use crate::am::shared::scan::{self as shared_scan, AbortSafe};
use crate::opclass::{Coded, Exact, Method, Support, Value};
use crate::out_of_memory;
use crate::storage::io::RelationBlocks;
use crate::storage::toast::ToastedColumn;
use crate::storage::{item_pointer_data, Fork, ItemPointer, Relation};
use crate::stores::hnsw::page_graph::{AnyPageGraph, Element, IndexCompare, PageGraph};
use pgrx::{pg_guard, pg_sys};
use std::ffi::{c_int, CStr};
use std::sync::OnceLock;
use vector_hnsw::search::descent_ef;
use vector_hnsw::{
    AllocSetLayout, ContextEvent, IterativeScan, RerankStats, RerankedScan, Scan, ScanMemoryConfig,
    ScanParams, SearchStats,
};
use vector_io::{HeapRowHints, TableRow};
use vector_rabitq::walk_candidates;

/// How a scan of one kind of index searches: pgvector's walk with exact distances, or a
/// quantized index's walk over codes with its rerank.
trait ScanCompare: IndexCompare {
    type Search;

    fn start(search: Scan<PageGraph<Self>>) -> Self::Search;
    fn next(search: &mut Self::Search, graph: &mut PageGraph<Self>) -> Option<Element>;
    fn walk(search: &Self::Search) -> &Scan<PageGraph<Self>>;
    fn set_params(search: &mut Self::Search, params: ScanParams);
    /// The settings the walk runs with when `params` are asked for.
    fn walk_params(graph: &PageGraph<Self>, params: ScanParams) -> ScanParams;
    fn rerank_stats(search: &Self::Search) -> Option<RerankStats>;
    /// The rows returned next without another search, nearest first.
    fn upcoming(search: &Self::Search) -> impl Iterator<Item = &Element>;
}

impl ScanCompare for Exact {
    type Search = Scan<PageGraph<Exact>>;

    fn start(search: Scan<PageGraph<Exact>>) -> Self::Search {
        search
    }

    fn next(search: &mut Self::Search, graph: &mut PageGraph<Exact>) -> Option<Element> {
        search.next(graph)
    }

    fn walk(search: &Self::Search) -> &Scan<PageGraph<Exact>> {
        search
    }

    fn set_params(search: &mut Self::Search, params: ScanParams) {
        search.set_params(params);
    }

    fn walk_params(_: &PageGraph<Exact>, params: ScanParams) -> ScanParams {
        params
    }

    fn rerank_stats(_: &Self::Search) -> Option<RerankStats> {
        None
    }

    fn upcoming(search: &Self::Search) -> impl Iterator<Item = &Element> {
        search.upcoming()
    }
}

impl ScanCompare for Coded {
    type Search = RerankedScan<PageGraph<Coded>>;

    fn start(search: Scan<PageGraph<Coded>>) -> Self::Search {
        RerankedScan::new(search, options::rerank_candidates())
    }

    fn next(search: &mut Self::Search, graph: &mut PageGraph<Coded>) -> Option<Element> {
        search.next(graph)
    }

    fn walk(search: &Self::Search) -> &Scan<PageGraph<Coded>> {
        search.inner()
    }

    fn set_params(search: &mut Self::Search, params: ScanParams) {
        search.set_params(params, options::rerank_candidates());
    }

    /// A walk over codes keeps a wider queue than `hnsw.ef_search` ([`walk_candidates`]), and
    /// descends with a queue of [`descent_ef`] unless `hnsw.descent_ef` says otherwise.
    fn walk_params(graph: &PageGraph<Coded>, params: ScanParams) -> ScanParams {
        let bits = graph.compare().codes().regions().bits();
        ScanParams {
            ef_search: walk_candidates(params.ef_search, bits),
            descent_ef: options::descent_ef().unwrap_or(descent_ef(params.ef_search)),
            ..params
        }
    }

    fn rerank_stats(search: &Self::Search) -> Option<RerankStats> {
        Some(search.rerank_stats())
    }

    fn upcoming(search: &Self::Search) -> impl Iterator<Item = &Element> {
        search.upcoming()
    }
}

/// A scan's state, of the kind its index's metapage says.
enum AnyScan {
    Exact(ScanState<Exact>),
    Coded(ScanState<Coded>),
}

impl AbortSafe for AnyScan {
    /// The transaction was aborted: Postgres has released the heavyweight locks a search in
    /// progress held. (Pins and read streams never outlive a call.)
    fn forget_after_abort(&mut self) {
        match self {
            AnyScan::Exact(state) => state.graph.forget_after_abort(),
            AnyScan::Coded(state) => state.graph.forget_after_abort(),
        }
    }
}

impl AnyScan {
    fn counters(&self) -> ScanCounters {
        match self {
            AnyScan::Exact(state) => state.counters(),
            AnyScan::Coded(state) => state.counters(),
        }
    }

    fn tmp_ctx(&self) -> pg_sys::MemoryContext {
        match self {
            AnyScan::Exact(state) => state.tmp_ctx,
            AnyScan::Coded(state) => state.tmp_ctx,
        }
    }
}

/// Everything one index scan keeps between calls.
struct ScanState<C: ScanCompare> {
    graph: PageGraph<C>,
    /// The running search; `None` until the first `amgettuple` after a rescan.
    search: Option<C::Search>,
    /// Heap TIDs of the element being returned, handed out from the end.
    pending: Vec<ItemPointer>,
    /// The memory budget of iterative scans, fixed when the scan began (as in pgvector).
    max_memory: usize,
    /// Memory context for Postgres allocations made while searching; reset by `amrescan`.
    /// Nothing kept in this state may point into it (a read stream lives within one hop).
    tmp_ctx: pg_sys::MemoryContext,
    /// Hops and visits of the searches before the last rescan.
    earlier: SearchStats,
    /// Rows reranked before the last rescan.
    earlier_reranked: u64,
    /// Rows returned since the last rescan.
    returned: usize,
    /// Table read-ahead of cold scans, made on first use.
    heap_hints: Option<HeapRowHints<RelationBlocks>>,
    /// The indexed column's out-of-line values, if it has any (made with `heap_hints`).
    toast: Option<ToastedColumn>,
}

impl<C: ScanCompare> ScanState<C> {
    fn new(graph: PageGraph<C>, max_memory: usize, tmp_ctx: pg_sys::MemoryContext) -> Self {
        ScanState {
            graph,
            search: None,
            pending: Vec::new(),
            max_memory,
            tmp_ctx,
            earlier: SearchStats::default(),
            earlier_reranked: 0,
            returned: 0,
            heap_hints: None,
            toast: None,
        }
    }

    /// What this scan did so far, over all its rescans.
    fn counters(&self) -> ScanCounters {
        let mut stats = self.earlier;
        let mut reranked = self.earlier_reranked;
        if let Some(search) = &self.search {
            stats.add(&C::walk(search).stats());
            reranked += C::rerank_stats(search).map_or(0, |r| r.reranked);
        }
        ScanCounters {
            hops: stats.hops,
            visited: stats.visited,
            io: self.graph.io_counters(),
            heap_prefetches: self.heap_hints.as_ref().map_or(0, |h| h.issued),
            rerank: self.graph.is_quantized().then(|| RerankCounters {
                rows: reranked,
                io: self
                    .graph
                    .vector_pages()
                    .map(|v| v.io_counters())
                    .unwrap_or_default(),
            }),
        }
    }

    /// Ends the current search (a rescan), keeping its counters.
    fn end_search(&mut self) {
        if let Some(search) = self.search.take() {
            self.earlier.add(&C::walk(&search).stats());
            self.earlier_reranked += C::rerank_stats(&search).map_or(0, |r| r.reranked);
        }
        self.pending.clear();
        self.returned = 0;
        if let Some(hints) = self.heap_hints.as_mut() {
            hints.restart();
        }
    }
}

/// The counters of an index scan, if `desc` is a live scan of an hnsw index.
///
/// # Safety
///
/// `desc` is null or a live index scan descriptor.
#[cfg_attr(not(feature = "pg18"), allow(dead_code))]
pub unsafe fn counters_of(desc: pg_sys::IndexScanDesc) -> Option<ScanCounters> {
    // SAFETY: per the contract; an hnsw scan's opaque is our ScanOpaque, told apart from
    // other access methods by the index's amgettuple, and its state is null once ended.
    unsafe {
        if desc.is_null() || (*desc).opaque.is_null() {
            return None;
        }
        let am = (*(*desc).indexRelation).rd_indam;
        if am.is_null()
            || (*am).amgettuple.map(|f| f as *const () as usize)
                != Some(get_tuple as *const () as usize)
        {
            return None;
        }
        shared_scan::peek::<AnyScan>(desc).map(AnyScan::counters)
    }
}

/// `ambeginscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn begin_scan(
    index: pg_sys::Relation,
    nkeys: c_int,
    norderbys: c_int,
) -> pg_sys::IndexScanDesc {
    // SAFETY: Postgres passes the open index relation; RelationGetIndexScan allocates the
    // descriptor in the current memory context.
    let scan = unsafe { pg_sys::RelationGetIndexScan(index, nkeys, norderbys) };
    // SAFETY: the index stays open until the scan ends, which outlives the state.
    let rel = unsafe { Relation::from_raw(index, Fork::Main) };
    let max_memory =
        vector_hnsw::scan::memory_limit(options::work_mem_kb(), options::scan_mem_multiplier());
    // SAFETY: creates a child of the current context, deleted with it or in end_scan.
    let tmp_ctx = unsafe { scan_context(c"Hnsw scan temporary context") };
    let state = match AnyPageGraph::open(rel, options::graph_settings(rel)) {
        AnyPageGraph::Exact(graph) => AnyScan::Exact(ScanState::new(graph, max_memory, tmp_ctx)),
        AnyPageGraph::Coded(graph) => AnyScan::Coded(ScanState::new(graph, max_memory, tmp_ctx)),
    };
    // SAFETY: scan was just made in the current context, without an opaque.
    unsafe { shared_scan::attach(scan, state) };
    scan
}

/// `amrescan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn rescan(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    _nkeys: c_int,
    orderbys: pg_sys::ScanKey,
    _norderbys: c_int,
) {
    // SAFETY: scan was begun by begin_scan; the key arrays are amrescan's.
    unsafe {
        shared_scan::copy_keys(scan, keys, orderbys);
        let state = shared_scan::state::<AnyScan>(scan);
        match state {
            AnyScan::Exact(state) => state.end_search(),
            AnyScan::Coded(state) => state.end_search(),
        }
        pg_sys::MemoryContextReset(state.tmp_ctx());
    }
}

/// Creates a memory context with the sizes of pgvector's scan context: no minimum, 8 kB
/// initial blocks, 256 kB at most (smaller than the default so that iterative scans fill
/// `work_mem` more finely).
///
/// # Safety
///
/// Must run in a backend with a valid `CurrentMemoryContext`, which becomes the parent.
unsafe fn scan_context(name: &'static CStr) -> pg_sys::MemoryContext {
    // SAFETY: per the contract; the name is static as Postgres requires.
    unsafe {
        pg_sys::AllocSetContextCreateInternal(
            pg_sys::CurrentMemoryContext,
            name.as_ptr(),
            0,
            8 * 1024,
            256 * 1024,
        )
    }
}

/// The server's AllocSet layout, measured once per backend on a context created like
/// pgvector's scan context (so assert-enabled builds and other versions are measured too).
fn alloc_set_layout() -> AllocSetLayout {
    static LAYOUT: OnceLock<AllocSetLayout> = OnceLock::new();
    *LAYOUT.get_or_init(|| {
        // SAFETY: runs inside a backend; the probe context is deleted before returning and
        // nothing allocated in it escapes.
        unsafe { measure_alloc_set_layout() }
    })
}

/// Reads the keeper block's free space from the context's statistics, the chunk header from
/// `GetMemoryChunkSpace` of a small chunk, the block header from the block taken for a chunk
/// above the 8 kB limit, and whether such blocks reserve a sentinel byte.
///
/// # Safety
///
/// Must run in a backend with a valid `CurrentMemoryContext`.
unsafe fn measure_alloc_set_layout() -> AllocSetLayout {
    // SAFETY: per the contract; every call gets the live probe context or a chunk of it.
    unsafe {
        let ctx = scan_context(c"hnsw layout probe");
        let mut counters = pg_sys::MemoryContextCounters::default();
        if let Some(stats) = (*(*ctx).methods).stats {
            stats(ctx, None, std::ptr::null_mut(), &mut counters, false);
        }
        let small = pg_sys::MemoryContextAlloc(ctx, 8);
        let chunk_header = pg_sys::GetMemoryChunkSpace(small) - 8;
        let large_growth = |size: usize| {
            let before = pg_sys::MemoryContextMemAllocated(ctx, false);
            pg_sys::MemoryContextAlloc(ctx, size);
            pg_sys::MemoryContextMemAllocated(ctx, false) - before
        };
        // 8193 bytes take 8200 with or without a sentinel byte; 8200 take 8208 with one.
        let block_header = large_growth(8193) - 8200 - chunk_header;
        let large_sentinel = large_growth(8200) != 8200 + block_header + chunk_header;
        pg_sys::MemoryContextDelete(ctx);
        AllocSetLayout {
            chunk_header,
            block_header,
            keeper_space: counters.freespace,
            large_sentinel,
        }
    }
}

/// The 64-bit word pgvector hashes for an index TID: `ItemPointerData`'s six bytes in memory
/// order, zero-padded.
fn visited_key(tid: &ItemPointer) -> u64 {
    let data = item_pointer_data(*tid);
    let [a, b] = data.ip_blkid.bi_hi.to_ne_bytes();
    let [c, d] = data.ip_blkid.bi_lo.to_ne_bytes();
    let [e, f] = data.ip_posid.to_ne_bytes();
    u64::from_ne_bytes([a, b, c, d, e, f, 0, 0])
}

/// What pgvector allocates in its scan context to normalize a query of `input` bytes into
/// one of `output` bytes: the result at the input's size, and when zeros were dropped
/// (sparsevec), a smaller copy before the first is freed.
fn normalize_events(input: usize, output: usize) -> Vec<ContextEvent> {
    if output == input {
        vec![ContextEvent::Alloc(input)]
    } else {
        vec![
            ContextEvent::Alloc(input),
            ContextEvent::Alloc(output),
            ContextEvent::Free(input),
        ]
    }
}

/// Switches to a memory context until dropped.
struct ContextSwitch(pg_sys::MemoryContext);

impl ContextSwitch {
    fn to(ctx: pg_sys::MemoryContext) -> Self {
        // SAFETY: ctx is a live context; switching only changes where palloc allocates.
        ContextSwitch(unsafe { pg_sys::MemoryContextSwitchTo(ctx) })
    }
}

impl Drop for ContextSwitch {
    fn drop(&mut self) {
        // SAFETY: restores the context that was current before, which is still alive.
        unsafe { pg_sys::MemoryContextSwitchTo(self.0) };
    }
}

/// `amgettuple`.
#[pg_guard]
pub unsafe extern "C-unwind" fn get_tuple(
    scan: pg_sys::IndexScanDesc,
    _direction: pg_sys::ScanDirection::Type,
) -> bool {
    // SAFETY: scan was begun by begin_scan and not ended.
    let state = unsafe { shared_scan::state::<AnyScan>(scan) };
    let _ctx = ContextSwitch::to(state.tmp_ctx());
    let tid = match state {
        // SAFETY: state is scan's.
        AnyScan::Exact(state) => unsafe { next_tid(scan, state) },
        // SAFETY: as above.
        AnyScan::Coded(state) => unsafe { next_tid(scan, state) },
    };
    let Some(tid) = tid else {
        return false;
    };
    // SAFETY: scan is live; these fields are the AM's outputs.
    unsafe {
        let s = &mut *scan;
        s.xs_heaptid = item_pointer_data(tid);
        s.xs_recheck = false;
        s.xs_recheckorderby = false;
    }
    true
}

/// The next row of the scan, searching as far as needed; `None` when the scan is over.
///
/// # Safety
///
/// `scan` is the live scan descriptor `state` belongs to.
unsafe fn next_tid<C: ScanCompare>(
    scan: pg_sys::IndexScanDesc,
    state: &mut ScanState<C>,
) -> Option<ItemPointer> {
    // The settings as they are now: like pgvector, a cursor sees changes between fetches.
    let params = C::walk_params(
        &state.graph,
        ScanParams {
            max_memory: state.max_memory,
            ..options::scan_params()
        },
    );
    state.graph.apply_io_settings(options::io_settings());
    if state.search.is_none() {
        // SAFETY: scan is a live descriptor of an open index.
        let plain = unsafe { start_scan(scan, state.graph.support()) };
        // Only iterative scans look at their memory.
        let memory = (params.mode != IterativeScan::Off).then(|| ScanMemoryConfig {
            layout: alloc_set_layout(),
            m: state.graph.m(),
            visited_key,
            // SAFETY: as above.
            query: unsafe { normalization_events(scan, state.graph.support(), &plain) },
        });
        let search = Scan::new(state.graph.compare().query(plain), params);
        let search = match memory {
            Some(config) => search.with_memory(config),
            None => search,
        };
        state.search = Some(C::start(search));
    }
    let heap_hints = options::io_settings().heap_hints();
    let table_slow = heap_hints && {
        // SAFETY: scan is live.
        unsafe { make_table_hints(scan, state) };
        state.heap_hints.as_mut().is_some_and(|t| t.table_is_slow())
    };
    let search = state.search.as_mut().expect("started above");
    C::set_params(search, params);

    let tid = loop {
        if let Some(tid) = state.pending.pop() {
            break tid;
        }
        match C::next(search, &mut state.graph) {
            Some(element) => {
                // Postgres receives the last slot first, as pgvector hands them out.
                state
                    .pending
                    .extend_from_slice(element.meta.heap_tids.as_slice());
            }
            None => match C::walk(search).out_of_memory() {
                Some(bytes) => out_of_memory::raise(bytes, "an hnsw scan"),
                None => return None,
            },
        }
    };
    state.returned += 1;
    if heap_hints && (state.graph.reads_cold() || table_slow) {
        hint_next_rows(state);
    }
    if let Some(table) = state.heap_hints.as_mut() {
        table.row_returned(state.returned);
    }
    Some(tid)
}

/// Makes the scan's table hints on its first row (none without a table).
///
/// # Safety
///
/// `scan` is the live scan descriptor `state` belongs to.
unsafe fn make_table_hints<C: ScanCompare>(scan: pg_sys::IndexScanDesc, state: &mut ScanState<C>) {
    if state.heap_hints.is_none() {
        // SAFETY: index_beginscan set heapRelation, open for as long as the scan.
        let heap = unsafe { (*scan).heapRelation };
        if heap.is_null() {
            return;
        }
        // SAFETY: as above.
        let rel = unsafe { Relation::from_raw(heap, Fork::Main) };
        state.heap_hints = Some(HeapRowHints::new(RelationBlocks::new(rel, false)));
        // SAFETY: the scan's relations and snapshot, open and live for as long as the scan.
        state.toast =
            unsafe { ToastedColumn::of_index(heap, (*scan).indexRelation, (*scan).xs_snapshot) };
    }
}

/// Asks for the table blocks of the rows that follow the one being returned: the rest of this
/// element's heap TIDs, then the next results' (see [`HeapRowHints`]).
fn hint_next_rows<C: ScanCompare>(state: &mut ScanState<C>) {
    let (Some(hints), Some(search)) = (state.heap_hints.as_mut(), state.search.as_ref()) else {
        return;
    };
    let later =
        C::upcoming(search).flat_map(|element| element.meta.heap_tids.as_slice().iter().rev());
    let rows = state.pending.iter().rev().chain(later).map(|tid| TableRow {
        block: tid.block,
        offset: tid.offset,
    });
    let toast = &mut state.toast;
    hints.ahead_rows(state.returned, rows, |row| {
        toast
            .as_mut()
            .map_or(0, |column| column.hint(row.block, row.offset))
    });
}

/// The checks and statistics of a scan's first call; returns the query value.
///
/// # Safety
///
/// `scan` is a live scan descriptor of the index `support` belongs to.
unsafe fn start_scan(scan: pg_sys::IndexScanDesc, support: &Support) -> Value {
    // SAFETY: per the contract.
    let (datum, is_null) = unsafe { shared_scan::first_call(scan, Method::Hnsw) };
    // SAFETY: a non-NULL ORDER BY argument of an hnsw operator is a value of the column's type.
    unsafe { support.scan_value(datum, is_null) }
}

/// The allocations pgvector makes in its scan context to normalize the query (cosine
/// operator classes): the ORDER BY argument's size, and `query`, the normalized value.
///
/// # Safety
///
/// `scan` is a live scan descriptor of the index `support` belongs to, past [`start_scan`].
unsafe fn normalization_events(
    scan: pg_sys::IndexScanDesc,
    support: &Support,
    query: &Value,
) -> Vec<ContextEvent> {
    match query.bytes() {
        Some(normalized) if support.normalizes() => {
            // SAFETY: start_scan checked orderByData; a non-NULL query (it has bytes) comes from
            // a non-NULL ORDER BY argument, a value of the column's type.
            let input = unsafe { Value::from_datum((*(*scan).orderByData).sk_argument) };
            normalize_events(input.bytes().map_or(0, <[u8]>::len), normalized.len())
        }
        _ => Vec::new(),
    }
}

/// `amendscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn end_scan(scan: pg_sys::IndexScanDesc) {
    // SAFETY: scan was begun by begin_scan; the state is taken out once and freed; the
    // callback sees the null pointer later and does nothing. The Rust state is dropped before
    // the temporary context is deleted, so nothing it holds can point into freed memory.
    unsafe {
        if let Some(state) = shared_scan::detach::<AnyScan>(scan) {
            record_finished_scan(state.counters());
            let tmp_ctx = state.tmp_ctx();
            drop(state);
            pg_sys::MemoryContextDelete(tmp_ctx);
        }
    }
}
