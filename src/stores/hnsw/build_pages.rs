//! Writing a build's in-memory graph to pages, in pgvector 0.8.6's layout and order: the
//! metapage in block 0, then from block 1 on the elements, the one inserted last first, each
//! element tuple followed by its neighbor tuple on the same page when both fit on one (a new
//! page is started otherwise), or by its neighbor tuple first on the next page when they never
//! can. The last page becomes the insert page and the graph's entry point goes into the
//! metapage. Pages are written without WAL ([`WriteMode::Build`]).

use crate::storage::page::{BLCKSZ, ITEM_ID_SIZE, PAGE_HEADER_SIZE};
use crate::storage::{BlockNumber, ItemPointer, OffsetNumber, PageWriteGuard, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, Region, NO_ELEMENT};
use crate::stores::hnsw::format::{
    element_tuple_size, neighbor_tuple_size, new_opaque, ElementTuple, EntryPoint as MetaEntry,
    MetaPage, NeighborTuple, PageOpaque, HEAD_BLKNO, MAX_ITEM_SIZE, META_PD_LOWER, OPAQUE_SIZE,
};
use vector_hnsw::GraphParams;

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
pub fn write_graph<R: Region>(
    rel: Relation,
    graph: &BuildGraph<'_, R>,
    params: GraphParams,
    dimensions: u32,
) {
    let order = graph.elements();
    let last_block = plan_layout(graph, &order);
    let GraphParams { m, ef_construction } = params;
    let mut meta = MetaPage::new(dimensions, m as u16, ef_construction as u16);
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
