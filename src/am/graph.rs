//! The graph as stored in the index's pages: [`PageGraph`] implements
//! [`vector_hnsw::GraphStore`] over a [`Relation`] in pgvector 0.8.6's format.
//!
//! * Element ids are index TIDs (the element tuple's block and offset).
//! * The entry point and `m` come from the metapage (block 0).
//! * [`GraphStore::load`] reads the element tuples of a batch: it first collects the batch's
//!   distinct blocks (where a prefetch pass will go), then reads each block once under a share
//!   lock, decodes every element of the batch on it and computes its distance to the query.
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

use crate::am::format::{
    ElementView, EntryPoint as MetaEntry, MetaPage, NeighborView, HEAPTIDS, METAPAGE_BLKNO,
    SCAN_LOCK, UPDATE_LOCK,
};
use crate::am::options;
use crate::am::typeinfo::{Support, TypeInfo, Value};
use crate::storage::{
    BlockNumber, ItemPointer, PageLock, PageLockMode, PageRef, ReadMode, Relation,
};
use vector_hnsw::storage::GraphLock;
use vector_hnsw::{Candidate, EntryPoint, GraphStore};

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
        HeapTids {
            tids: [ItemPointer::INVALID; HEAPTIDS],
            len: 0,
        }
    }
}

impl HeapTids {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementMeta {
    /// Version of the element tuple when it was loaded.
    pub version: u8,
    /// Where its neighbor tuple is.
    pub neighbor_tid: ItemPointer,
    /// Its heap TIDs when it was loaded.
    pub heap_tids: HeapTids,
}

/// A loaded element.
pub type Element = Candidate<ElementId, ElementMeta>;

/// The index's graph, read through the buffer manager.
pub struct PageGraph {
    rel: Relation,
    support: Support,
    m: usize,
    ef_construction: usize,
    dimensions: u32,
    /// Heavyweight page locks taken through `GraphStore::lock`, most recent last.
    locks: Vec<(GraphLock, PageLock)>,
    /// Scratch for `load`: the batch's distinct blocks, in first-seen order.
    blocks: Vec<BlockNumber>,
    /// Scratch for `load`: the candidates of the batch, by position.
    slots: Vec<Option<Element>>,
}

impl PageGraph {
    /// An existing index: `m` and the dimensions from its metapage, `ef_construction` from its
    /// options, support functions from its operator class.
    pub fn open(rel: Relation) -> Self {
        let meta = read_meta(rel);
        let mut graph =
            PageGraph::with_params(rel, usize::from(meta.m), options::ef_construction(rel));
        graph.dimensions = meta.dimensions;
        graph
    }

    /// An index whose metapage is not written yet (a build): `m` and `ef_construction` as
    /// given; dimensions 0 until [`set_dimensions`] (a build takes them from
    /// `typeinfo::check_build_column`).
    ///
    /// [`set_dimensions`]: Self::set_dimensions
    pub fn with_params(rel: Relation, m: usize, ef_construction: usize) -> Self {
        PageGraph {
            rel,
            support: Support::for_index(rel),
            m,
            ef_construction,
            dimensions: 0,
            locks: Vec::new(),
            blocks: Vec::new(),
            slots: Vec::new(),
        }
    }

    pub fn relation(&self) -> Relation {
        self.rel
    }

    /// Support functions (distance, normalization) and type info of the index's column.
    pub fn support(&self) -> &Support {
        &self.support
    }

    /// Replaces the support functions (tests compare the fast path with the fmgr path).
    pub fn set_support(&mut self, support: Support) {
        self.support = support;
    }

    pub fn type_info(&self) -> &'static TypeInfo {
        self.support.type_info()
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

    pub fn set_dimensions(&mut self, dimensions: u32) {
        self.dimensions = dimensions;
    }

    /// The metapage, read under a share lock (raises pgvector's error if it is not one).
    pub fn meta(&self) -> MetaPage {
        read_meta(self.rel)
    }

    /// `distance(query, value of an element)`.
    pub fn distance(&self, query: &Value, value: &[u8]) -> f64 {
        self.support.distance(query, value)
    }

    /// Loads one element (distance to `query`; pass [`Value::null`] for 0).
    pub fn load_one(&mut self, query: &Value, id: ElementId) -> Element {
        let mut out = Vec::with_capacity(1);
        self.load(query, &[id], &mut out);
        out.pop().expect("load returns one candidate per id")
    }

    /// A copy of an element's value.
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
    pub fn decode_element(&self, page: &PageRef<'_>, id: ElementId, query: &Value) -> Element {
        let element = element_at(page, id);
        if element.deleted() {
            pgrx::error!("cannot load deleted element");
        }
        let distance = if query.is_null() {
            0.0
        } else {
            match element.value() {
                Some(value) => self.support.distance(query, value),
                None => corrupt(id, "element has no value"),
            }
        };
        let heap_tids = HeapTids::from_view(&element);
        Candidate {
            id,
            distance,
            level: element.level(),
            live: !heap_tids.is_empty(),
            meta: ElementMeta {
                version: element.version(),
                neighbor_tid: element.neighbor_tid(),
                heap_tids,
            },
        }
    }

    /// Drops the heavyweight locks taken through `GraphStore::lock` without releasing them:
    /// for state freed after a transaction abort, which has released them already.
    pub fn forget_locks(&mut self) {
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

/// Reads the metapage of `rel` under a share lock.
pub fn read_meta(rel: Relation) -> MetaPage {
    let guard = rel.read_page(METAPAGE_BLKNO, ReadMode::Shared);
    match MetaPage::decode(guard.page().contents()) {
        Ok(meta) => meta,
        Err(_) => pgrx::error!("hnsw index is not valid"),
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

fn corrupt(id: ElementId, what: &str) -> ! {
    pgrx::error!("hnsw index is corrupted at {id:?}: {what}")
}

impl GraphStore for PageGraph {
    type Id = ElementId;
    type Meta = ElementMeta;
    type Value = Value;

    fn entry_point(&mut self) -> Option<EntryPoint<ElementId>> {
        self.meta()
            .entry_point()
            .map(|MetaEntry { tid, level }| EntryPoint { id: tid, level })
    }

    fn neighbors(&mut self, element: &Element, layer: u8, out: &mut Vec<ElementId>) {
        if layer > element.level {
            return;
        }
        let tid = element.meta.neighbor_tid;
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

    fn load(&mut self, query: &Value, ids: &[ElementId], out: &mut Vec<Element>) {
        // The batch's blocks, each once, in the order the batch first needs them. A prefetch
        // pass over `self.blocks` belongs here, before the first read.
        self.blocks.clear();
        for id in ids {
            if !self.blocks.contains(&id.block) {
                self.blocks.push(id.block);
            }
        }

        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        slots.resize(ids.len(), None);
        for &block in &self.blocks {
            let guard = self.rel.read_page(block, ReadMode::Shared);
            let page = guard.page();
            for (slot, id) in slots.iter_mut().zip(ids) {
                if id.block == block {
                    *slot = Some(self.decode_element(&page, *id, query));
                }
            }
        }
        out.extend(
            slots
                .drain(..)
                .map(|c| c.expect("every block of the batch was read")),
        );
        self.slots = slots;
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
