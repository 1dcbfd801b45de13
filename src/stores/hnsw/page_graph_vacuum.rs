//! The page passes of vacuum: [`VacuumGraph`] implements [`vector_hnsw::VacuumStore`] over a
//! [`PageGraphWriter`], following pgvector 0.8.6's `hnswvacuum.c`.
//!
//! Every pass walks the element pages along their chain from block 1, one page per batch,
//! through a bulk-read buffer strategy and with a vacuum delay point per page. Cold, it reads
//! ahead (`maintenance_io_concurrency` runs of up to `io_combine_limit` blocks, one advisory
//! read each): pgvector appends element pages at the end of the relation and links them from
//! the last one, so the chain runs in block order.
//!
//! * Heap TIDs: under the page's exclusive lock, each element not yet deleted keeps only the
//!   heap TIDs the vacuum callback does not report dead (moved to the front of its slots); the
//!   page is WAL-logged only if something changed. Removed and remaining TIDs are counted in
//!   the vacuum statistics.
//! * Element scans (repair, confirmation) read a page under a share lock and hand out its
//!   elements not marked deleted; their neighbor tuples are read later, page by page.
//! * Marking deleted: under a cleanup lock of the element page (no other backend may hold a
//!   pin there, since scans keep pointers into it), every element without heap TIDs gets the
//!   deleted flag, a zeroed value and the next version, and its neighbor tuple the same version
//!   and invalid slots, element and neighbor page in one WAL record. The first page with a
//!   deleted element becomes the insert page, written to the metapage last.

use crate::opclass::Compare;
use crate::storage::io::{read_chain_page, ChainHints};
use crate::storage::page::INVALID_BLOCK_NUMBER;
use crate::storage::{
    AccessStrategy, BlockNumber, ChainWalk, DeadTids, Image, ItemPointer, PageReadGuard, PageRef,
    ReadMode, Relation, WriteMode,
};
use crate::stores::hnsw::format::{
    tuple_kind, ElementMut, ElementView, NeighborMut, PageOpaque, TupleKind, HEAD_BLKNO,
};
use crate::stores::hnsw::page_graph::{Element, ElementId, ElementMeta};
use crate::stores::hnsw::page_graph_values::CachedValue;
use crate::stores::hnsw::page_graph_write::{read_neighbor_slots, record_vector, PageGraphWriter};
use crate::stores::hnsw::vector_pages::{expect_page_kind, free_vectors};
use pgrx::pg_sys;

use vector_hnsw::storage::{
    Duplicate, ElementHeader, EntryPoint, EntryUpdate, GraphLock, NewElement, Slot,
};
use vector_hnsw::{GraphStore, GraphWrite, LinkBack, VacuumStore};

/// Position of a pass over the element pages.
#[derive(Clone, Copy, Debug)]
pub struct PageCursor {
    /// Next page to visit; invalid once the chain has ended.
    next: BlockNumber,
    /// The pass's walk along the next links (bounded and checked), from its first page on.
    walk: Option<ChainWalk>,
}

impl Default for PageCursor {
    fn default() -> Self {
        PageCursor {
            next: HEAD_BLKNO,
            walk: None,
        }
    }
}

impl PageCursor {
    /// The page to visit now, checked (`None` once the chain has ended).
    fn current(&mut self, rel: Relation) -> Option<BlockNumber> {
        let walk = self.walk.get_or_insert_with(|| ChainWalk::new(rel));
        let block = walk.next(self.next);
        if block.is_none() {
            self.next = INVALID_BLOCK_NUMBER;
        }
        block
    }
}

/// The graph during `ambulkdelete`.
pub struct VacuumGraph<C: Compare> {
    writer: PageGraphWriter<C>,
    dead: DeadTids,
    stats: *mut pg_sys::IndexBulkDeleteResult,
    strategy: AccessStrategy,
    /// Read-ahead of the pass under way.
    hints: ChainHints,
    /// A quantized index's vector slots of the elements marked deleted, freed after the pass.
    freed_vectors: Vec<ItemPointer>,
}

impl<C: Compare> VacuumGraph<C> {
    /// # Safety
    ///
    /// `stats` points to the statistics `ambulkdelete` returns, valid during the vacuum.
    /// `hints` read ahead along the page chain of each pass.
    pub unsafe fn new(
        writer: PageGraphWriter<C>,
        dead: DeadTids,
        stats: *mut pg_sys::IndexBulkDeleteResult,
        hints: ChainHints,
    ) -> Self {
        assert_eq!(writer.mode(), WriteMode::Wal, "vacuum is WAL-logged");
        VacuumGraph {
            writer,
            dead,
            stats,
            strategy: AccessStrategy::bulk_read(),
            hints,
            freed_vectors: Vec::new(),
        }
    }

    /// Reads `block` of a pass over the element pages in `mode`; the first page of a pass
    /// plans the read-ahead, from there to the relation's last block.
    fn read_pass_page(&mut self, block: BlockNumber, mode: ReadMode, first: bool) -> PageReadGuard {
        let rel = self.rel();
        if first {
            self.hints.plan([(block, rel.nblocks().saturating_sub(1))]);
        }
        let guard = read_chain_page(rel, block, mode, &self.strategy, &mut self.hints);
        expect_page_kind(rel, block, &guard.page(), false);
        guard
    }

    fn rel(&self) -> Relation {
        self.writer.graph().relation()
    }

    fn count(&mut self, removed: usize, kept: usize) {
        // SAFETY: stats is valid during the vacuum (new's contract) and only used here.
        unsafe {
            (*self.stats).tuples_removed += removed as f64;
            (*self.stats).num_index_tuples += kept as f64;
        }
    }

    /// Marks the elements of one page that have no heap TIDs deleted, one WAL record each.
    /// Returns the next page and whether the page has deleted elements.
    fn mark_page_deleted(&mut self, block: BlockNumber, first: bool) -> (BlockNumber, bool) {
        let rel = self.rel();
        let mut page_guard = self.read_pass_page(block, ReadMode::Cleanup, first);
        let max_offset = page_guard.page().max_offset();
        let mut has_deleted = false;
        let quantized = self.writer.graph().is_quantized();
        for offset in 1..=max_offset {
            let neighbor_tid = {
                let page = page_guard.page();
                let Some(element) = element_view(&page, offset) else {
                    continue;
                };
                if element.deleted() {
                    has_deleted = true;
                    continue;
                }
                if !element.has_no_heap_tids() {
                    continue;
                }
                if let Some(value) = element.value().filter(|_| quantized) {
                    self.freed_vectors.push(record_vector(true, value));
                }
                element.neighbor_tid()
            };
            let mut guard = rel.begin_write(WriteMode::Wal);
            let element_slot = guard.register(page_guard, Image::Delta);
            let neighbor_slot = if neighbor_tid.block == block {
                element_slot
            } else {
                let page =
                    rel.read_page_with(neighbor_tid.block, ReadMode::Exclusive, &self.strategy);
                guard.register(page, Image::Delta)
            };
            let version = {
                let mut page = guard.page_mut(element_slot);
                let item = page.item_mut(offset).expect("the element was just read");
                ElementMut::parse(item)
                    .expect("the element was just read")
                    .mark_deleted()
            };
            let mut page = guard.page_mut(neighbor_slot);
            if let Some(mut neighbors) = page
                .item_mut(neighbor_tid.offset)
                .and_then(|item| NeighborMut::parse(item).ok())
            {
                neighbors.clear();
                neighbors.set_version(version);
            }
            let mut held = guard.commit();
            page_guard = held.take(element_slot).expect("the element page is held");
            drop(held);
            has_deleted = true;
        }
        let next = next_page(&page_guard.page());
        (next, has_deleted)
    }
}

/// The element tuple at `offset`, if that item is one.
fn element_view<'a>(page: &PageRef<'a>, offset: u16) -> Option<ElementView<'a>> {
    let item = page.item(offset)?;
    if tuple_kind(item) != TupleKind::Element {
        return None;
    }
    ElementView::parse(item).ok()
}

fn next_page(page: &PageRef<'_>) -> BlockNumber {
    PageOpaque::next_of(page.special())
}

impl<C: Compare> GraphStore for VacuumGraph<C> {
    type Id = ElementId;
    type Meta = ElementMeta;
    type Value = C::Value;

    fn entry_point(&mut self) -> Option<EntryPoint<ElementId>> {
        self.writer.entry_point()
    }

    fn neighbors(&mut self, element: &Element, layer: u8, out: &mut Vec<ElementId>) {
        self.writer.neighbors(element, layer, out)
    }

    fn load(&mut self, query: &C::Value, ids: &[ElementId], out: &mut Vec<Element>) {
        self.writer.load(query, ids, out)
    }

    fn lookahead_width(&self) -> usize {
        self.writer.lookahead_width()
    }

    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Element],
        visited: &dyn Fn(&ElementId) -> bool,
    ) {
        self.writer.lookahead(layer, upcoming, visited)
    }

    fn lock(&mut self, lock: GraphLock) {
        self.writer.lock(lock)
    }

    fn unlock(&mut self, lock: GraphLock) {
        self.writer.unlock(lock)
    }
}

impl<C: Compare> LinkBack for VacuumGraph<C> {}

impl<C: Compare> GraphWrite for VacuumGraph<C> {
    type HeapTid = ItemPointer;

    fn value(&mut self, element: &Element) -> C::Value {
        self.writer.value(element)
    }

    type ValueRef = CachedValue;

    fn value_ref(&mut self, element: &Element) -> CachedValue {
        self.writer.value_ref(element)
    }

    fn ref_distance(&self, a: CachedValue, b: CachedValue) -> f64 {
        self.writer.ref_distance(a, b)
    }

    fn add_element(
        &mut self,
        element: &NewElement<C::Value, ItemPointer>,
        neighbors: &[Vec<Element>],
    ) -> Element {
        self.writer.add_element(element, neighbors)
    }

    fn set_neighbor(
        &mut self,
        element: &Element,
        layer: u8,
        new: ElementId,
        slot: Slot,
        check_existing: bool,
    ) {
        self.writer
            .set_neighbor(element, layer, new, slot, check_existing)
    }

    fn write_neighbors(&mut self, element: &Element, neighbors: &[Vec<ElementId>]) {
        self.writer.write_neighbors(element, neighbors)
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<ElementId>>, update: EntryUpdate) {
        self.writer.set_entry_point(entry, update)
    }

    fn distances_are_exact(&self) -> bool {
        self.writer.distances_are_exact()
    }

    fn try_add_duplicate(
        &mut self,
        value: &C::Value,
        heap_tid: ItemPointer,
        existing: &Element,
    ) -> Duplicate {
        self.writer.try_add_duplicate(value, heap_tid, existing)
    }
}

impl<C: Compare> VacuumStore for VacuumGraph<C> {
    type Cursor = PageCursor;

    fn prune_heap_tids(
        &mut self,
        cursor: &mut PageCursor,
        out: &mut Vec<ElementHeader<ElementId>>,
    ) -> bool {
        let rel = self.rel();
        let first = cursor.walk.is_none();
        let Some(block) = cursor.current(rel) else {
            return false;
        };
        crate::storage::vacuum_delay_point();
        let page = self.read_pass_page(block, ReadMode::Exclusive, first);
        let mut guard = rel.begin_write(WriteMode::Wal);
        guard.register(page, Image::Delta);
        let (mut removed, mut kept, mut updated) = (0, 0, false);
        let max_offset = guard.page(0).max_offset();
        for offset in 1..=max_offset {
            let mut page = guard.page_mut(0);
            let Some(item) = page
                .item_mut(offset)
                .filter(|item| tuple_kind(item) == TupleKind::Element)
            else {
                continue;
            };
            let Ok(mut element) = ElementMut::parse(item) else {
                continue;
            };
            if element.view().deleted() {
                continue;
            }
            let tids: Vec<ItemPointer> = element.view().heap_tids().collect();
            let live: Vec<ItemPointer> = tids
                .iter()
                .copied()
                .filter(|&t| !self.dead.is_dead(t))
                .collect();
            removed += tids.len() - live.len();
            kept += live.len();
            if live.len() != tids.len() {
                element.set_heap_tids(&live);
                updated = true;
            }
            out.push(ElementHeader {
                id: ItemPointer::new(block, offset),
                level: element.view().level(),
                live: !live.is_empty(),
            });
        }
        cursor.next = next_page(&guard.page(0));
        if updated {
            guard.commit();
        } else {
            guard.abort();
        }
        self.count(removed, kept);
        cursor.next != INVALID_BLOCK_NUMBER
    }

    fn scan_elements(&mut self, cursor: &mut PageCursor, out: &mut Vec<Element>) -> bool {
        let rel = self.rel();
        let first = cursor.walk.is_none();
        let Some(block) = cursor.current(rel) else {
            return false;
        };
        crate::storage::vacuum_delay_point();
        let guard = self.read_pass_page(block, ReadMode::Shared, first);
        let page = guard.page();
        for offset in 1..=page.max_offset() {
            if element_view(&page, offset).is_some_and(|e| !e.deleted()) {
                let id = ItemPointer::new(block, offset);
                out.push(
                    self.writer
                        .graph()
                        .decode_element(&page, id, &C::Value::default()),
                );
            }
        }
        cursor.next = next_page(&page);
        cursor.next != INVALID_BLOCK_NUMBER
    }

    fn load_element(&mut self, id: ElementId) -> Element {
        self.writer.graph_mut().load_one(&C::Value::default(), id)
    }

    fn neighbor_slots(&mut self, element: &Element, out: &mut Vec<Option<ElementId>>) {
        read_neighbor_slots(self.rel(), element.meta.neighbor_tid, out)
    }

    fn mark_deleted(&mut self, _ids: &[ElementId]) {
        // As pgvector: every element left without heap TIDs is deleted (only vacuum empties
        // them, so these are exactly the ones the passes before collected).
        let mut insert_page = INVALID_BLOCK_NUMBER;
        let mut walk = ChainWalk::new(self.rel());
        let mut current = walk.next(HEAD_BLKNO);
        let mut first = true;
        while let Some(block) = current {
            crate::storage::vacuum_delay_point();
            let (next, has_deleted) = self.mark_page_deleted(block, first);
            first = false;
            if has_deleted && insert_page == INVALID_BLOCK_NUMBER {
                insert_page = block;
            }
            current = walk.next(next);
        }
        if insert_page != INVALID_BLOCK_NUMBER {
            self.writer
                .update_meta(|meta| meta.insert_page = insert_page);
        }
        // Their vector slots go back to inserts (after the elements: a crash in between leaves
        // a slot unused, never a live element without its vector).
        let freed = std::mem::take(&mut self.freed_vectors);
        if !freed.is_empty() {
            free_vectors(self.rel(), &freed, WriteMode::Wal);
        }
    }
}
