//! Writing a build's in-memory graph to pages, in pgvector 0.8.6's layout: the metapage in
//! block 0, then from block 1 on the elements, each element tuple followed by its neighbor
//! tuple on the same page when both fit on one (a new page is started otherwise), or by its
//! neighbor tuple first on the next page when they never can. The last page becomes the insert
//! page and the graph's entry point goes into the metapage. Pages are written without WAL
//! ([`WriteMode::Build`]).
//!
//! The elements go in the order [`Placement`] picks: pgvector's (the one inserted last first),
//! or graph neighbors together ([`vector_hnsw::placement`]). Either is pgvector's format; only
//! which elements share a page differs.
//!
//! A quantized index ([`VectorOutput`]) also gets its quantizer in the metapage, and its full
//! vectors in vector pages after the graph's, in the same order as the elements, so that the
//! candidates a query reranks, neighbors in the graph, share vector pages too.

use crate::opclass::Compare;
use crate::storage::page::{BLCKSZ, ITEM_ID_SIZE, PAGE_HEADER_SIZE};
use crate::storage::{BlockNumber, ItemPointer, OffsetNumber, PageWriteGuard, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, NO_ELEMENT};
use crate::stores::hnsw::build_region::Region;
use crate::stores::hnsw::centroid_pages::write_centroids;
use crate::stores::hnsw::format::{
    element_tuple_size, neighbor_tuple_size, new_opaque, ElementTuple, EntryPoint as MetaEntry,
    MetaPage, NeighborTuple, PageOpaque, HEAD_BLKNO, MAX_ITEM_SIZE, META_PD_LOWER, OPAQUE_SIZE,
};
use crate::stores::hnsw::vector_pages::vector_opaque;
use vector_formats::hnsw_codes::{
    CodeRecord, QuantizerMeta, VectorView, NO_VECTOR_PAGE, QUANTIZED_MAGIC_NUMBER,
};
use vector_hnsw::placement::{shared_lists_first, PagePacker, SortedIds};
use vector_hnsw::GraphParams;

/// Which elements of a build share pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Each page holds an element and its nearest neighbors (fewer reads per search hop).
    Neighbors,
    /// pgvector's order: the element inserted last first.
    Insertion,
}

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

/// Lays out elements in the order they are given, recording in each where its tuples go.
struct LayoutPlan<'g, 's, R: Region, C: Compare> {
    graph: &'g BuildGraph<'s, R, C>,
    /// The graph's element ids, in the order they were added (ascending).
    ids: &'g [u32],
    /// The bytes of every element's stored value, if not its value in the build graph (a
    /// quantized build's records carry finer codes the pages do not get).
    value_len: Option<usize>,
    block: BlockNumber,
    page: PageFill,
}

impl<R: Region, C: Compare> LayoutPlan<'_, '_, R, C> {
    /// The sizes of element `i`'s tuples, and whether both go on one page.
    fn sizes(&self, i: u32) -> (usize, usize, bool) {
        let id = self.ids[i as usize];
        let value_len = self
            .value_len
            .unwrap_or_else(|| self.graph.value_bytes(id).len());
        let element = element_tuple_size(value_len);
        let neighbors = neighbor_tuple_size(self.graph.level(id), self.graph.m());
        let together = element + neighbors + ITEM_ID_SIZE <= MAX_ITEM_SIZE;
        (element, neighbors, together)
    }
}

impl<R: Region, C: Compare> PagePacker for LayoutPlan<'_, '_, R, C> {
    fn fits(&self, i: u32) -> bool {
        let (element, neighbors, together) = self.sizes(i);
        let free = self.page.free_space();
        free >= element && !(together && free < element + neighbors + ITEM_ID_SIZE)
    }

    fn place(&mut self, i: u32) {
        let (element_size, neighbor_size, _) = self.sizes(i);
        if !self.fits(i) {
            self.block += 1;
            self.page = PageFill::EMPTY;
        }
        let tid = ItemPointer::new(self.block, self.page.add(element_size));
        if self.page.free_space() < neighbor_size {
            self.block += 1;
            self.page = PageFill::EMPTY;
        }
        let neighbor_tid = ItemPointer::new(self.block, self.page.add(neighbor_size));
        self.graph
            .set_page_tids(self.ids[i as usize], tid, neighbor_tid);
    }
}

/// Places the elements and records in each where its tuples go; returns the element ids in
/// write order and the last block.
fn plan_layout<R: Region, C: Compare>(
    graph: &BuildGraph<'_, R, C>,
    placement: Placement,
    value_len: Option<usize>,
) -> (Vec<u32>, BlockNumber) {
    let ids = graph.elements();
    let mut plan = LayoutPlan {
        graph,
        ids: &ids,
        value_len,
        block: HEAD_BLKNO,
        page: PageFill::EMPTY,
    };
    match placement {
        Placement::Insertion => {
            for i in (0..ids.len() as u32).rev() {
                plan.place(i);
            }
            let last = plan.block;
            let mut order = ids;
            order.reverse();
            (order, last)
        }
        Placement::Neighbors => {
            let positions = SortedIds::new(&ids).unwrap_or_else(|_| {
                crate::out_of_memory::raise(
                    ids.len().saturating_mul(4),
                    "the hnsw build's placement",
                )
            });
            let index_of = |id: u32| {
                positions
                    .position(id)
                    .expect("a neighbor is an element of the graph")
            };
            let mut slots = Vec::new();
            let neighbors = |i: u32, out: &mut Vec<u32>| {
                slots.clear();
                graph.layer_neighbors(ids[i as usize], 0, &mut slots);
                out.extend(slots.iter().map(|&id| index_of(id)));
            };
            let mut order = shared_lists_first(ids.len() as u32, neighbors, &mut plan)
                .unwrap_or_else(|_| {
                    crate::out_of_memory::raise(
                        ids.len().saturating_mul(7),
                        "the hnsw build's placement",
                    )
                });
            for i in order.iter_mut() {
                *i = ids[*i as usize];
            }
            (order, plan.block)
        }
    }
}

/// What a quantized build writes besides the graph.
pub struct VectorOutput<'a> {
    /// The quantizer for the metapage (its vector insert page is set here).
    pub quantizer: QuantizerMeta,
    /// Bytes of the code record the pages keep of each element's value (the build graph's
    /// records may go on with finer codes).
    pub record_size: usize,
    /// Copies into the buffer (`quantizer.vector_size` bytes) the full vector kept under
    /// `slot`: during a build, an element's code record names its vector by that slot number
    /// (the block of its vector place), until this write-out gives it its page and offset.
    pub vector: &'a mut dyn FnMut(u32, &mut [u8]),
}

/// Where the vectors of the elements in `order` go: one after the other on vector pages from
/// `first_block` on.
fn plan_vectors(count: usize, vector_size: usize, first_block: BlockNumber) -> Vec<ItemPointer> {
    let size = VectorView::size(vector_size);
    let mut tids = Vec::new();
    crate::out_of_memory::reserve(&mut tids, count, "the hnsw build's vector layout");
    let (mut block, mut page) = (first_block, PageFill::EMPTY);
    for _ in 0..count {
        if page.free_space() < size {
            block += 1;
            page = PageFill::EMPTY;
        }
        tids.push(ItemPointer::new(block, page.add(size)));
    }
    tids
}

/// Writes the metapage and all element pages of `graph` into the (empty) fork of `rel`, and a
/// quantized index's vector pages.
pub fn write_graph<R: Region, C: Compare>(
    rel: Relation,
    graph: &BuildGraph<'_, R, C>,
    params: GraphParams,
    dimensions: u32,
    placement: Placement,
    mut vectors: Option<&mut VectorOutput<'_>>,
) {
    let (order, last_block) =
        plan_layout(graph, placement, vectors.as_ref().map(|v| v.record_size));
    let vector_tids = vectors.as_ref().map(|v| {
        plan_vectors(
            order.len(),
            v.quantizer.vector_size as usize,
            last_block + 1,
        )
    });
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
    match vectors.as_mut() {
        Some(output) => {
            meta.magic_number = QUANTIZED_MAGIC_NUMBER;
            meta.encode(page.contents_mut());
            let tids = vector_tids.as_deref().unwrap_or_default();
            output.quantizer.vector_insert_page = tids.last().map_or(NO_VECTOR_PAGE, |t| t.block);
            // The centroid chain follows the vector pages.
            let after = tids.last().map_or(last_block, |t| t.block);
            if let Some(regions) = output.quantizer.regions.as_mut() {
                regions.first_page = after + 1;
            }
            output.quantizer.encode(page.contents_mut());
            page.set_lower(output.quantizer.encoded_pd_lower());
        }
        None => {
            meta.encode(page.contents_mut());
            page.set_lower(META_PD_LOWER);
        }
    }
    guard.commit();

    let mut pages = PageWriter::start(rel, new_opaque());
    let mut heap_tids = Vec::new();
    let mut ids = Vec::new();
    let mut slots = Vec::new();
    let mut record = Vec::new();
    for (k, &id) in order.iter().enumerate() {
        let (tid, neighbor_tid) = graph.page_tids(id);
        graph.heap_tids(id, &mut heap_tids);
        let mut value = graph.value_bytes(id);
        if let (Some(tids), Some(output)) = (&vector_tids, vectors.as_ref()) {
            record.clear();
            record.extend_from_slice(&value[..output.record_size]);
            CodeRecord::set_vector(&mut record, tids[k]);
            value = &record;
        }
        let element = ElementTuple {
            level: graph.level(id),
            deleted: 0,
            version: 1,
            heap_tids: &heap_tids,
            neighbor_tid,
            value,
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
    if let (Some(output), Some(tids)) = (vectors, vector_tids) {
        write_vectors(rel, graph, &order, &tids, output);
        if let Some(regions) = &output.quantizer.regions {
            write_centroids(rel, regions.first_page, &regions.centroids);
        }
    }
}

/// Writes the vector pages of a quantized build: each element's full vector where
/// [`plan_vectors`] put it.
fn write_vectors<R: Region, C: Compare>(
    rel: Relation,
    graph: &BuildGraph<'_, R, C>,
    order: &[u32],
    tids: &[ItemPointer],
    output: &mut VectorOutput<'_>,
) {
    if order.is_empty() {
        return;
    }
    let size = output.quantizer.vector_size as usize;
    let mut vector = vec![0u8; size];
    let mut item = vec![0u8; VectorView::size(size)];
    let mut pages = PageWriter::start(rel, vector_opaque());
    for (&id, &tid) in order.iter().zip(tids) {
        let slot = match CodeRecord::parse(graph.value_bytes(id)) {
            Ok(record) => record.vector().block,
            Err(e) => pgrx::error!("hnsw build: {e}"),
        };
        (output.vector)(slot, &mut vector);
        VectorView::write(&mut item, &vector);
        pages.add(tid, &item);
    }
    pages.finish();
}

/// Fills pages of one chain one after the other, each locked only while it is filled.
struct PageWriter {
    rel: Relation,
    guard: Option<PageWriteGuard>,
    /// The special space of each new page.
    opaque: PageOpaque,
}

impl PageWriter {
    /// Adds the first page.
    fn start(rel: Relation, opaque: PageOpaque) -> Self {
        let mut writer = PageWriter {
            rel,
            guard: None,
            opaque,
        };
        writer.new_page();
        writer
    }

    fn new_page(&mut self) {
        let mut guard = self.rel.begin_write(WriteMode::Build);
        let slot = guard.add_new_page(OPAQUE_SIZE);
        self.opaque.encode(guard.page_mut(slot).special_mut());
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
