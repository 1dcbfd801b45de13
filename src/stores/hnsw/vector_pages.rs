//! The full vectors of a quantized index: vector pages, a chain of their own beside the graph
//! (`vector_formats::hnsw_codes`).
//!
//! * [`VectorPages::exact_distances`] is the rerank's read: the candidates' vector blocks are
//!   grouped, all requested at once through the same read policy as the graph's hops (a reader
//!   of its own, [`Walk::Rerank`], whose cold or warm state follows the vector pages and not
//!   the graph's), and each is read once under a share lock.
//! * [`store_vector`] gives an insert a slot: the first free slot (its element was deleted by
//!   vacuum) or free space on the chain from the metapage's vector insert page, else a new
//!   page linked at the end of the chain.
//! * [`free_vectors`] marks the slots of elements vacuum deletes, for later inserts.
//!
//! Each change is one GenericXLog record ([`WriteMode::Wal`]), or made in place during a build.
//! At most one vector page is locked at a time (two when the chain grows: the last page, then
//! the new one), and never together with a graph page or the metapage, so these locks cannot
//! take part in a deadlock.

use crate::opclass::{Support, Value};
use crate::storage::io::{RelationBlocks, Settings};
use crate::storage::page::ITEM_ID_SIZE;
use crate::storage::pinned::{self, PinnedPage};
use crate::storage::PageRef;
use crate::storage::{
    BlockNumber, ChainWalk, ItemPointer, PageWriteGuard, ReadMode, Relation, WriteMode,
};
use crate::stores::hnsw::format::{
    new_opaque, PageOpaque, MAX_ITEM_SIZE, METAPAGE_BLKNO, OPAQUE_SIZE,
};
use crate::stores::hnsw::metapage::read_quantizer;
use vector_formats::hnsw_codes::{
    is_centroid_page, is_vector_page, QuantizerMeta, VectorView, NO_VECTOR_PAGE, VECTOR_PAGE,
};
use vector_io::{BatchLayout, BlockReader, IoCounters, Walk};

/// The special space of a new vector page.
pub fn vector_opaque() -> PageOpaque {
    PageOpaque {
        unused: VECTOR_PAGE,
        ..new_opaque()
    }
}

/// Raises "index is corrupted" unless block `block` (`page`) is of the kind a chain expects: a
/// vector page (`vector`) or a graph page. A damaged link never makes a writer put tuples on
/// the wrong kind of page (a centroid page is neither).
pub fn expect_page_kind(rel: Relation, block: BlockNumber, page: &PageRef<'_>, vector: bool) {
    let unused = PageOpaque::decode(page.special()).map_or(0, |o| o.unused);
    let found = if is_vector_page(unused) {
        "vector"
    } else if is_centroid_page(unused) {
        "centroid"
    } else {
        "graph"
    };
    let wanted = if vector { "vector" } else { "graph" };
    if found != wanted {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!(
                "index \"{}\" links to {found} page {block} where a {wanted} page belongs",
                rel.name()
            )
        );
    }
}

/// Reads the full vectors of a scan's candidates.
pub struct VectorPages {
    exact: Support,
    reader: BlockReader<RelationBlocks>,
    layout: BatchLayout,
    pins: Vec<PinnedPage>,
}

impl VectorPages {
    /// The vector pages of `rel`, compared with the operator class's own distance, read with
    /// `io`.
    pub fn open(rel: Relation, exact: Support, io: Settings) -> Self {
        VectorPages {
            exact,
            reader: BlockReader::for_walk(RelationBlocks::new(rel, false), io, Walk::Rerank),
            layout: BatchLayout::default(),
            pins: Vec::new(),
        }
    }

    /// Reads with `io` from now on (a scan passes the current settings at each fetch).
    pub fn apply_io_settings(&mut self, io: Settings) {
        self.reader.apply(io);
    }

    /// What the reranks' reads did so far.
    pub fn io_counters(&self) -> IoCounters {
        self.reader.counters()
    }

    /// The exact distance from `query` to the vector at each of `vectors` (one entry each, in
    /// order; `None` for a slot that no longer holds a vector).
    pub fn exact_distances(
        &mut self,
        query: &Value,
        vectors: &[ItemPointer],
        out: &mut Vec<Option<f64>>,
    ) {
        out.clear();
        out.resize(vectors.len(), None);
        let mut layout = std::mem::take(&mut self.layout);
        layout.group(vectors, |tid| tid.block);
        let query = self.exact.prepare(query);
        let mut pins = std::mem::take(&mut self.pins);
        let limit = pinned::pin_limit();
        // Every block of the batch is asked for at once, within the read budget.
        let mut batch = self.reader.batch(layout.blocks(), vectors.len());
        loop {
            let first = batch.fill(&mut pins, limit, |_, _, _, _| {});
            if pins.is_empty() {
                break;
            }
            for (k, pin) in (first..).zip(pins.drain(..)) {
                let guard = pin.lock(ReadMode::Shared);
                let page = guard.page();
                for &i in layout.members(k) {
                    let tid = vectors[i as usize];
                    let value = page
                        .item(tid.offset)
                        .and_then(|item| VectorView::parse(item).ok())
                        .filter(|view| !view.is_free())
                        .and_then(|view| view.value());
                    out[i as usize] = value.map(|v| query.distance(v));
                }
            }
        }
        drop(batch);
        self.layout = layout;
        self.pins = pins;
    }
}

/// The quantizer section of the metapage, and its vector insert page.
fn vector_insert_page(rel: Relation) -> BlockNumber {
    read_quantizer(rel).vector_insert_page
}

/// Records `block` as the metapage's vector insert page.
fn set_vector_insert_page(rel: Relation, block: BlockNumber, mode: WriteMode) {
    let mut guard = rel.write_page(METAPAGE_BLKNO, mode);
    let mut page = guard.page_mut(0);
    QuantizerMeta::set_vector_insert_page(page.contents_mut(), block);
    guard.commit();
}

/// Stores `value` (a vector varlena) in a free slot of the vector chain or at its end and
/// returns where.
pub fn store_vector(rel: Relation, value: &[u8], mode: WriteMode) -> ItemPointer {
    let size = VectorView::size(value.len());
    if size > MAX_ITEM_SIZE {
        pgrx::error!("index row size {size} exceeds hnsw maximum, {MAX_ITEM_SIZE}");
    }
    let start = vector_insert_page(rel);
    let mut walk = ChainWalk::new(rel);
    let mut current = walk.next(start);
    let mut last: Option<BlockNumber> = None;
    while let Some(block) = current {
        let mut guard = rel.write_page(block, mode);
        expect_page_kind(rel, block, &guard.page(0), true);
        if let Some(offset) = take_free_slot(&mut guard, value, size) {
            guard.commit();
            if block != start {
                set_vector_insert_page(rel, block, mode);
            }
            return ItemPointer::new(block, offset);
        }
        let next = PageOpaque::next_of(guard.page(0).special());
        if next == NO_VECTOR_PAGE {
            // The end of the chain: a new page after this one, both changed in one record.
            let slot = guard.add_new_page(OPAQUE_SIZE);
            vector_opaque().encode(guard.page_mut(slot).special_mut());
            let new_block = guard.block(slot);
            PageOpaque::set_next_blkno(guard.page_mut(0).special_mut(), new_block);
            let offset = add_vector(&mut guard, slot, value, size);
            guard.commit();
            set_vector_insert_page(rel, new_block, mode);
            return ItemPointer::new(new_block, offset);
        }
        drop(guard);
        last = Some(block);
        current = walk.next(next);
    }
    debug_assert!(last.is_none(), "a chain ends on a page that says so");
    // No vector page yet (an index built on an empty table): the first one.
    let mut guard = rel.begin_write(mode);
    let slot = guard.add_new_page(OPAQUE_SIZE);
    vector_opaque().encode(guard.page_mut(slot).special_mut());
    let new_block = guard.block(slot);
    let offset = add_vector(&mut guard, slot, value, size);
    guard.commit();
    set_vector_insert_page(rel, new_block, mode);
    ItemPointer::new(new_block, offset)
}

/// Puts `value` into a free slot of the page in slot 0 of `guard`, or into its free space;
/// the offset, or `None` when the page has neither.
fn take_free_slot(
    guard: &mut PageWriteGuard,
    value: &[u8],
    size: usize,
) -> Option<crate::storage::OffsetNumber> {
    let free = {
        let page = guard.page(0);
        (1..=page.max_offset()).find(|&offset| {
            page.item(offset)
                .and_then(|item| VectorView::parse(item).ok())
                .is_some_and(|view| view.is_free() && item_len(&page, offset) >= size)
        })
    };
    if let Some(offset) = free {
        let mut page = guard.page_mut(0);
        let item = page.item_mut(offset).expect("the free slot was just seen");
        VectorView::write(item, value);
        return Some(offset);
    }
    if guard.page(0).free_space() >= size + ITEM_ID_SIZE {
        return Some(add_vector(guard, 0, value, size));
    }
    None
}

fn item_len(page: &crate::storage::PageRef<'_>, offset: crate::storage::OffsetNumber) -> usize {
    page.item(offset).map_or(0, <[u8]>::len)
}

/// Adds a vector tuple holding `value` to the page in `slot`.
fn add_vector(
    guard: &mut PageWriteGuard,
    slot: usize,
    value: &[u8],
    size: usize,
) -> crate::storage::OffsetNumber {
    let mut item = vec![0u8; size];
    VectorView::write(&mut item, value);
    match guard.page_mut(slot).add_item(&item) {
        Some(offset) => offset,
        None => pgrx::error!("failed to add index item"),
    }
}

/// Marks the vector slots `vectors` free (their elements were deleted); the lowest block freed
/// becomes the vector insert page if it comes before the current one.
pub fn free_vectors(rel: Relation, vectors: &[ItemPointer], mode: WriteMode) {
    let mut sorted: Vec<ItemPointer> = vectors
        .iter()
        .copied()
        .filter(|tid| tid.block != NO_VECTOR_PAGE)
        .collect();
    sorted.sort();
    for chunk in sorted.chunk_by(|a, b| a.block == b.block) {
        let block = chunk[0].block;
        if block >= rel.nblocks() {
            continue;
        }
        let mut guard = rel.write_page(block, mode);
        expect_page_kind(rel, block, &guard.page(0), true);
        let mut page = guard.page_mut(0);
        for tid in chunk {
            if let Some(item) = page.item_mut(tid.offset) {
                if VectorView::parse(item).is_ok() {
                    VectorView::set_free(item, true);
                }
            }
        }
        guard.commit();
    }
    if let Some(lowest) = sorted.first() {
        let current = vector_insert_page(rel);
        if current == NO_VECTOR_PAGE || lowest.block < current {
            set_vector_insert_page(rel, lowest.block, mode);
        }
    }
}
