//! The checks of an ivfflat index (pgvector 0.8.6's format, [`vector_formats::ivfflat`]).
//!
//! The metapage; the chain of list pages from block 1, with `lists` list tuples whose centers
//! have the index's dimensions; and each list's chain of entry pages, every entry a whole
//! index tuple with a heap TID and a value of the index's dimensions. No page may be on two
//! chains, and every block number must name a page of the index. With `cross_check` (the
//! index must not change meanwhile), each list's insert page must also be on its own chain.

use crate::heap::IndexedTids;
use crate::value::{check_value, ValueType};
use crate::{check_layout, BlockSet, Corruption, Pages};
use vector_formats::ivfflat::{
    parse_entry, EntryValue, ListTuple, MetaPage, HEAD_BLKNO, MAX_LISTS, MIN_LISTS, PAGE_ID,
    VERSION,
};
use vector_formats::page::{
    BlockNumber, ChainOpaque, ItemFlags, ItemPointer, PageRef, BLCKSZ, FIRST_OFFSET_NUMBER,
    INVALID_BLOCK_NUMBER,
};
use vector_formats::varlena::header_4b;

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub value_type: ValueType,
    /// Check what needs a stable index (each list's insert page on its chain).
    pub cross_check: bool,
    /// Collect the heap TIDs and value fingerprints of the entries ([`Summary::heap_tids`]).
    pub heap_tids: bool,
}

/// What a clean check saw.
#[derive(Debug, Default)]
pub struct Summary {
    pub pages: u32,
    pub lists: u32,
    pub list_pages: u32,
    pub entry_pages: u32,
    pub entries: u64,
    /// Entries whose value Postgres compressed (only Postgres can read those; their heap TIDs
    /// are still checked).
    pub compressed_entries: u64,
    /// Never-initialized pages, on no chain (a crash during relation extension leaves them).
    pub zero_pages: u32,
    /// Initialized pages on no chain.
    pub unchained_pages: u32,
    pub heap_tids: Option<IndexedTids>,
}

struct List {
    at: ItemPointer,
    start: BlockNumber,
    insert: BlockNumber,
}

/// Checks the whole index; the first problem found is the error.
pub fn check<P: Pages>(pages: &mut P, options: Options) -> Result<Summary, Corruption> {
    let nblocks = pages.nblocks();
    if nblocks < 2 {
        return Err(Corruption::page(
            0,
            format!("the index has {nblocks} pages, fewer than a metapage and a list page"),
        ));
    }
    let mut summary = Summary {
        pages: nblocks,
        heap_tids: options.heap_tids.then(IndexedTids::default),
        ..Summary::default()
    };
    let mut page = vec![0u8; BLCKSZ];
    pages.read(0, |p| page.copy_from_slice(p));
    let meta = check_metapage(&page)?;
    let mut on_chain = BlockSet::new(nblocks);
    on_chain.insert(0);
    // A block past the size read at the start belongs to a page added since: re-read it.
    let mut limit = nblocks;
    let mut in_range = |pages: &mut P, block: BlockNumber| {
        if block == 0 || block == INVALID_BLOCK_NUMBER {
            return false;
        }
        if block >= limit {
            limit = pages.nblocks();
        }
        block < limit
    };

    // The list pages.
    let mut lists = Vec::new();
    let mut block = HEAD_BLKNO;
    let mut previous = None;
    while block != INVALID_BLOCK_NUMBER {
        if block >= nblocks || !on_chain.insert(block) {
            return Err(chain_error(previous, block, "list"));
        }
        pages.read(block, |p| page.copy_from_slice(p));
        let view = PageRef::new(&page);
        check_layout(block, view, PAGE_ID, "ivfflat")?;
        for (offset, item) in normal_items(block, view)? {
            let fail = |problem: String| Corruption::item(block, offset, problem);
            let tuple =
                ListTuple::parse(item).map_err(|_| fail("list tuple is malformed".into()))?;
            with_aligned(tuple.center(), |c| {
                check_value(options.value_type, u32::from(meta.dimensions), c)
            })
            .map_err(|p| fail(format!("list center's {p}")))?;
            for (what, b) in [
                ("start", tuple.start_page()),
                ("insert", tuple.insert_page()),
            ] {
                if !in_range(pages, b) {
                    return Err(fail(format!(
                        "list's {what} page is block {b}, not a page of the index"
                    )));
                }
            }
            lists.push(List {
                at: ItemPointer::new(block, offset),
                start: tuple.start_page(),
                insert: tuple.insert_page(),
            });
        }
        summary.list_pages += 1;
        previous = Some(block);
        block = ChainOpaque::next_of(view.special());
    }
    if lists.len() != usize::from(meta.lists) {
        return Err(Corruption::page(
            0,
            format!(
                "metapage has {} lists, the list pages {}",
                meta.lists,
                lists.len()
            ),
        ));
    }
    summary.lists = lists.len() as u32;

    // Each list's entry pages.
    for list in &lists {
        let mut block = list.start;
        let mut previous: Option<BlockNumber> = None;
        let mut saw_insert_page = false;
        while block != INVALID_BLOCK_NUMBER {
            if !in_range(pages, block) {
                return Err(match previous {
                    Some(p) => Corruption::page(
                        p,
                        format!("next page is block {block}, not a page of the index"),
                    ),
                    None => Corruption::item(
                        list.at.block,
                        list.at.offset,
                        format!("list's start page {block} is not a page of the index"),
                    ),
                });
            }
            if block < nblocks && !on_chain.insert(block) {
                return Err(match previous {
                    Some(p) => {
                        Corruption::page(p, format!("next page {block} is already on a chain"))
                    }
                    None => Corruption::item(
                        list.at.block,
                        list.at.offset,
                        format!("list's start page {block} is already on a chain"),
                    ),
                });
            }
            if block >= nblocks {
                break; // added since the check began
            }
            saw_insert_page |= block == list.insert;
            pages.read(block, |p| page.copy_from_slice(p));
            let view = PageRef::new(&page);
            if view.is_new() {
                return Err(Corruption::page(
                    previous.unwrap_or(list.at.block),
                    format!("links to block {block}, which is not initialized"),
                ));
            }
            check_layout(block, view, PAGE_ID, "ivfflat")?;
            let items = normal_items(block, view)?;
            if let Some(tids) = summary.heap_tids.as_mut() {
                tids.try_reserve(items.len())
                    .map_err(|bytes| Corruption::out_of_memory(block, bytes))?;
            }
            for (offset, item) in items {
                entry(
                    &mut summary,
                    options,
                    &meta,
                    ItemPointer::new(block, offset),
                    item,
                )?;
            }
            summary.entry_pages += 1;
            previous = Some(block);
            block = ChainOpaque::next_of(view.special());
        }
        if options.cross_check && !saw_insert_page {
            return Err(Corruption::item(
                list.at.block,
                list.at.offset,
                format!("list's insert page {} is not on its chain", list.insert),
            ));
        }
    }

    // Pages on no chain.
    for block in 1..nblocks {
        if on_chain.contains(block) {
            continue;
        }
        pages.read(block, |p| page.copy_from_slice(p));
        let view = PageRef::new(&page);
        if view.is_new() {
            if page.iter().any(|&b| b != 0) {
                return Err(Corruption::page(
                    block,
                    "page is not initialized but not all zeros",
                ));
            }
            summary.zero_pages += 1;
        } else {
            check_layout(block, view, PAGE_ID, "ivfflat")?;
            summary.unchained_pages += 1;
        }
    }
    Ok(summary)
}

fn chain_error(previous: Option<BlockNumber>, block: BlockNumber, what: &str) -> Corruption {
    match previous {
        Some(p) => Corruption::page(
            p,
            format!("next {what} page is block {block}, outside the chain's pages"),
        ),
        None => Corruption::page(block, format!("the first {what} page is missing")),
    }
}

fn check_metapage(bytes: &[u8]) -> Result<MetaPage, Corruption> {
    let page = PageRef::new(bytes);
    check_layout(0, page, PAGE_ID, "ivfflat")?;
    let fail = |problem: String| Corruption::page(0, problem);
    let meta = MetaPage::decode(page.contents())
        .ok_or_else(|| fail("metapage has a wrong magic number".into()))?;
    if meta.version != VERSION {
        return Err(fail(format!("metapage has version {}", meta.version)));
    }
    if meta.dimensions == 0 {
        return Err(fail("metapage has 0 dimensions".into()));
    }
    if !(MIN_LISTS..=MAX_LISTS).contains(&i32::from(meta.lists)) {
        return Err(fail(format!("metapage has {} lists", meta.lists)));
    }
    Ok(meta)
}

/// The items of a page; every line pointer must be a normal one within the item area.
fn normal_items<'a>(
    block: BlockNumber,
    page: PageRef<'a>,
) -> Result<Vec<(u16, &'a [u8])>, Corruption> {
    let mut items = Vec::new();
    for offset in FIRST_OFFSET_NUMBER..=page.max_offset() {
        let id = page.item_id(offset).expect("offset within max_offset");
        match page.item(offset).filter(|_| id.flags == ItemFlags::Normal) {
            Some(item) => items.push((offset, item)),
            None => {
                return Err(Corruption::item(
                    block,
                    offset,
                    format!(
                        "line pointer is {:?} at {} for {} bytes",
                        id.flags, id.offset, id.len
                    ),
                ))
            }
        }
    }
    Ok(items)
}

fn entry(
    summary: &mut Summary,
    options: Options,
    meta: &MetaPage,
    at: ItemPointer,
    item: &[u8],
) -> Result<(), Corruption> {
    let fail = |problem: String| Corruption::item(at.block, at.offset, problem);
    let (tid, value) = parse_entry(item).map_err(|_| fail("entry tuple is malformed".into()))?;
    if !tid.is_valid() {
        return Err(fail("entry has an invalid heap TID".into()));
    }
    let value: Option<Vec<u8>> = match value {
        EntryValue::Plain { at, len } => Some(item[at..at + len].to_vec()),
        EntryValue::Short { at, len } => {
            // The same value with a 4-byte header, as the table's row gives it.
            let mut v = header_4b(4 + len).to_vec();
            v.extend_from_slice(&item[at..at + len]);
            Some(v)
        }
        EntryValue::Packed { .. } => None,
    };
    summary.entries += 1;
    match &value {
        Some(v) => with_aligned(v, |v| {
            check_value(options.value_type, u32::from(meta.dimensions), v)
        })
        .map_err(|p| fail(format!("entry's {p}")))?,
        None => summary.compressed_entries += 1,
    }
    if let Some(tids) = &mut summary.heap_tids {
        let fresh = match &value {
            Some(v) => tids.insert(tid, v),
            None => tids.insert_unknown_value(tid),
        };
        if !fresh {
            return Err(fail(format!(
                "heap TID ({},{}) is indexed twice",
                tid.block, tid.offset
            )));
        }
    }
    Ok(())
}

/// Calls `f` with a copy of `bytes` aligned for the value readers (an entry's value can sit at
/// any offset of its tuple).
fn with_aligned<R>(bytes: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: `words` has at least bytes.len() bytes of storage, and u8 has no alignment or
    // validity requirements; the slice is used only while `words` lives.
    let copy =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), bytes.len()) };
    copy.copy_from_slice(bytes);
    f(copy)
}
