//! The graph as stored in the index's pages: [`PageGraph`] implements
//! [`vector_hnsw::GraphStore`] over a [`Relation`] in pgvector 0.8.6's format.
//!
//! * Element ids are index TIDs (the element tuple's block and offset).
//! * The entry point and `m` come from the metapage (block 0).
//! * [`GraphStore::load`] reads the element tuples of a batch ([`PageGraph::load_with`], the one
//!   batch loop, which writers reuse): it first collects the batch's distinct blocks (where a
//!   prefetch pass will go), then pins a few of them at a time, has the CPU fetch the batch's
//!   tuples from them (so their cache misses overlap instead of following one another), and
//!   reads each block once under a share lock, decoding every element of the batch on it with
//!   its distance to the query.
//!   Each loaded element keeps ([`ElementMeta`]) its version, the TID of its neighbor tuple and
//!   the heap TIDs it had at that moment, as pgvector's in-memory element does.
//! * [`GraphStore::neighbors`] reads the neighbor tuple under a share lock and trusts it only
//!   if its version and slot count still match the element (pgvector's check against elements
//!   deleted and replaced meanwhile).
//! * The algorithm's locks map to pgvector's heavyweight page locks on blocks 0 (update lock)
//!   and 1 (scan lock).
//!
//! Writers (build, insert, vacuum) wrap a `PageGraph` and use its accessors; this type itself
//! never changes a page.

use crate::opclass::codes::{CodeSpace, Dense};
use crate::opclass::{
    Coded, CodedValue, Compare, Estimate, Exact, Method, Support, TypeInfo, Value, ValueKind,
};
use crate::storage::io::{BlockReader, IoCounters, RelationBlocks, Settings};
use crate::storage::pinned::{self, PinnedPage};
use crate::storage::{
    in_recovery, BlockNumber, ItemPointer, OffsetNumber, PageLock, PageLockMode, PageRef, ReadMode,
    Relation, WriteMode,
};
use crate::stores::hnsw::centroid_pages::regions_for;
use crate::stores::hnsw::format::{
    layer_m, ElementView, EntryPoint as MetaEntry, MetaPage, NeighborView, HEAPTIDS, PAGE_ID,
    SCAN_LOCK, UPDATE_LOCK,
};
use crate::stores::hnsw::metapage::{read_meta, read_quantizer};
use crate::stores::hnsw::vector_pages::{store_vector, VectorPages};
use std::rc::Rc;
use vector_hnsw::storage::GraphLock;
use vector_hnsw::{Candidate, EntryPoint, GraphStore, RerankStore};
use vector_io::{BatchLayout, Lookahead};

/// Bytes of each element tuple of a batch that `load` asks the CPU to fetch before reading:
/// the whole tuple of values up to 768 `vector` dimensions.
const PREFETCH_BYTES: usize = 4096;

/// An element id: the TID of its element tuple.
pub type ElementId = ItemPointer;

/// The heap TIDs of an element as loaded (at most [`HEAPTIDS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapTids {
    tids: [ItemPointer; HEAPTIDS],
    len: u8,
}

impl Default for HeapTids {
    fn default() -> Self {
        HeapTids::EMPTY
    }
}

impl HeapTids {
    const EMPTY: HeapTids = HeapTids {
        tids: [ItemPointer::INVALID; HEAPTIDS],
        len: 0,
    };

    /// The TIDs in slot order.
    pub fn as_slice(&self) -> &[ItemPointer] {
        &self.tids[..usize::from(self.len)]
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a TID; false if all slots are taken.
    pub fn push(&mut self, tid: ItemPointer) -> bool {
        if self.len() == HEAPTIDS {
            return false;
        }
        self.tids[self.len()] = tid;
        self.len += 1;
        true
    }

    fn from_view(element: &ElementView<'_>) -> Self {
        let mut tids = HeapTids::default();
        for tid in element.heap_tids() {
            tids.push(tid);
        }
        tids
    }
}

/// What a loaded element remembers about its tuples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElementMeta {
    /// Version of the element tuple when it was loaded.
    pub version: u8,
    /// Where its neighbor tuple is.
    pub neighbor_tid: ItemPointer,
    /// Its heap TIDs when it was loaded.
    pub heap_tids: HeapTids,
    /// Where its full vector is, in a quantized index (invalid otherwise).
    pub vector: ItemPointer,
    /// How far below its estimated distance its exact distance can be, in a quantized index
    /// (0 otherwise).
    pub error: f32,
}

/// A loaded element.
pub type Element = Candidate<ElementId, ElementMeta>;

/// What a batch's places in the output hold until their element is decoded.
const PLACEHOLDER: Element = Candidate {
    id: ItemPointer::INVALID,
    distance: 0.0,
    level: 0,
    live: false,
    meta: ElementMeta {
        version: 0,
        neighbor_tid: ItemPointer::INVALID,
        heap_tids: HeapTids::EMPTY,
        vector: ItemPointer::INVALID,
        error: 0.0,
    },
};

/// What a page graph takes from the index's options and the session's settings. The access
/// method's callbacks read them once (`am/hnsw/options.rs`) and pass them down; no store reads
/// a setting itself.
#[derive(Clone, Copy, Debug)]
pub struct GraphSettings {
    /// `ef_construction` of the index's options: the candidate list of the searches that
    /// inserts and repairs run.
    pub ef_construction: usize,
    /// How reads overlap (`hnsw.io_method`, `hnsw.prefetch_lookahead`, the table-row hints).
    pub io: Settings,
}

/// The index's graph, read through the buffer manager, comparing as `C` says: exactly
/// (pgvector's format) or by codes (a quantized index).
pub struct PageGraph<C: Compare> {
    rel: Relation,
    compare: C,
    m: usize,
    ef_construction: usize,
    dimensions: u32,
    /// How reads overlap, as the access method read the settings.
    io: Settings,
    /// Heavyweight page locks taken through `GraphStore::lock`, most recent last.
    locks: Vec<(GraphLock, PageLock)>,
    /// Scratch for `load`: the batch's blocks and which ids are on each.
    layout: BatchLayout,
    /// Scratch for `load`: the batch's blocks, pinned (empty between calls).
    pins: Vec<PinnedPage>,
    /// Reads the blocks of each batch, overlapping their I/O.
    reader: BlockReader<RelationBlocks>,
    /// Layer of the last neighbor list read: the layer the next batch is loaded for.
    layer: u8,
    /// Neighbor lists captured while loading, and look-ahead's scratch.
    lookahead: Lookahead<ElementId>,
    /// A quantized index's full vectors, opened at the first rerank.
    vectors: Option<VectorPages>,
    /// Scratch of a rerank: where the candidates' vectors are.
    vector_tids: Vec<ItemPointer>,
    /// On a standby a search can meet an element that replayed VACUUM marked deleted after the
    /// search saw a link to it (the scan lock does not reach it): it is then passed over.
    pass_deleted: bool,
}

/// How a page graph compares, made from the index (its operator class, and a quantized
/// index's quantizer from the metapage), and what it stores for a new element.
pub trait IndexCompare: Compare + Sized {
    fn for_index(rel: Relation) -> Self;

    /// A new element's value as the index stores it: in a quantized index, its full vector is
    /// stored first (where returned) and its record names it.
    fn new_element(
        &self,
        rel: Relation,
        value: Value,
        mode: WriteMode,
    ) -> (Self::Value, Option<ItemPointer>);
}

impl IndexCompare for Exact {
    fn for_index(rel: Relation) -> Self {
        Exact(Support::for_index(rel, Method::Hnsw))
    }

    fn new_element(&self, _: Relation, value: Value, _: WriteMode) -> (Value, Option<ItemPointer>) {
        (value, None)
    }
}

impl IndexCompare for Coded {
    fn for_index(rel: Relation) -> Self {
        let support = Support::for_index(rel, Method::Hnsw);
        let quantizer = read_quantizer(rel);
        let regions = regions_for(rel, &quantizer);
        let space = CodeSpace::new(regions, dense_of(support.type_info()));
        Coded::new(support, Rc::new(space))
    }

    fn new_element(
        &self,
        rel: Relation,
        value: Value,
        mode: WriteMode,
    ) -> (CodedValue, Option<ItemPointer>) {
        let bytes = value.bytes().expect("indexed values are not NULL");
        let vector = store_vector(rel, bytes, mode);
        (Coded::new_element(self, value, vector), Some(vector))
    }
}

/// A page graph of the kind its metapage says.
pub enum AnyPageGraph {
    Exact(PageGraph<Exact>),
    Coded(PageGraph<Coded>),
}

impl AnyPageGraph {
    /// The index's graph, exact or quantized as its metapage says (see [`PageGraph::open`]).
    pub fn open(rel: Relation, settings: GraphSettings) -> Self {
        if read_meta(rel).is_quantized() {
            AnyPageGraph::Coded(PageGraph::open_index(rel, settings))
        } else {
            AnyPageGraph::Exact(PageGraph::open_index(rel, settings))
        }
    }
}

impl<C: IndexCompare> PageGraph<C> {
    /// The index's graph, compared as its kind `C` does (see [`PageGraph::open`]).
    pub fn open_index(rel: Relation, settings: GraphSettings) -> Self {
        PageGraph::open(rel, settings, C::for_index(rel))
    }
}

impl<C: Compare> PageGraph<C> {
    /// An existing index compared as `compare` says: `m` and the dimensions from its metapage,
    /// the rest from `settings`. Scans read with `effective_io_concurrency`; writers switch to
    /// maintenance reads with [`for_writing`](Self::for_writing).
    pub fn open(rel: Relation, settings: GraphSettings, compare: C) -> Self {
        let meta = read_meta(rel);
        let rel = rel.with_page_id(PAGE_ID);
        PageGraph {
            rel,
            compare,
            m: usize::from(meta.m),
            ef_construction: settings.ef_construction,
            dimensions: meta.dimensions,
            io: settings.io,
            locks: Vec::new(),
            layout: BatchLayout::default(),
            pins: Vec::new(),
            reader: RelationBlocks::reader(rel, false, settings.io),
            layer: 0,
            lookahead: Lookahead::default(),
            vectors: None,
            vector_tids: Vec::new(),
            pass_deleted: in_recovery(),
        }
    }

    /// Whether this is a quantized index (its values are code records).
    pub fn is_quantized(&self) -> bool {
        !C::EXACT
    }

    /// How this index compares.
    pub fn compare(&self) -> &C {
        &self.compare
    }

    /// Reads as a writer (insert, build, vacuum): `maintenance_io_concurrency`.
    pub fn for_writing(mut self) -> Self {
        self.reader = RelationBlocks::reader(self.rel, true, self.io);
        self
    }

    /// Reads with `io` from now on (a scan passes the current settings at each fetch, as they
    /// may change between fetches of a cursor).
    pub fn apply_io_settings(&mut self, io: Settings) {
        self.io = io;
        self.reader.apply(io);
        if let Some(vectors) = self.vectors.as_mut() {
            vectors.apply_io_settings(io);
        }
    }

    /// The read settings in force.
    pub fn io_settings(&self) -> Settings {
        self.io
    }

    /// The reranks' vector pages, if any were read.
    pub fn vector_pages(&self) -> Option<&VectorPages> {
        self.vectors.as_ref()
    }

    /// Whether the walk's last hops met blocks outside shared buffers and the page cache.
    pub fn reads_cold(&self) -> bool {
        self.reader.is_cold()
    }

    /// What the reads of this graph's walks did so far.
    pub fn io_counters(&self) -> IoCounters {
        self.reader.counters()
    }

    pub fn relation(&self) -> Relation {
        self.rel
    }

    /// Support functions (distance, normalization) and type info of the index's column.
    pub fn support(&self) -> &Support {
        self.compare.support()
    }

    pub fn type_info(&self) -> &'static TypeInfo {
        self.support().type_info()
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn ef_construction(&self) -> usize {
        self.ef_construction
    }

    pub fn dimensions(&self) -> u32 {
        self.dimensions
    }

    /// The metapage, read under a share lock (raises pgvector's error if it is not one).
    pub fn meta(&self) -> MetaPage {
        read_meta(self.rel)
    }

    /// Loads one element (distance to `query`; pass the default value, NULL, for 0).
    pub fn load_one(&mut self, query: &C::Value, id: ElementId) -> Element {
        let mut out = Vec::with_capacity(1);
        self.load(query, &[id], &mut out);
        out.pop().expect("load returns one candidate per id")
    }

    /// A copy of what an element stores (its value, or its code record).
    pub fn element_value(&self, id: ElementId) -> Value {
        let guard = self.rel.read_page(id.block, ReadMode::Shared);
        let page = guard.page();
        let element = element_at(&page, id);
        match element.value() {
            Some(bytes) => Value::from_bytes(bytes),
            None => corrupt(id, "element has no value"),
        }
    }

    /// Decodes the element tuple `id` of a page the caller has locked, with its distance to
    /// `query` (for writers that read elements under their own locks).
    pub fn decode_element(&self, page: &PageRef<'_>, id: ElementId, query: &C::Value) -> Element {
        decode(&element_at(page, id), id, &self.compare, query, false)
    }

    /// The batch loop of [`GraphStore::load`]: `keep(loaded, tuple)` sees every element
    /// loaded with its tuple, while the page is locked (writers keep the values they will
    /// compare later).
    ///
    /// It first collects the batch's distinct blocks, in the order the batch first needs them
    /// (a prefetch pass over them belongs right there, before the first read). Then, a few
    /// blocks at a time ([`pinned::pin_limit`]), it pins them, has the CPU fetch the batch's
    /// element tuples on them, and locks each in turn to decode every element of the batch on
    /// it (one block locked at a time, as pgvector).
    pub fn load_with(
        &mut self,
        query: &C::Value,
        ids: &[ElementId],
        out: &mut Vec<Element>,
        mut keep: impl FnMut(&Element, &ElementView<'_>),
    ) {
        let mut layout = std::mem::take(&mut self.layout);
        layout.group(ids, |id| id.block);

        // Each element is decoded straight into its place in `out`.
        let first_out = out.len();
        out.resize(first_out + ids.len(), PLACEHOLDER);
        let mut pins = std::mem::take(&mut self.pins);
        let capture = self.reader.captures();
        let (m, layer, pass_deleted) = (self.m, self.layer, self.pass_deleted);
        let fanout = layer_m(self.m, layer);
        let mut batch = self.reader.batch(layout.blocks(), fanout);
        let limit = pinned::pin_limit();
        loop {
            // Pin a few blocks and have the CPU fetch the line pointers, then the element
            // tuples of the batch on them: all of it travels in parallel while the first is
            // decoded. Pages this backend has just read itself are in the CPU's cache already.
            let mut in_cache = 0u32;
            let first = batch.fill(&mut pins, limit, |j, k, pin, copied_here| {
                if copied_here {
                    in_cache |= 1 << j;
                } else {
                    pin.prefetch_line_pointers(offsets(&layout, k, ids));
                }
            });
            if pins.is_empty() {
                break;
            }
            for (j, (k, pin)) in (first..).zip(&pins).enumerate() {
                if in_cache & (1 << j) == 0 {
                    pin.prefetch_items(offsets(&layout, k, ids), PREFETCH_BYTES);
                }
            }
            for (k, pin) in (first..).zip(pins.drain(..)) {
                let guard = pin.lock(ReadMode::Shared);
                let page = guard.page();
                for &i in layout.members(k) {
                    let id = ids[i as usize];
                    let tuple = element_at(&page, id);
                    let element = decode(&tuple, id, &self.compare, query, pass_deleted);
                    keep(&element, &tuple);
                    if capture {
                        capture_neighbors(&mut self.lookahead, &page, &element, m, layer);
                    }
                    out[first_out + i as usize] = element;
                }
            }
        }
        debug_assert_eq!(
            batch.consumed(),
            layout.blocks().len(),
            "every block of the batch was read"
        );
        drop(batch);
        self.layout = layout;
        self.pins = pins;
    }

    /// Drops the heavyweight locks taken through `GraphStore::lock` without releasing them:
    /// for state freed after a transaction abort, which has released them already. (Nothing
    /// else of the graph outlives a call: pins and read streams belong to one batch.)
    pub fn forget_after_abort(&mut self) {
        for (_, held) in self.locks.drain(..) {
            std::mem::forget(held);
        }
    }

    fn lock_target(lock: GraphLock) -> (BlockNumber, PageLockMode) {
        match lock {
            GraphLock::UpdateShare => (UPDATE_LOCK, PageLockMode::Share),
            GraphLock::UpdateExclusive => (UPDATE_LOCK, PageLockMode::Exclusive),
            GraphLock::ScanShare => (SCAN_LOCK, PageLockMode::Share),
            GraphLock::ScanExclusive => (SCAN_LOCK, PageLockMode::Exclusive),
        }
    }
}

/// The element type of an indexed column a quantized index can have.
pub fn dense_of(type_info: &TypeInfo) -> Dense {
    match type_info.kind {
        ValueKind::Halfvec => Dense::F16,
        _ => Dense::F32,
    }
}

/// The element tuple at `id` of a locked page.
fn element_at<'a>(page: &PageRef<'a>, id: ElementId) -> ElementView<'a> {
    let Some(item) = page.item(id.offset) else {
        corrupt(id, "no such item");
    };
    match ElementView::parse(item) {
        Ok(element) => element,
        Err(e) => corrupt(id, &e.to_string()),
    }
}

/// A loaded element from its tuple, with its distance to the query (its record parsed once,
/// in a quantized index). A deleted element is an error, as in pgvector, unless
/// `pass_deleted`: it then comes back with no rows, no distance and no links to follow.
#[inline]
fn decode<C: Compare>(
    element: &ElementView<'_>,
    id: ElementId,
    compare: &C,
    query: &C::Value,
    pass_deleted: bool,
) -> Element {
    if element.deleted() {
        if !pass_deleted {
            pgrx::error!("cannot load deleted element");
        }
        return Candidate {
            id,
            distance: f64::INFINITY,
            level: element.level(),
            live: false,
            meta: ElementMeta {
                version: element.version(),
                neighbor_tid: ItemPointer::INVALID,
                heap_tids: HeapTids::default(),
                vector: ItemPointer::INVALID,
                error: 0.0,
            },
        };
    }
    let estimate = match element.value() {
        Some(value) => compare.estimate(query, value),
        None if C::is_null(query) => Estimate {
            distance: 0.0,
            error: 0.0,
            vector: ItemPointer::INVALID,
        },
        None => corrupt(id, "element has no value"),
    };
    let Estimate {
        distance,
        error,
        vector,
    } = estimate;
    let heap_tids = HeapTids::from_view(element);
    Candidate {
        id,
        distance,
        level: element.level(),
        live: !heap_tids.is_empty(),
        meta: ElementMeta {
            version: element.version(),
            neighbor_tid: element.neighbor_tid(),
            heap_tids,
            vector,
            error: error as f32,
        },
    }
}

/// Copies `element`'s list on `layer` when its neighbor tuple is on the same locked page and
/// still belongs to it.
fn capture_neighbors(
    lookahead: &mut Lookahead<ElementId>,
    page: &PageRef<'_>,
    element: &Element,
    m: usize,
    layer: u8,
) {
    let tid = element.meta.neighbor_tid;
    if tid.block != element.id.block || element.level < layer {
        return;
    }
    let Some(view) = page
        .item(tid.offset)
        .and_then(|i| NeighborView::parse(i).ok())
    else {
        return;
    };
    if view.matches(element.meta.version, element.level, m) {
        lookahead
            .captured
            .add(element.id, layer, view.layer(element.level, m, layer));
    }
}

/// The offsets of the batch's elements on block `k` of its layout.
fn offsets<'a>(
    layout: &'a BatchLayout,
    k: usize,
    ids: &'a [ElementId],
) -> impl Iterator<Item = OffsetNumber> + 'a {
    layout.ids_on(k, ids).map(|id| id.offset)
}

fn corrupt(id: ElementId, what: &str) -> ! {
    pgrx::error!("hnsw index is corrupted at {id:?}: {what}")
}

impl RerankStore for PageGraph<Coded> {
    fn estimate_error(&self, candidate: &Element) -> f64 {
        f64::from(candidate.meta.error)
    }

    fn exact_distances(
        &mut self,
        query: &CodedValue,
        candidates: &[Element],
        out: &mut Vec<Option<f64>>,
    ) {
        let (rel, io) = (self.rel, self.io);
        let exact = self.compare.support();
        let vectors = self
            .vectors
            .get_or_insert_with(|| VectorPages::open(rel, exact.clone(), io));
        self.vector_tids.clear();
        self.vector_tids
            .extend(candidates.iter().map(|c| c.meta.vector));
        vectors.exact_distances(Coded::plain(query), &self.vector_tids, out);
    }
}

impl<C: Compare> GraphStore for PageGraph<C> {
    type Id = ElementId;
    type Meta = ElementMeta;
    type Value = C::Value;

    fn entry_point(&mut self) -> Option<EntryPoint<ElementId>> {
        // A new walk: lists captured for the previous one may be stale.
        self.lookahead.clear();
        self.meta()
            .entry_point()
            .map(|MetaEntry { tid, level }| EntryPoint { id: tid, level })
    }

    fn neighbors(&mut self, element: &Element, layer: u8, out: &mut Vec<ElementId>) {
        self.layer = layer;
        let tid = element.meta.neighbor_tid;
        // A deleted element passed over has no list.
        if layer > element.level || !tid.is_valid() {
            return;
        }
        let guard = self.rel.read_page(tid.block, ReadMode::Shared);
        let page = guard.page();
        let Some(view) = page
            .item(tid.offset)
            .and_then(|i| NeighborView::parse(i).ok())
        else {
            // Replaced by something else since the element was loaded: no neighbors to trust.
            return;
        };
        if !view.matches(element.meta.version, element.level, self.m) {
            return;
        }
        out.extend(view.layer(element.level, self.m, layer));
    }

    fn load(&mut self, query: &C::Value, ids: &[ElementId], out: &mut Vec<Element>) {
        self.load_with(query, ids, out, |_, _| {});
    }

    fn lookahead_width(&self) -> usize {
        self.reader.lookahead_width()
    }

    /// Hints the blocks of the upcoming candidates' unvisited neighbors, from the lists
    /// captured when they were loaded, within what is left of the read budget.
    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Element],
        visited: &dyn Fn(&ElementId) -> bool,
    ) {
        self.lookahead.plan(
            &mut self.reader,
            layer,
            upcoming.iter().map(|c| &c.id),
            visited,
            |id| id.block,
        );
    }

    fn lock(&mut self, lock: GraphLock) {
        let (block, mode) = Self::lock_target(lock);
        let held = self.rel.lock_page(block, mode);
        self.locks.push((lock, held));
    }

    fn unlock(&mut self, lock: GraphLock) {
        if let Some(pos) = self.locks.iter().rposition(|(l, _)| *l == lock) {
            let (_, held) = self.locks.remove(pos);
            drop(held);
        }
    }
}
