//! The entry pages of an ivfflat index: one chain of pages per list, holding standard index
//! tuples (the heap TID and the value), read, added to and vacuumed as pgvector 0.8.6 does.
//!
//! * Reading a list walks its chain from the start page, each page under a share lock, and
//!   hands every tuple's heap TID and value (as a plain 4-byte-header varlena) to the caller
//!   while the page is locked.
//! * An insert starts at the list's insert page and moves along the chain to the first page
//!   with room; at the end of the chain it adds a page, linking it in the same WAL record.
//! * Vacuum takes a cleanup lock on each page of a chain and deletes the dead tuples.

use crate::opclass::Value;
use crate::storage::io::{read_chain_page, ChainHints, ChainStream};
use crate::storage::{
    AccessStrategy, BlockNumber, ChainWalk, ItemPointer, ReadMode, Relation, WriteMode,
};
use crate::stores::ivfflat::format::{new_opaque, parse_entry, EntryValue, OPAQUE_SIZE};
use crate::stores::ivfflat::lists::ivfflat_relation;
use pgrx::pg_sys;
use std::time::Instant;
use vector_formats::page::{maxalign, ChainOpaque, OffsetNumber};
use vector_io::DEVICE_READ;

/// Copies of values that are not plain on the page (short or compressed headers), made plain.
#[derive(Default)]
pub struct ValueScratch {
    value: Value,
}

impl ValueScratch {
    /// The value of entry `item` at `value` as a plain varlena: the page bytes themselves when
    /// they are one, else a copy.
    fn plain<'a>(&'a mut self, item: &'a [u8], value: EntryValue) -> &'a [u8] {
        match value {
            EntryValue::Plain { at, len } => &item[at..at + len],
            EntryValue::Short { at, len } => {
                let mut bytes = Vec::with_capacity(len + 4);
                bytes.extend_from_slice(&(((len + 4) as u32) << 2).to_le_bytes());
                bytes.extend_from_slice(&item[at..at + len]);
                self.value = Value::from_bytes(&bytes);
                self.value.bytes().expect("not NULL")
            }
            EntryValue::Packed { at } => {
                // SAFETY: the datum points at a compressed varlena inside the locked page,
                // whose header says it lies within the item (checked by parse_entry); the
                // copy is palloc'd and freed by Value::from_datum's detoasting.
                self.value = unsafe { Value::from_datum(pg_sys::Datum::from(item[at..].as_ptr())) };
                self.value.bytes().expect("not NULL")
            }
        }
    }
}

fn bad_entry(rel: Relation, block: BlockNumber, offset: OffsetNumber) -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
        format!(
            "index \"{}\" has a malformed entry tuple at ({block},{offset})",
            rel.name()
        )
    );
}

/// Calls `visit(heap_tid, value)` for every entry of the list starting at `start`, in chain
/// and offset order, through `strategy`; `hints` reads ahead along the plan it was given
/// when the reads come from a device (and times reads only when it asks to).
///
/// `stream_to` is the list's guessed last page. When the reader is not cold, has not been
/// during this plan, and the first page missed shared buffers without a device's delay (the
/// list is in the kernel's page cache), the rest of that range is read through a read
/// stream, whose I/O workers copy and checksum the pages while this backend compares
/// vectors. Plans that read cold keep the hinted or plain reads page by page (there a stream
/// measured slower than plain reads that the kernel reads ahead for), and resident lists the
/// plain reads.
pub fn read_list(
    rel: Relation,
    start: BlockNumber,
    strategy: &AccessStrategy,
    hints: &mut ChainHints,
    scratch: &mut ValueScratch,
    stream_to: Option<BlockNumber>,
    mut visit: impl FnMut(ItemPointer, &[u8]),
) {
    let rel = ivfflat_relation(rel);
    let mut walk = ChainWalk::new(rel);
    let mut next = walk.next(start);
    let mut stream = ChainStream::new(rel, strategy);
    while let Some(block) = next {
        let guard = if block == start {
            let cold = hints.is_cold();
            let started = Instant::now();
            let reads = hints.counters.reads;
            let guard = read_chain_page(rel, block, ReadMode::Shared, strategy, hints);
            let page_cache = !cold
                && !hints.plan_read_cold()
                && hints.counters.reads > reads
                && started.elapsed() < DEVICE_READ;
            if let Some(last) = stream_to.filter(|_| page_cache) {
                stream.begin(start + 1, last, hints);
            }
            guard
        } else {
            stream.read(block, hints)
        };
        let page = guard.page();
        // The whole page is read: ask for all its lines now, not one vector's at a time.
        vector_distance::prefetch::prefetch_lines(page.bytes());
        for (offset, item) in page.items() {
            let Ok((tid, value)) = parse_entry(item) else {
                bad_entry(rel, block, offset);
            };
            visit(tid, scratch.plain(item, value));
        }
        next = walk.next(ChainOpaque::next_of(page.special()));
    }
    stream.finish(hints);
}

/// An index tuple for `value` (a datum of the indexed column) pointing at `heap_tid`, formed
/// by Postgres (`index_form_tuple`), so that it is laid out exactly as pgvector's.
pub fn form_tuple(rel: Relation, value: pg_sys::Datum, heap_tid: ItemPointer) -> Vec<u8> {
    let mut values = [value];
    let mut isnull = [false];
    // SAFETY: the relation is an open index with one column of the value's type; the tuple
    // is palloc'd, copied and freed here.
    unsafe {
        let tuple = pg_sys::index_form_tuple(
            (*rel.raw()).rd_att,
            values.as_mut_ptr(),
            isnull.as_mut_ptr(),
        );
        (*tuple).t_tid = crate::storage::item_pointer_data(heap_tid);
        let size = usize::from((*tuple).t_info & 0x1FFF);
        let bytes = std::slice::from_raw_parts(tuple.cast::<u8>(), size).to_vec();
        pg_sys::pfree(tuple.cast());
        bytes
    }
}

/// Adds `tuple` to the list whose insert page is `insert_page`: on the first page from there
/// with room for it, or on a new page at the end of the chain. Returns the page it went to.
pub fn insert(
    rel: Relation,
    mode: WriteMode,
    insert_page: BlockNumber,
    tuple: &[u8],
) -> BlockNumber {
    let rel = ivfflat_relation(rel);
    let size = maxalign(tuple.len());
    let mut walk = ChainWalk::new(rel);
    let mut block = walk
        .next(insert_page)
        .unwrap_or_else(|| pgrx::error!("ivfflat list without insert page"));
    loop {
        let mut guard = rel.write_page(block, mode);
        if guard.page(0).free_space() >= size {
            add(&mut guard, 0, tuple, rel);
            guard.commit();
            return block;
        }
        let next = ChainOpaque::next_of(guard.page(0).special());
        if let Some(next) = walk.next(next) {
            drop(guard);
            block = next;
            continue;
        }
        // The end of the chain: a new page, linked in the same record.
        let slot = guard.add_new_page(OPAQUE_SIZE);
        new_opaque().encode(guard.page_mut(slot).special_mut());
        let new_block = guard.block(slot);
        ChainOpaque::set_next_blkno(guard.page_mut(0).special_mut(), new_block);
        add(&mut guard, slot, tuple, rel);
        guard.commit();
        return new_block;
    }
}

fn add(guard: &mut crate::storage::PageWriteGuard, slot: usize, tuple: &[u8], rel: Relation) {
    let mut padded = tuple.to_vec();
    padded.resize(maxalign(tuple.len()), 0);
    if guard.page_mut(slot).add_item(&padded).is_none() {
        pgrx::error!("failed to add index item to \"{}\"", rel.name());
    }
}

/// What vacuuming one list did.
pub struct VacuumedList {
    pub removed: u64,
    pub kept: u64,
    /// The first page (in chain order) that lost a tuple: the list's new insert page.
    pub first_freed: Option<BlockNumber>,
}

/// Deletes the entries of the list starting at `start` whose heap TID `dead` reports, one page
/// at a time under a cleanup lock, through `strategy`. `delay` runs before each page (vacuum's
/// cost delay).
pub fn vacuum_list(
    rel: Relation,
    start: BlockNumber,
    strategy: &AccessStrategy,
    mut dead: impl FnMut(ItemPointer) -> bool,
    mut delay: impl FnMut(),
) -> VacuumedList {
    let rel = ivfflat_relation(rel);
    let mut result = VacuumedList {
        removed: 0,
        kept: 0,
        first_freed: None,
    };
    let mut walk = ChainWalk::new(rel);
    let mut next = walk.next(start);
    let mut deletable: Vec<OffsetNumber> = Vec::new();
    while let Some(block) = next {
        delay();
        let page_guard = rel.read_page_with(block, ReadMode::Cleanup, strategy);
        let mut guard = rel.begin_write(WriteMode::Wal);
        let slot = guard.register(page_guard, crate::storage::Image::Delta);
        deletable.clear();
        let link = {
            let page = guard.page(slot);
            for (offset, item) in page.items() {
                let Ok((tid, _)) = parse_entry(item) else {
                    bad_entry(rel, block, offset);
                };
                if dead(tid) {
                    deletable.push(offset);
                    result.removed += 1;
                } else {
                    result.kept += 1;
                }
            }
            ChainOpaque::next_of(page.special())
        };
        if !deletable.is_empty() {
            result.first_freed.get_or_insert(block);
            guard.page_mut(slot).delete_items(&mut deletable);
            guard.commit();
        }
        next = walk.next(link);
    }
    result
}
