//! The checks of an hnsw index (pgvector 0.8.6's format, [`vector_formats::hnsw`]).
//!
//! * [`check`] with `cross_check` off reads every page once and looks at each on its own: the
//!   metapage, every page's layout and id, every item, every block number in range, and the
//!   page chain. It needs only a stable page at a time, so it runs beside writers.
//! * With `cross_check` on (the index must not change meanwhile), it also follows what the
//!   tuples point at: each element's neighbor tuple, each neighbor slot's element, the entry
//!   point, and which live elements a search can reach from it.
//!
//! A quantized index ([`vector_formats::hnsw_codes`]) is checked the same way, and also: its
//! quantizer section; its vector pages (off the graph chain, each linking forward to the next);
//! each element's code record (its size, where its vector is); and with `cross_check`, that
//! each element's vector slot holds a vector of the same hash, used by no other element.

use crate::heap::IndexedTids;
use crate::value::{check_value, ValueType};
use crate::{check_layout, filled, BlockSet, Corruption, Pages};
use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use vector_formats::hnsw::{
    max_level, neighbor_count, tuple_kind, ElementView, MetaPage, NeighborView, TupleKind,
    ELEMENT_HEADER_SIZE, HEAD_BLKNO, MAX_M, MIN_M, PAGE_ID, VERSION,
};
use vector_formats::hnsw_codes::{
    centroid_bytes, decode_centroids, is_centroid_page, is_vector_page, vector_hash, CodeRecord,
    QuantizerMeta, VectorView, RECORD_HEADER_SIZE,
};
use vector_formats::page::{
    BlockNumber, ChainOpaque, ItemFlags, ItemPointer, PageRef, BLCKSZ, FIRST_OFFSET_NUMBER,
    INVALID_BLOCK_NUMBER, INVALID_OFFSET_NUMBER,
};

/// pgvector's `ef_construction` limits.
const MIN_EF_CONSTRUCTION: u16 = 4;
const MAX_EF_CONSTRUCTION: u16 = 1000;

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub value_type: ValueType,
    /// Follow the links between tuples (needs an index that does not change meanwhile).
    pub cross_check: bool,
    /// Collect the heap TIDs and value fingerprints of live elements ([`Summary::heap_tids`]).
    pub heap_tids: bool,
}

/// What a clean check saw.
#[derive(Debug, Default)]
pub struct Summary {
    /// Blocks read, the metapage included.
    pub pages: u32,
    /// Never-initialized pages (a crash during relation extension leaves them; nothing
    /// links to them).
    pub zero_pages: u32,
    /// Initialized element pages the page chain does not reach.
    pub unchained_pages: u32,
    pub elements: u64,
    /// Elements not deleted that still hold heap TIDs.
    pub live_elements: u64,
    pub deleted_elements: u64,
    pub neighbor_tuples: u64,
    pub cross: Option<CrossSummary>,
    pub heap_tids: Option<IndexedTids>,
}

/// What the cross-check counted without calling it corruption.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CrossSummary {
    /// Live elements no link path from the entry point reaches (pgvector's pruning can leave
    /// some; searches cannot return them).
    pub unreachable: u64,
    /// Live elements whose level is above the entry point's (a crash between an insert and
    /// its metapage update leaves one).
    pub above_entry_level: u64,
    /// Neighbor slots on a layer above their target's level.
    pub links_above_target_level: u64,
    /// Neighbor tuples no element points at.
    pub orphan_neighbor_tuples: u64,
    /// A quantized index's vector slots in use that no element points at (a crash between
    /// storing a vector and its element leaves one).
    pub orphan_vectors: u64,
}

/// An element as the cross-check needs it.
#[derive(Clone, Copy)]
struct ElementFacts {
    level: u8,
    version: u8,
    live: bool,
    deleted: bool,
    neighbor_tid: ItemPointer,
    /// A quantized element's vector slot and the hash its record holds.
    vector: Option<(ItemPointer, u32)>,
}

/// A quantized index's vector slot.
#[derive(Clone, Copy)]
struct VectorFacts {
    free: bool,
    hash: u32,
}

#[derive(Clone, Copy)]
struct NeighborFacts {
    count: usize,
    version: u8,
}

/// The state of one check.
struct Checker<'p, P: Pages> {
    pages: &'p mut P,
    options: Options,
    meta: MetaPage,
    m: usize,
    /// The relation's size as last read (a block past it is re-checked against a fresh size).
    limit: BlockNumber,
    summary: Summary,
    elements: HashMap<ItemPointer, u32>,
    facts: Vec<(ItemPointer, ElementFacts)>,
    neighbors: HashMap<ItemPointer, NeighborFacts>,
    /// A quantized index's quantizer, and the bytes of its codes.
    quantizer: Option<(QuantizerMeta, usize)>,
    vectors: HashMap<ItemPointer, VectorFacts>,
    /// The vector pages.
    vector_pages: Vec<BlockNumber>,
    /// A format-2 index's centroid pages, with the bytes of centroids each holds.
    centroid_pages: HashMap<BlockNumber, usize>,
}

/// Checks the whole index; the first problem found is the error.
pub fn check<P: Pages>(pages: &mut P, options: Options) -> Result<Summary, Corruption> {
    let nblocks = pages.nblocks();
    if nblocks == 0 {
        return Err(Corruption::page(0, "the index has no metapage"));
    }
    let meta = pages.read(0, |page| check_metapage(page, nblocks))?;
    let quantizer = if meta.is_quantized() {
        Some(pages.read(0, |page| {
            check_quantizer(page, &meta, options.value_type, nblocks)
        })?)
    } else {
        None
    };
    let tids = match quantizer {
        Some(_) => IndexedTids::of_vector_hashes(),
        None => IndexedTids::default(),
    };
    let mut checker = Checker {
        pages,
        options,
        meta,
        m: usize::from(meta.m),
        limit: nblocks,
        summary: Summary {
            pages: nblocks,
            heap_tids: options.heap_tids.then_some(tids),
            ..Summary::default()
        },
        elements: HashMap::new(),
        facts: Vec::new(),
        neighbors: HashMap::new(),
        quantizer,
        vectors: HashMap::new(),
        vector_pages: Vec::new(),
        centroid_pages: HashMap::new(),
    };
    let mut next = filled(nblocks as usize, INVALID_BLOCK_NUMBER, 0)?;
    let mut zero = BlockSet::new(nblocks);
    let mut page = vec![0u8; BLCKSZ];
    for block in HEAD_BLKNO..nblocks {
        checker.pages.read(block, |p| page.copy_from_slice(p));
        match checker.element_page(block, &page)? {
            None => {
                zero.insert(block);
                checker.summary.zero_pages += 1;
            }
            Some(n) => next[block as usize] = n,
        }
    }
    let mut vector_pages = BlockSet::new(nblocks);
    for &block in checker
        .vector_pages
        .iter()
        .chain(checker.centroid_pages.keys())
    {
        vector_pages.insert(block);
    }
    checker.check_centroid_chain(&next)?;
    checker.summary.unchained_pages = check_chain(&next, &zero, &vector_pages)?;
    check_vector_chain(&checker.vector_pages, &next)?;
    if let Some((q, _)) = &checker.quantizer {
        let page = q.vector_insert_page;
        if page != INVALID_BLOCK_NUMBER && page < nblocks && !vector_pages.contains(page) {
            return Err(Corruption::page(
                0,
                format!("vector insert page {page} is not a vector page"),
            ));
        }
    }
    if options.cross_check {
        let cross = checker.cross_check(&zero, &mut page)?;
        checker.summary.cross = Some(cross);
    }
    Ok(checker.summary)
}

/// Block 0: layout, page id, and every field of the metapage.
fn check_metapage(bytes: &[u8], nblocks: BlockNumber) -> Result<MetaPage, Corruption> {
    let fail = |problem: String| Corruption::page(0, problem);
    let page = PageRef::new(bytes);
    check_layout(0, page, PAGE_ID, "hnsw")?;
    let meta = MetaPage::decode(page.contents()).map_err(|e| fail(e.to_string()))?;
    if meta.version != VERSION {
        return Err(fail(format!("metapage has version {}", meta.version)));
    }
    if meta.dimensions == 0 || meta.dimensions > i32::MAX as u32 {
        return Err(fail(format!("metapage has {} dimensions", meta.dimensions)));
    }
    let m = usize::from(meta.m);
    if !(MIN_M..=MAX_M).contains(&m) {
        return Err(fail(format!("metapage has m = {m}")));
    }
    let ef = meta.ef_construction;
    if !(MIN_EF_CONSTRUCTION..=MAX_EF_CONSTRUCTION).contains(&ef) || usize::from(ef) < 2 * m {
        return Err(fail(format!(
            "metapage has ef_construction = {ef} with m = {m}"
        )));
    }
    match meta.entry_point() {
        None => {
            if meta.entry_offno != INVALID_OFFSET_NUMBER || meta.entry_level != -1 {
                return Err(fail(format!(
                    "metapage has no entry block but offset {} and level {}",
                    meta.entry_offno, meta.entry_level
                )));
            }
        }
        Some(entry) => {
            if entry.tid.block == 0 || entry.tid.block >= nblocks {
                return Err(fail(format!(
                    "entry point is in block {}, outside the element pages 1..{nblocks}",
                    entry.tid.block
                )));
            }
            if entry.tid.offset == INVALID_OFFSET_NUMBER {
                return Err(fail("entry point has offset 0".into()));
            }
            if meta.entry_level < 0 || meta.entry_level > i16::from(max_level(m)) {
                return Err(fail(format!(
                    "entry point has level {}, above the highest level {} for m = {m}",
                    meta.entry_level,
                    max_level(m)
                )));
            }
        }
    }
    if meta.insert_page != INVALID_BLOCK_NUMBER
        && (meta.insert_page == 0 || meta.insert_page >= nblocks)
    {
        return Err(fail(format!(
            "insert page is block {}, outside the element pages 1..{nblocks}",
            meta.insert_page
        )));
    }
    Ok(meta)
}

/// A quantized index's quantizer section: what it says must fit the index and its column.
fn check_quantizer(
    bytes: &[u8],
    meta: &MetaPage,
    value_type: ValueType,
    nblocks: BlockNumber,
) -> Result<(QuantizerMeta, usize), Corruption> {
    let fail = |problem: String| Corruption::page(0, problem);
    let page = PageRef::new(bytes);
    let q = QuantizerMeta::decode(page.contents()).map_err(|e| fail(e.to_string()))?;
    let dims = meta.dimensions as usize;
    if q.centroid.len() != dims {
        return Err(fail(format!(
            "quantizer has a centroid of {} dimensions, the index {dims}",
            q.centroid.len()
        )));
    }
    if q.centroid.iter().any(|v| !v.is_finite()) {
        return Err(fail("quantizer's centroid has a non-finite element".into()));
    }
    let element = match value_type {
        ValueType::Vector => 4,
        ValueType::Halfvec => 2,
        _ => return Err(fail("a quantized index of a type without codes".into())),
    };
    if q.vector_size as usize != 8 + element * dims {
        return Err(fail(format!(
            "quantizer stores vectors of {} bytes, the column's are {}",
            q.vector_size,
            8 + element * dims
        )));
    }
    let lower = page.header().lower;
    if lower < q.encoded_pd_lower() {
        return Err(fail(format!(
            "metapage's pd_lower {lower} ends before its quantizer"
        )));
    }
    if q.vector_insert_page != INVALID_BLOCK_NUMBER
        && (q.vector_insert_page == 0 || q.vector_insert_page >= nblocks)
    {
        return Err(fail(format!(
            "vector insert page is block {}, outside 1..{nblocks}",
            q.vector_insert_page
        )));
    }
    let code_bytes = usize::from(q.bits) * 8 * dims.div_ceil(64);
    Ok((q, code_bytes))
}

/// `Σ uᵢ` of a code of `bits` bit planes (`Σⱼ 2ʲ · popcount(plane j)`).
fn code_sum(code: &[u8], bits: usize) -> u32 {
    let plane = code.len() / bits.max(1);
    code.chunks(plane.max(1))
        .take(bits)
        .enumerate()
        .map(|(j, p)| p.iter().map(|b| b.count_ones()).sum::<u32>() << j)
        .sum()
}

/// A quantized index's vector pages link forward, each to the next vector page (a link past the
/// last one read is a page added since).
fn check_vector_chain(
    vector_pages: &[BlockNumber],
    next: &[BlockNumber],
) -> Result<(), Corruption> {
    for (i, &block) in vector_pages.iter().enumerate() {
        let link = next[block as usize];
        let expected = vector_pages.get(i + 1).copied();
        let fine = link == INVALID_BLOCK_NUMBER
            || Some(link) == expected
            || (expected.is_none() && link as usize >= next.len());
        if !fine {
            return Err(Corruption::page(
                block,
                format!("vector page links to block {link}, not to the next vector page"),
            ));
        }
    }
    Ok(())
}

/// Follows the chain from the head page: it must not loop, nor reach a page never initialized
/// or a vector page. Returns how many initialized graph pages it does not reach.
fn check_chain(
    next: &[BlockNumber],
    zero: &BlockSet,
    vector: &BlockSet,
) -> Result<u32, Corruption> {
    let nblocks = next.len() as BlockNumber;
    let mut seen = BlockSet::new(nblocks);
    let mut block = HEAD_BLKNO;
    let mut previous = None;
    // A link past the size read at the start is a page added since: the chain goes on there.
    while block < nblocks {
        if zero.contains(block) {
            return Err(match previous {
                Some(p) => Corruption::page(p, format!("next page {block} is not initialized")),
                None => Corruption::page(block, "the head page is not initialized"),
            });
        }
        if vector.contains(block) {
            return Err(match previous {
                Some(p) => Corruption::page(p, format!("next page {block} is a vector page")),
                None => Corruption::page(block, "the head page is a vector page"),
            });
        }
        if !seen.insert(block) {
            let p = previous.expect("the head is seen first");
            return Err(Corruption::page(
                p,
                format!("page chain loops back to block {block}"),
            ));
        }
        previous = Some(block);
        block = next[block as usize];
    }
    let unchained = (HEAD_BLKNO..nblocks)
        .filter(|&b| !seen.contains(b) && !zero.contains(b) && !vector.contains(b))
        .count();
    Ok(unchained as u32)
}

impl<P: Pages> Checker<'_, P> {
    /// Whether `block` is an element page of the relation (re-reading its size when needed).
    fn in_range(&mut self, block: BlockNumber) -> bool {
        if block == 0 || block == INVALID_BLOCK_NUMBER {
            return false;
        }
        if block >= self.limit {
            self.limit = self.pages.nblocks();
        }
        block < self.limit
    }

    /// Checks an index TID found in a tuple: an item of an element page.
    fn check_index_tid(
        &mut self,
        at: ItemPointer,
        what: &str,
        tid: ItemPointer,
    ) -> Result<(), Corruption> {
        if tid.offset == INVALID_OFFSET_NUMBER || !self.in_range(tid.block) {
            return Err(Corruption::item(
                at.block,
                at.offset,
                format!(
                    "{what} ({},{}) is not on an element page",
                    tid.block, tid.offset
                ),
            ));
        }
        Ok(())
    }

    /// One element page; returns its next page, or `None` if it was never initialized.
    /// Makes room for `items` more tuples (each at most an element with its heap TIDs), so
    /// that a check of a large index fails with "out of memory", not an abort.
    fn reserve(&mut self, block: BlockNumber, items: usize) -> Result<(), Corruption> {
        let oom = |bytes: usize| Corruption::out_of_memory(block, bytes);
        let bytes = |size: usize| items.saturating_mul(size);
        self.elements
            .try_reserve(items)
            .map_err(|_| oom(bytes(size_of::<(ItemPointer, u32)>())))?;
        self.facts
            .try_reserve(items)
            .map_err(|_| oom(bytes(size_of::<(ItemPointer, ElementFacts)>())))?;
        self.neighbors
            .try_reserve(items)
            .map_err(|_| oom(bytes(size_of::<(ItemPointer, NeighborFacts)>())))?;
        if let Some(tids) = self.summary.heap_tids.as_mut() {
            tids.try_reserve(items.saturating_mul(vector_formats::hnsw::HEAPTIDS))
                .map_err(oom)?;
        }
        Ok(())
    }

    fn element_page(
        &mut self,
        block: BlockNumber,
        bytes: &[u8],
    ) -> Result<Option<BlockNumber>, Corruption> {
        let page = PageRef::new(bytes);
        if page.is_new() {
            if bytes.iter().any(|&b| b != 0) {
                return Err(Corruption::page(
                    block,
                    "page is not initialized but not all zeros",
                ));
            }
            return Ok(None);
        }
        check_layout(block, page, PAGE_ID, "hnsw")?;
        self.reserve(block, usize::from(page.max_offset()))?;
        let next = ChainOpaque::next_of(page.special());
        let kind = ChainOpaque::decode(page.special()).map_or(0, |o| o.unused);
        if is_vector_page(kind) {
            self.vector_page(block, page)?;
            return Ok(Some(next));
        }
        if is_centroid_page(kind) {
            self.centroid_page(block, page)?;
            return Ok(Some(next));
        }
        if next != INVALID_BLOCK_NUMBER && (next == block || !self.in_range(next)) {
            return Err(Corruption::page(
                block,
                format!("next page is block {next}, not another element page"),
            ));
        }
        for offset in FIRST_OFFSET_NUMBER..=page.max_offset() {
            let at = ItemPointer::new(block, offset);
            let id = page.item_id(offset).expect("offset within max_offset");
            let Some(item) = page.item(offset).filter(|_| id.flags == ItemFlags::Normal) else {
                return Err(Corruption::item(
                    block,
                    offset,
                    format!(
                        "line pointer is {:?} at {} for {} bytes",
                        id.flags, id.offset, id.len
                    ),
                ));
            };
            match tuple_kind(item) {
                TupleKind::Element => self.element(at, item)?,
                TupleKind::Neighbor => self.neighbor_tuple(at, item)?,
                TupleKind::Other(t) => {
                    return Err(Corruption::item(
                        block,
                        offset,
                        format!("tuple has unknown type {t}"),
                    ))
                }
            }
        }
        Ok(Some(next))
    }

    /// A quantized index's vector page: every item a vector tuple of the index's size.
    fn vector_page(&mut self, block: BlockNumber, page: PageRef<'_>) -> Result<(), Corruption> {
        let Some((q, _)) = &self.quantizer else {
            return Err(Corruption::page(
                block,
                "a vector page in an index without quantization",
            ));
        };
        let size = q.vector_size as usize;
        self.vectors
            .try_reserve(usize::from(page.max_offset()))
            .map_err(|_| Corruption::out_of_memory(block, 64 * usize::from(page.max_offset())))?;
        for offset in FIRST_OFFSET_NUMBER..=page.max_offset() {
            let fail = |problem: String| Corruption::item(block, offset, problem);
            let item = page
                .item(offset)
                .ok_or_else(|| fail("vector slot is not a normal item".into()))?;
            let view = VectorView::parse(item).map_err(|e| fail(e.to_string()))?;
            let value = view
                .value()
                .filter(|v| v.len() == size)
                .ok_or_else(|| fail(format!("vector slot does not hold a {size}-byte vector")))?;
            if !view.is_free() {
                check_value(self.options.value_type, self.meta.dimensions, value)
                    .map_err(|p| fail(format!("vector's {p}")))?;
            }
            self.vectors.insert(
                ItemPointer::new(block, offset),
                VectorFacts {
                    free: view.is_free(),
                    hash: vector_hash(value),
                },
            );
        }
        self.vector_pages.push(block);
        Ok(())
    }

    /// A format-2 index's centroid page: one item, a piece of the centroids.
    fn centroid_page(&mut self, block: BlockNumber, page: PageRef<'_>) -> Result<(), Corruption> {
        if !matches!(&self.quantizer, Some((q, _)) if q.regions.is_some()) {
            return Err(Corruption::page(
                block,
                "a centroid page in an index without regions",
            ));
        }
        let item = (page.max_offset() == 1)
            .then(|| page.item(FIRST_OFFSET_NUMBER))
            .flatten()
            .ok_or_else(|| Corruption::page(block, "centroid page does not hold one item"))?;
        if decode_centroids(item).iter().any(|v| !v.is_finite()) {
            return Err(Corruption::page(
                block,
                "centroid page holds a non-finite value",
            ));
        }
        self.centroid_pages.insert(block, item.len());
        Ok(())
    }

    /// The centroid chain: from the metapage's first centroid page, centroid pages only, no
    /// loop, exactly the bytes of the index's regions, and no centroid page left off it.
    fn check_centroid_chain(&self, next: &[BlockNumber]) -> Result<(), Corruption> {
        let Some((q, _)) = &self.quantizer else {
            return Ok(());
        };
        let Some(regions) = &q.regions else {
            return Ok(());
        };
        let want = centroid_bytes(regions.count as usize, q.dims());
        let (mut block, mut have, mut seen) = (regions.first_page, 0usize, 0usize);
        let mut from = 0;
        while have < want || seen == 0 {
            let Some(&len) = self.centroid_pages.get(&block) else {
                return Err(Corruption::page(
                    from,
                    format!("centroid chain reaches block {block}, not a centroid page"),
                ));
            };
            seen += 1;
            have += len;
            if seen > self.centroid_pages.len() {
                return Err(Corruption::page(block, "centroid chain loops"));
            }
            from = block;
            block = next[block as usize];
            if have >= want {
                break;
            }
        }
        if have == want && block != INVALID_BLOCK_NUMBER {
            return Err(Corruption::page(
                from,
                format!("the last centroid page links to block {block}"),
            ));
        }
        if have != want || seen != self.centroid_pages.len() {
            return Err(Corruption::page(
                from,
                format!(
                    "centroid chain holds {have} bytes on {seen} of {} centroid pages, {want} bytes expected",
                    self.centroid_pages.len()
                ),
            ));
        }
        Ok(())
    }

    fn element(&mut self, at: ItemPointer, item: &[u8]) -> Result<(), Corruption> {
        let fail = |problem: String| Corruption::item(at.block, at.offset, problem);
        let e = ElementView::parse(item).map_err(|e| fail(e.to_string()))?;
        let max = max_level(self.m);
        if e.level() > max {
            return Err(fail(format!(
                "element has level {}, above the highest level {max} for m = {}",
                e.level(),
                self.m
            )));
        }
        if e.deleted_byte() > 1 {
            return Err(fail(format!(
                "element has deleted flag {}",
                e.deleted_byte()
            )));
        }
        let heap_tids = e.heap_tids().count();
        if let Some(i) =
            (heap_tids..vector_formats::hnsw::HEAPTIDS).find(|&i| e.heap_tid(i).is_valid())
        {
            return Err(fail(format!(
                "element has heap TID slot {i} in use after an empty one"
            )));
        }
        self.check_index_tid(at, "element's neighbor TID", e.neighbor_tid())?;
        self.summary.elements += 1;
        let live = !e.deleted() && heap_tids > 0;
        let mut vector = None;
        if e.deleted() {
            self.summary.deleted_elements += 1;
            if heap_tids > 0 {
                return Err(fail("deleted element still has heap TIDs".into()));
            }
        } else {
            let value = e
                .value()
                .filter(|v| ELEMENT_HEADER_SIZE + v.len() <= item.len())
                .ok_or_else(|| {
                    fail("element's value is not a varlena that fits the item".into())
                })?;
            vector = match &self.quantizer {
                Some((_, code_bytes)) => {
                    let record = CodeRecord::parse(value)
                        .ok()
                        .filter(|_| value.len() == RECORD_HEADER_SIZE + code_bytes)
                        .ok_or_else(|| {
                            fail(format!(
                                "element's code record is {} bytes, not {}",
                                value.len(),
                                RECORD_HEADER_SIZE + code_bytes
                            ))
                        })?;
                    let sum = code_sum(
                        record.code(),
                        usize::from(self.quantizer.as_ref().map_or(1, |(q, _)| q.bits)),
                    );
                    if sum != record.factors().code_sum {
                        return Err(fail(format!(
                            "element's code sums to {sum}, its record says {}",
                            record.factors().code_sum
                        )));
                    }
                    let regions = self
                        .quantizer
                        .as_ref()
                        .and_then(|(q, _)| q.regions.as_ref())
                        .map_or(1, |r| r.count);
                    if record.region() >= regions {
                        return Err(fail(format!(
                            "element's code is of region {}, the index has {regions}",
                            record.region()
                        )));
                    }
                    let place = record.vector();
                    if place.offset == INVALID_OFFSET_NUMBER || !self.in_range(place.block) {
                        return Err(fail(format!(
                            "element's vector ({},{}) is not on a vector page",
                            place.block, place.offset
                        )));
                    }
                    Some((place, record.hash()))
                }
                None => {
                    check_value(self.options.value_type, self.meta.dimensions, value)
                        .map_err(|p| fail(format!("element's {p}")))?;
                    None
                }
            };
            if let Some(tids) = &mut self.summary.heap_tids {
                for t in e.heap_tids() {
                    let fresh = match vector {
                        Some((_, hash)) => tids.insert_hash(t, hash),
                        None => tids.insert(t, value),
                    };
                    if !fresh {
                        return Err(fail(format!(
                            "heap TID ({},{}) is indexed twice",
                            t.block, t.offset
                        )));
                    }
                }
            }
        }
        if live {
            self.summary.live_elements += 1;
        }
        if self.options.cross_check {
            let facts = ElementFacts {
                level: e.level(),
                version: e.version(),
                live,
                deleted: e.deleted(),
                neighbor_tid: e.neighbor_tid(),
                vector,
            };
            self.elements.insert(at, self.facts.len() as u32);
            self.facts.push((at, facts));
        }
        Ok(())
    }

    fn neighbor_tuple(&mut self, at: ItemPointer, item: &[u8]) -> Result<(), Corruption> {
        let fail = |problem: String| Corruption::item(at.block, at.offset, problem);
        let n = NeighborView::parse(item).map_err(|e| fail(e.to_string()))?;
        let count = n.count();
        let highest = neighbor_count(max_level(self.m), self.m);
        if count % self.m != 0 || count < 2 * self.m || count > highest {
            return Err(fail(format!(
                "neighbor tuple has {count} slots, not (level + 2) * m for m = {}",
                self.m
            )));
        }
        for (i, tid) in n.tids().enumerate() {
            if tid.is_valid() {
                self.check_index_tid(at, &format!("neighbor slot {i}"), tid)?;
            }
        }
        self.summary.neighbor_tuples += 1;
        if self.options.cross_check {
            self.neighbors.insert(
                at,
                NeighborFacts {
                    count,
                    version: n.version(),
                },
            );
        }
        Ok(())
    }

    /// The links between tuples, then reachability from the entry point.
    fn cross_check(
        &mut self,
        zero: &BlockSet,
        page: &mut [u8],
    ) -> Result<CrossSummary, Corruption> {
        let mut cross = CrossSummary::default();
        let m = self.m;
        // Each element's neighbor tuple: there, of its level's size, of its version.
        let mut owners: HashMap<ItemPointer, u32> = HashMap::new();
        owners.try_reserve(self.facts.len()).map_err(|_| {
            let bytes = self
                .facts
                .len()
                .saturating_mul(size_of::<(ItemPointer, u32)>());
            Corruption::out_of_memory(0, bytes)
        })?;
        for (i, (at, e)) in self.facts.iter().enumerate() {
            let fail = |problem: String| Corruption::item(at.block, at.offset, problem);
            let t = e.neighbor_tid;
            let Some(n) = self.neighbors.get(&t) else {
                return Err(fail(format!(
                    "element's neighbor TID ({},{}) is not a neighbor tuple",
                    t.block, t.offset
                )));
            };
            if n.count != neighbor_count(e.level, m) {
                return Err(fail(format!(
                    "element has level {} but its neighbor tuple ({},{}) {} slots",
                    e.level, t.block, t.offset, n.count
                )));
            }
            if n.version != e.version {
                return Err(fail(format!(
                    "element has version {} but its neighbor tuple ({},{}) version {}",
                    e.version, t.block, t.offset, n.version
                )));
            }
            if owners.insert(t, i as u32).is_some() {
                return Err(fail(format!(
                    "neighbor tuple ({},{}) belongs to two elements",
                    t.block, t.offset
                )));
            }
        }
        cross.orphan_neighbor_tuples = (self.neighbors.len() - owners.len()) as u64;

        // A quantized element's vector: there, in use, of its hash, and its alone.
        if self.quantizer.is_some() {
            let mut used: HashMap<ItemPointer, ItemPointer> = HashMap::new();
            for (at, e) in &self.facts {
                let Some((place, hash)) = e.vector else {
                    continue;
                };
                let fail = |problem: String| Corruption::item(at.block, at.offset, problem);
                let Some(v) = self.vectors.get(&place) else {
                    return Err(fail(format!(
                        "element's vector ({},{}) is not a vector slot",
                        place.block, place.offset
                    )));
                };
                if v.free {
                    return Err(fail(format!(
                        "element's vector slot ({},{}) is marked free",
                        place.block, place.offset
                    )));
                }
                if v.hash != hash {
                    return Err(fail(format!(
                        "element's vector ({},{}) is not the vector its code was made from",
                        place.block, place.offset
                    )));
                }
                if let Some(other) = used.insert(place, *at) {
                    return Err(fail(format!(
                        "element shares its vector slot ({},{}) with element ({},{})",
                        place.block, place.offset, other.block, other.offset
                    )));
                }
            }
            let in_use = self.vectors.values().filter(|v| !v.free).count();
            cross.orphan_vectors = (in_use - used.len()) as u64;
        }

        // Every neighbor slot names an element, and not its own.
        for block in HEAD_BLKNO..self.summary.pages {
            if zero.contains(block) {
                continue;
            }
            self.pages.read(block, |p| page.copy_from_slice(p));
            let view = PageRef::new(page);
            for (offset, item) in view.items() {
                let at = ItemPointer::new(block, offset);
                let Some(&owner) = owners.get(&at) else {
                    continue;
                };
                let (owner_tid, e) = self.facts[owner as usize];
                let n = NeighborView::parse(item).expect("checked in the first pass");
                for layer in 0..=e.level {
                    for tid in n.layer(e.level, m, layer) {
                        let target = self.elements.get(&tid).map(|&t| self.facts[t as usize].1);
                        let Some(target) = target else {
                            return Err(Corruption::item(
                                block,
                                offset,
                                format!(
                                    "neighbor on layer {layer} ({},{}) is not an element",
                                    tid.block, tid.offset
                                ),
                            ));
                        };
                        if tid == owner_tid {
                            return Err(Corruption::item(
                                block,
                                offset,
                                format!("neighbor on layer {layer} is the element itself"),
                            ));
                        }
                        if target.level < layer {
                            cross.links_above_target_level += 1;
                        }
                    }
                }
            }
        }

        // The entry point, and what it reaches.
        let Some(entry) = self.meta.entry_point() else {
            cross.unreachable = self.summary.live_elements;
            return Ok(cross);
        };
        let fail = |problem: String| Corruption::page(0, problem);
        let Some(&entry_index) = self.elements.get(&entry.tid) else {
            return Err(fail(format!(
                "entry point ({},{}) is not an element",
                entry.tid.block, entry.tid.offset
            )));
        };
        let e = self.facts[entry_index as usize].1;
        if e.level != entry.level {
            return Err(fail(format!(
                "entry point has level {} in the metapage, {} in its element",
                entry.level, e.level
            )));
        }
        if e.deleted {
            return Err(fail("entry point is a deleted element".into()));
        }
        cross.above_entry_level = self
            .facts
            .iter()
            .filter(|(_, f)| f.live && f.level > entry.level)
            .count() as u64;
        cross.unreachable = self.summary.live_elements - self.reached_live(entry_index)?;
        Ok(cross)
    }

    /// Live elements reached from `entry` over the links of every layer (one page read per
    /// element reached).
    fn reached_live(&mut self, entry: u32) -> Result<u64, Corruption> {
        let m = self.m;
        let n = self.facts.len();
        let mut seen = filled(n, false, 0)?;
        let mut queue = VecDeque::new();
        queue
            .try_reserve(n)
            .map_err(|_| Corruption::out_of_memory(0, n.saturating_mul(size_of::<u32>())))?;
        queue.push_back(entry);
        seen[entry as usize] = true;
        let mut live = 0;
        while let Some(i) = queue.pop_front() {
            let e = self.facts[i as usize].1;
            live += u64::from(e.live);
            let t = e.neighbor_tid;
            let links: Vec<ItemPointer> = self.pages.read(t.block, |p| {
                let item = PageRef::new(p).item(t.offset).unwrap_or_default();
                match NeighborView::parse(item) {
                    Ok(n) => (0..=e.level)
                        .flat_map(|layer| n.layer(e.level, m, layer))
                        .collect(),
                    Err(_) => Vec::new(),
                }
            });
            for tid in links {
                if let Some(&j) = self.elements.get(&tid) {
                    if !std::mem::replace(&mut seen[j as usize], true) {
                        queue.push_back(j);
                    }
                }
            }
        }
        Ok(live)
    }
}
