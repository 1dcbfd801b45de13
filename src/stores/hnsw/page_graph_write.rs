//! Changing the graph in the index's pages: [`PageGraphWriter`] wraps a [`PageGraph`] (reads,
//! locks) and implements [`vector_hnsw::GraphWrite`] with pgvector 0.8.6's rules for where
//! tuples go and how they change.
//!
//! * A new element and its neighbor tuple are placed starting at the metapage's insert page and
//!   following the page chain: both on the same page if it has room; otherwise in the slot of a
//!   deleted element whose tuples (and the free space around them) are large enough, taking its
//!   version; otherwise, on the last page, the element alone with its neighbor tuple on a new
//!   page when the two could never share one; otherwise a new page is added at the end of the
//!   chain (and a second one for the neighbor tuple if needed). The first page seen with room
//!   for an element of level 0, or with a deleted element, becomes the new insert page.
//! * Back-links are written one slot at a time under the neighbor page's exclusive lock, after
//!   re-reading the slot list there (the first free slot, or the slot of the element to replace).
//! * Rows with equal values share an element: the heap TID goes into the first free of its ten
//!   slots, unless the element has none left (it is being deleted) or is full.
//! * The entry point and insert page live in the metapage, changed under its exclusive lock.
//!
//! Every change is one GenericXLog record ([`WriteMode::Wal`]), or made in place without WAL
//! during an index build ([`WriteMode::Build`]), which logs the whole relation once at the end.
//! Locks are taken in pgvector's order: a page before the following one, the metapage alone.

use crate::opclass::Compare;
use crate::storage::page::{INVALID_BLOCK_NUMBER, ITEM_ID_SIZE};
use crate::storage::{
    BlockNumber, ChainWalk, Image, ItemPointer, OffsetNumber, PageWriteGuard, ReadMode, Relation,
    WriteMode,
};
use crate::stores::hnsw::format::{
    element_tuple_size, layer_m, layer_slots, neighbor_count, neighbor_tuple_size, new_opaque,
    tuple_kind, ElementMut, ElementTuple, ElementView, EntryPoint as MetaEntry, MetaPage,
    NeighborMut, NeighborTuple, NeighborView, PageOpaque, TupleKind, HEAPTIDS, MAX_ITEM_SIZE,
    METAPAGE_BLKNO, OPAQUE_SIZE,
};
use crate::stores::hnsw::page_graph::{Element, ElementId, ElementMeta, HeapTids, PageGraph};
use crate::stores::hnsw::page_graph_values::{CachedValue, KeepFilter, ValueCache};
use crate::stores::hnsw::vector_pages::expect_page_kind;
use vector_hnsw::storage::{
    Candidate, Duplicate, EntryPoint, EntryUpdate, GraphLock, NewElement, Slot,
};
use vector_hnsw::{GraphStore, GraphWrite, LinkBack};

/// The graph in the index's pages, with write access.
pub struct PageGraphWriter<C: Compare> {
    graph: PageGraph<C>,
    mode: WriteMode,
    /// Values of the elements loaded or read during the current operation (for pair distances
    /// and duplicate checks, as pgvector keeps the values it loads); cleared when the operation
    /// releases its update lock.
    values: ValueCache,
    /// Which loaded values go into `values`.
    keep: KeepFilter,
}

/// Where a new element's two tuples go: pages registered in `guard`, and for a reused slot the
/// offsets and version of the deleted element.
struct Placement {
    guard: PageWriteGuard,
    element_slot: usize,
    neighbor_slot: usize,
    reuse: Option<FreeSlot>,
}

/// The tuples of a deleted element that a new element can overwrite.
#[derive(Clone, Copy)]
struct FreeSlot {
    offset: OffsetNumber,
    neighbor_offset: OffsetNumber,
    version: u8,
}

/// Byte sizes of a new element's tuples.
#[derive(Clone, Copy)]
struct TupleSizes {
    element: usize,
    neighbor: usize,
}

impl TupleSizes {
    /// Both on one page, with the second line pointer.
    fn combined(&self) -> usize {
        self.element + self.neighbor + ITEM_ID_SIZE
    }
}

impl<C: Compare> PageGraphWriter<C> {
    pub fn new(graph: PageGraph<C>, mode: WriteMode) -> Self {
        let keep = KeepFilter::new(graph.ef_construction() + 1);
        PageGraphWriter {
            // Inserts, builds and vacuum read with maintenance_io_concurrency.
            graph: graph.for_writing(),
            mode,
            values: ValueCache::take_spare(),
            keep,
        }
    }

    pub fn graph(&self) -> &PageGraph<C> {
        &self.graph
    }

    pub fn graph_mut(&mut self) -> &mut PageGraph<C> {
        &mut self.graph
    }

    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    fn rel(&self) -> Relation {
        self.graph.relation()
    }

    /// Forgets the values read so far.
    pub fn forget_values(&mut self) {
        self.values.clear();
        self.keep.clear();
    }

    /// Where the value of element `id` is in the cache, reading it if needed.
    fn value_at(&mut self, id: ElementId) -> (usize, usize) {
        if let Some(at) = self.values.find(id) {
            return at;
        }
        let value = self.graph.element_value(id);
        let bytes = value.bytes().expect("an element has a value");
        self.values.insert(id, bytes)
    }

    /// Changes the metapage under its exclusive lock (one WAL record in WAL mode).
    pub fn update_meta(&self, change: impl FnOnce(&mut MetaPage)) {
        let mut guard = self.rel().write_page(METAPAGE_BLKNO, self.mode);
        let mut page = guard.page_mut(0);
        let contents = page.contents_mut();
        let Ok(mut meta) = MetaPage::decode(contents) else {
            pgrx::error!("hnsw index is not valid");
        };
        change(&mut meta);
        meta.encode(contents);
        guard.commit();
    }

    /// Opens a write guard on `block`, exclusively locked, in slot 0.
    fn begin_on(&self, block: BlockNumber) -> PageWriteGuard {
        self.rel().write_page(block, self.mode)
    }

    /// Adds a page at the end of the relation, registered in `guard`, and links the page in
    /// `after` to it; returns the new page's slot.
    fn append_page(&self, guard: &mut PageWriteGuard, after: usize) -> usize {
        let slot = guard.add_new_page(OPAQUE_SIZE);
        new_opaque().encode(guard.page_mut(slot).special_mut());
        let block = guard.block(slot);
        PageOpaque::set_next_blkno(guard.page_mut(after).special_mut(), block);
        slot
    }

    /// Looks on the page in slot 0 for a deleted element whose tuples can take the new ones;
    /// registers its neighbor page if that is another page. Notes the page as the new insert
    /// page if none was found yet and it has a deleted element.
    fn find_free_slot(
        &self,
        guard: &mut PageWriteGuard,
        sizes: TupleSizes,
        new_insert_page: &mut BlockNumber,
    ) -> Option<(FreeSlot, usize)> {
        let block = guard.block(0);
        let max_offset = guard.page(0).max_offset();
        for offset in 1..=max_offset {
            let (neighbor_tid, version, page_free) = {
                let page = guard.page(0);
                let Some(item) = page.item(offset) else {
                    continue;
                };
                let Ok(element) = ElementView::parse(item) else {
                    continue;
                };
                if !element.deleted() {
                    continue;
                }
                (
                    element.neighbor_tid(),
                    element.version(),
                    item.len() + page.exact_free_space(),
                )
            };
            if *new_insert_page == INVALID_BLOCK_NUMBER {
                *new_insert_page = block;
            }
            let free = FreeSlot {
                offset,
                neighbor_offset: neighbor_tid.offset,
                version,
            };
            // Each tuple is overwritten on its own, so each needs room where it is.
            if neighbor_tid.block == block {
                let page = guard.page(0);
                let neighbor_len = page.item(neighbor_tid.offset).map_or(0, <[u8]>::len);
                let spare = page_free.saturating_sub(sizes.element);
                if page_free >= sizes.element && neighbor_len + spare >= sizes.neighbor {
                    return Some((free, 0));
                }
            } else {
                let neighbor_page = self
                    .rel()
                    .read_page(neighbor_tid.block, ReadMode::Exclusive);
                let fits = {
                    let page = neighbor_page.page();
                    let neighbor_len = page.item(neighbor_tid.offset).map_or(0, <[u8]>::len);
                    page_free >= sizes.element
                        && neighbor_len + page.exact_free_space() >= sizes.neighbor
                };
                if fits {
                    let slot = guard.register(neighbor_page, Image::Delta);
                    return Some((free, slot));
                }
            }
        }
        None
    }

    /// Finds pages for a new element's tuples, starting at `insert_page` (pgvector's
    /// `AddElementOnDisk` search). Returns them locked, with the new insert page.
    fn place(&self, insert_page: BlockNumber, sizes: TupleSizes) -> (Placement, BlockNumber) {
        let min_combined = sizes.element + neighbor_tuple_size(0, self.graph.m()) + ITEM_ID_SIZE;
        let mut new_insert_page = INVALID_BLOCK_NUMBER;
        // Every link is checked against the index's size, the walk is bounded by it (a
        // corrupted next link cannot make it loop) and stays cancellable.
        let mut walk = ChainWalk::new(self.rel());
        let Some(mut current) = walk.next(insert_page) else {
            pgrx::error!("hnsw index is not valid");
        };
        loop {
            let mut guard = self.begin_on(current);
            expect_page_kind(self.rel(), current, &guard.page(0), false);
            let free = guard.page(0).free_space();
            if new_insert_page == INVALID_BLOCK_NUMBER && free >= min_combined {
                new_insert_page = current;
            }
            let together = |guard: PageWriteGuard, neighbor_slot: usize| Placement {
                guard,
                element_slot: 0,
                neighbor_slot,
                reuse: None,
            };
            if free >= sizes.combined() {
                return (together(guard, 0), new_insert_page);
            }
            if let Some((reuse, neighbor_slot)) =
                self.find_free_slot(&mut guard, sizes, &mut new_insert_page)
            {
                let placement = Placement {
                    guard,
                    element_slot: 0,
                    neighbor_slot,
                    reuse: Some(reuse),
                };
                return (placement, new_insert_page);
            }
            let next = page_next(&guard, 0);
            if sizes.combined() > MAX_ITEM_SIZE
                && free >= sizes.element
                && next == INVALID_BLOCK_NUMBER
            {
                let neighbor_slot = self.append_page(&mut guard, 0);
                return (together(guard, neighbor_slot), new_insert_page);
            }
            if next != INVALID_BLOCK_NUMBER {
                // Released before the link is checked: an ERROR there is outside any record.
                drop(guard.abort());
                current = walk.next(next).expect("a valid link is a block");
                continue;
            }
            // The last page is full: continue the chain on a new page.
            let new_slot = self.append_page(&mut guard, 0);
            let mut held = guard.commit();
            let new_page = held.take(new_slot).expect("the new page is held");
            drop(held);
            let mut guard = self.rel().begin_write(self.mode);
            guard.register(new_page, Image::Delta);
            let neighbor_slot = if guard.page(0).free_space() < sizes.combined() {
                self.append_page(&mut guard, 0)
            } else {
                0
            };
            return (together(guard, neighbor_slot), new_insert_page);
        }
    }

    /// Writes a new element and its neighbor tuple (pgvector's `AddElementOnDisk`), then the
    /// new insert page if it moved. Returns the element's TID, neighbor TID and version.
    fn add_element_on_disk(
        &mut self,
        value: &[u8],
        heap_tid: ItemPointer,
        level: u8,
        neighbors: &[Vec<ElementId>],
    ) -> (ElementId, ItemPointer, u8) {
        let m = self.graph.m();
        let sizes = TupleSizes {
            element: element_tuple_size(value.len()),
            neighbor: neighbor_tuple_size(level, m),
        };
        if sizes.element > MAX_ITEM_SIZE {
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                "index tuple too large"
            );
        }
        let insert_page = self.graph.meta().insert_page;
        let slots = neighbor_slots(level, m, neighbors);

        let (mut placement, mut new_insert_page) = self.place(insert_page, sizes);
        let guard = &mut placement.guard;
        let element_block = guard.block(placement.element_slot);
        let neighbor_block = guard.block(placement.neighbor_slot);
        let (offset, neighbor_offset, version) = match placement.reuse {
            Some(free) => (free.offset, free.neighbor_offset, free.version),
            None => {
                let offset = guard.page(placement.element_slot).max_offset() + 1;
                let neighbor_offset = if placement.neighbor_slot == placement.element_slot {
                    offset + 1
                } else {
                    1
                };
                (offset, neighbor_offset, 1)
            }
        };
        let id = ItemPointer::new(element_block, offset);
        let neighbor_tid = ItemPointer::new(neighbor_block, neighbor_offset);
        let element_tuple = ElementTuple {
            level,
            deleted: 0,
            version,
            heap_tids: &[heap_tid],
            neighbor_tid,
            value,
        }
        .to_vec();
        let neighbor_tuple = NeighborTuple {
            version,
            tids: &slots,
        }
        .to_vec();

        let added = if placement.reuse.is_some() {
            let rel = self.rel();
            overwrite_tuple(
                rel,
                guard,
                placement.element_slot,
                id,
                TupleKind::Element,
                &element_tuple,
            ) && overwrite_tuple(
                rel,
                guard,
                placement.neighbor_slot,
                neighbor_tid,
                TupleKind::Neighbor,
                &neighbor_tuple,
            )
        } else {
            guard
                .page_mut(placement.element_slot)
                .add_item(&element_tuple)
                == Some(offset)
                && guard
                    .page_mut(placement.neighbor_slot)
                    .add_item(&neighbor_tuple)
                    == Some(neighbor_offset)
        };
        if !added {
            pgrx::error!("failed to add index item to \"{}\"", self.rel().name());
        }
        placement.guard.commit();

        if new_insert_page == INVALID_BLOCK_NUMBER {
            new_insert_page = neighbor_block;
        }
        if new_insert_page != insert_page {
            self.update_meta(|meta| meta.insert_page = new_insert_page);
        }
        (id, neighbor_tid, version)
    }
}

impl<C: Compare> Drop for PageGraphWriter<C> {
    fn drop(&mut self) {
        std::mem::take(&mut self.values).give_back();
    }
}

/// `next_blkno` of the page in `slot`.
fn page_next(guard: &PageWriteGuard, slot: usize) -> BlockNumber {
    PageOpaque::next_of(guard.page(slot).special())
}

/// All neighbor slots of an element at `level` from per-layer lists (`neighbors[layer]`), top
/// layer first; missing entries are invalid.
pub fn neighbor_slots(level: u8, m: usize, neighbors: &[Vec<ElementId>]) -> Vec<ItemPointer> {
    let mut tids = vec![ItemPointer::INVALID; neighbor_count(level, m)];
    for layer in 0..=level {
        if let Some(list) = neighbors.get(usize::from(layer)) {
            for (slot, id) in tids[layer_slots(level, m, layer)].iter_mut().zip(list) {
                *slot = *id;
            }
        }
    }
    tids
}

impl<C: Compare> GraphStore for PageGraphWriter<C> {
    type Id = ElementId;
    type Meta = ElementMeta;
    type Value = C::Value;

    fn entry_point(&mut self) -> Option<EntryPoint<ElementId>> {
        self.graph.entry_point()
    }

    fn neighbors(&mut self, element: &Element, layer: u8, out: &mut Vec<ElementId>) {
        self.graph.neighbors(element, layer, out)
    }

    /// [`PageGraph::load_with`], keeping the values of the loaded elements that the neighbor
    /// selections that follow may compare (`KeepFilter`).
    fn load(&mut self, query: &C::Value, ids: &[ElementId], out: &mut Vec<Element>) {
        let values = &mut self.values;
        let filter = &mut self.keep;
        filter.start(C::stored(query).unwrap_or_default());
        self.graph.load_with(query, ids, out, |element, tuple| {
            // (Loaded again on another layer: kept already, and counted once.)
            if values.find(element.id).is_none() && filter.admit(element) {
                if let Some(value) = tuple.value() {
                    values.insert(element.id, value);
                }
            }
        });
    }

    fn lookahead_width(&self) -> usize {
        self.graph.lookahead_width()
    }

    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Element],
        visited: &dyn Fn(&ElementId) -> bool,
    ) {
        self.graph.lookahead(layer, upcoming, visited)
    }

    fn lock(&mut self, lock: GraphLock) {
        self.graph.lock(lock)
    }

    fn unlock(&mut self, lock: GraphLock) {
        self.graph.unlock(lock);
        if matches!(lock, GraphLock::UpdateShare | GraphLock::UpdateExclusive) {
            // One insert or repair is over: values read for it may change from now on.
            self.forget_values();
        }
    }
}

impl<C: Compare> LinkBack for PageGraphWriter<C> {}

impl<C: Compare> GraphWrite for PageGraphWriter<C> {
    type HeapTid = ItemPointer;

    fn value(&mut self, element: &Element) -> C::Value {
        let at = self.value_at(element.id);
        self.graph.compare().read_back(self.values.bytes(at))
    }

    type ValueRef = CachedValue;

    fn value_ref(&mut self, element: &Element) -> CachedValue {
        CachedValue(self.value_at(element.id))
    }

    fn ref_distance(&self, a: CachedValue, b: CachedValue) -> f64 {
        self.graph
            .compare()
            .pair_distance(self.values.bytes(a.0), self.values.bytes(b.0))
    }

    fn add_element(
        &mut self,
        element: &NewElement<C::Value, ItemPointer>,
        neighbors: &[Vec<Element>],
    ) -> Element {
        let value = C::stored(&element.value).expect("indexed values are not NULL");
        let ids = vector_hnsw::insert::layer_ids(neighbors);
        let (id, neighbor_tid, version) =
            self.add_element_on_disk(value, element.heap_tid, element.level, &ids);
        self.values.insert(id, value);
        let mut heap_tids = HeapTids::default();
        heap_tids.push(element.heap_tid);
        Candidate {
            id,
            distance: 0.0,
            level: element.level,
            live: true,
            meta: ElementMeta {
                version,
                neighbor_tid,
                heap_tids,
                vector: record_vector(self.graph.is_quantized(), value),
                error: 0.0,
            },
        }
    }

    fn set_neighbor(
        &mut self,
        element: &Element,
        layer: u8,
        new: ElementId,
        slot: Slot,
        check_existing: bool,
    ) {
        let m = self.graph.m();
        let tid = element.meta.neighbor_tid;
        let mut guard = self.begin_on(tid.block);
        let mut page = guard.page_mut(0);
        let Some(mut tuple) = page
            .item_mut(tid.offset)
            .and_then(|item| NeighborMut::parse(item).ok())
        else {
            return;
        };
        // The element was deleted (and maybe replaced) since it was loaded: leave it alone.
        if layer > element.level || !tuple.view().matches(element.meta.version, element.level, m) {
            return;
        }
        let range = layer_slots(element.level, m, layer);
        let view = tuple.view();
        if check_existing && view.layer(element.level, m, layer).any(|t| t == new) {
            return;
        }
        let index = match slot {
            Slot::FirstFree => range.clone().find(|&i| !view.tid(i).is_valid()),
            Slot::At(i) => (i < layer_m(m, layer)).then_some(range.start + i),
        };
        let Some(index) = index.filter(|&i| i < view.count()) else {
            return;
        };
        tuple.set_tid(index, new);
        guard.commit();
    }

    fn write_neighbors(&mut self, element: &Element, neighbors: &[Vec<ElementId>]) {
        let m = self.graph.m();
        let slots = neighbor_slots(element.level, m, neighbors);
        let tuple = NeighborTuple {
            version: element.meta.version,
            tids: &slots,
        }
        .to_vec();
        let tid = element.meta.neighbor_tid;
        let mut guard = self.begin_on(tid.block);
        if !overwrite_tuple(self.rel(), &mut guard, 0, tid, TupleKind::Neighbor, &tuple) {
            pgrx::error!("failed to add index item to \"{}\"", self.rel().name());
        }
        guard.commit();
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<ElementId>>, update: EntryUpdate) {
        self.update_meta(|meta| match entry {
            None => meta.set_entry_point(None),
            Some(point) => {
                if update == EntryUpdate::Always || i16::from(point.level) > meta.entry_level {
                    meta.set_entry_point(Some(MetaEntry {
                        tid: point.id,
                        level: point.level,
                    }));
                }
            }
        });
    }

    fn distances_are_exact(&self) -> bool {
        !self.graph.is_quantized()
    }

    fn try_add_duplicate(
        &mut self,
        value: &C::Value,
        heap_tid: ItemPointer,
        existing: &Element,
    ) -> Duplicate {
        let at = self.value_at(existing.id);
        if !self
            .graph
            .compare()
            .same_value(value, self.values.bytes(at))
        {
            return Duplicate::NotEqual;
        }
        let mut guard = self.begin_on(existing.id.block);
        let mut page = guard.page_mut(0);
        let added = page
            .item_mut(existing.id.offset)
            .filter(|item| tuple_kind(item) == TupleKind::Element)
            .and_then(|item| ElementMut::parse(item).ok())
            .is_some_and(|mut element| {
                let used = element.view().heap_tids().count();
                // None left: being deleted. All taken: another backend was faster.
                !element.view().deleted()
                    && used != 0
                    && used != HEAPTIDS
                    && element.add_heap_tid(heap_tid)
            });
        if added {
            guard.commit();
            Duplicate::Added
        } else {
            Duplicate::NoRoom
        }
    }
}

/// A neighbor tuple's slots read under a share lock (all of them, top layer first).
pub fn read_neighbor_slots(rel: Relation, tid: ItemPointer, out: &mut Vec<Option<ElementId>>) {
    let guard = rel.read_page(tid.block, ReadMode::Shared);
    let page = guard.page();
    if let Some(view) = page
        .item(tid.offset)
        .and_then(|i| NeighborView::parse(i).ok())
    {
        out.extend(view.tids().map(|t| t.is_valid().then_some(t)));
    }
}

/// Overwrites the tuple at `tid` (on the page of `slot`) with `tuple`, after checking that it
/// holds a tuple of the `expected` kind: a link that names anything else is corruption, raised
/// before a byte is written, so that one bad TID cannot destroy another element. `false` if
/// the new tuple does not fit.
fn overwrite_tuple(
    rel: Relation,
    guard: &mut PageWriteGuard,
    slot: usize,
    tid: ItemPointer,
    expected: TupleKind,
    tuple: &[u8],
) -> bool {
    let found = guard.page(slot).item(tid.offset).map(tuple_kind);
    if found != Some(expected) {
        let what = match expected {
            TupleKind::Element => "an element",
            _ => "a neighbor tuple",
        };
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!(
                "index \"{}\" links to ({},{}), which is not {what}",
                rel.name(),
                tid.block,
                tid.offset
            )
        );
    }
    guard.page_mut(slot).overwrite_item(tid.offset, tuple)
}

/// Where a quantized element's full vector is, from its code record (invalid otherwise).
pub fn record_vector(quantized: bool, value: &[u8]) -> ItemPointer {
    use vector_formats::hnsw_codes::CodeRecord;
    match CodeRecord::parse(value) {
        Ok(record) if quantized => record.vector(),
        _ => ItemPointer::INVALID,
    }
}
