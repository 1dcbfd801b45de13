//! Where a row's out-of-line (TOAST) value lies, so that an index scan can ask for its blocks
//! before the executor detoasts it: the TOAST pointer in the heap tuple, then the TOAST
//! index's entries for that value. Vectors over about 2 kB (500 dimensions) are stored there,
//! and a query that projects the distance reads them back one row at a time.
//!
//! Only a row whose heap page is already in shared buffers is looked at: nothing here waits
//! for a read of the heap. The TOAST index is searched as the executor's detoast searches it
//! a moment later (its pages are then in shared buffers for the executor).

use super::page::{BlockNumber, ItemFlags, PageRef};
use super::{Fork, Prefetch, ReadMode, Relation};
use pgrx::pg_sys;

/// The out-of-line values of the column an index covers.
pub struct ToastedColumn {
    heap: Relation,
    /// The column's attribute number in the table.
    attno: i16,
    toast: pg_sys::Oid,
    snapshot: pg_sys::Snapshot,
}

/// What a TOAST pointer says (`varatt_external`): the value's id in the TOAST table.
const VARATT_EXTERNAL_SIZE: usize = 16;
const VALUE_ID_AT: usize = 8;

impl ToastedColumn {
    /// The column `index` covers in `heap`, if its values can be stored out of line: a plain
    /// column (not an expression) of a variable-length type that may be moved to a TOAST
    /// table the relation has.
    ///
    /// # Safety
    ///
    /// `heap` and `index` are open (an index scan's relations), and `snapshot` is null or the
    /// scan's snapshot; all three outlive the returned value.
    pub unsafe fn of_index(
        heap: pg_sys::Relation,
        index: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
    ) -> Option<Self> {
        if heap.is_null() || index.is_null() || snapshot.is_null() {
            return None;
        }
        // SAFETY: both relations are open (the contract); rd_rel, rd_index and rd_att are
        // filled in for open relations, and an index has at least one key column.
        unsafe {
            let toast = (*(*heap).rd_rel).reltoastrelid;
            let index_info = (*index).rd_index;
            if toast == pg_sys::InvalidOid || index_info.is_null() {
                return None;
            }
            let attno = *(*index_info).indkey.values.as_ptr();
            let desc = (*heap).rd_att;
            if attno <= 0 || i32::from(attno) > (*desc).natts {
                return None;
            }
            #[cfg(feature = "pg18")]
            let attr = pg_sys::TupleDescAttr(desc, i32::from(attno) - 1);
            #[cfg(not(feature = "pg18"))]
            let attr = (*desc).attrs.as_ptr().add(attno as usize - 1);
            if (*attr).attlen != -1 || (*attr).attstorage as u8 == b'p' {
                return None;
            }
            Some(ToastedColumn {
                heap: Relation::from_raw(heap, Fork::Main),
                attno,
                toast,
                snapshot,
            })
        }
    }

    /// Asks for the TOAST blocks of the value in the row at `offset` of heap block `block`,
    /// which a hint found in shared buffers or asked for a call earlier (reading it waits
    /// for that read, which the executor would wait for a moment later). Returns the reads
    /// started.
    pub fn hint(&mut self, block: BlockNumber, offset: u16) -> u64 {
        match self.value_id(block, offset) {
            Some(value) => self.hint_chunks(value),
            None => 0,
        }
    }

    /// The TOAST value id of the row's column, if the value is out of line.
    fn value_id(&self, block: BlockNumber, offset: u16) -> Option<pg_sys::Oid> {
        let guard = self.heap.read_page(block, ReadMode::Shared);
        let page = guard.page();
        let offset = live_offset(&page, offset)?;
        let item = page.item(offset)?;
        let mut tuple = pg_sys::HeapTupleData {
            t_len: item.len() as u32,
            t_self: pg_sys::ItemPointerData {
                ip_blkid: pg_sys::BlockIdData {
                    bi_hi: (block >> 16) as u16,
                    bi_lo: block as u16,
                },
                ip_posid: offset,
            },
            // SAFETY: the relation is open (ToastedColumn's contract).
            t_tableOid: unsafe { (*self.heap.raw()).rd_id },
            t_data: item.as_ptr() as *mut pg_sys::HeapTupleHeaderData,
        };
        let mut is_null = false;
        // SAFETY: `tuple` points at a normal item of a share-locked heap page of this table,
        // whose descriptor `rd_att` is; heap_getattr only reads the tuple (a by-reference
        // attribute comes back as a pointer into it).
        let datum = unsafe {
            pg_sys::heap_getattr(
                &mut tuple,
                i32::from(self.attno),
                (*self.heap.raw()).rd_att,
                &mut is_null,
            )
        };
        if is_null {
            return None;
        }
        let at = (datum.cast_mut_ptr::<u8>() as usize).checked_sub(item.as_ptr() as usize)?;
        external_value_id(item.get(at..)?)
    }

    /// Asks for the blocks of the TOAST table's chunks of `value`, found through its index.
    fn hint_chunks(&self, value: pg_sys::Oid) -> u64 {
        let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
        // SAFETY: the TOAST table of an open table exists and is locked here as the
        // executor's detoast locks it; its valid index is opened the same way. The index scan
        // lives only within this block, with the scan's snapshot (live for the scan), and
        // everything opened is closed before returning; an ERROR on the way releases all of
        // it with the transaction's resources.
        unsafe {
            let toast = pg_sys::table_open(self.toast, lock);
            let Some(index) = valid_index(toast, lock) else {
                pg_sys::table_close(toast, lock);
                return 0;
            };
            let mut key = std::mem::MaybeUninit::<pg_sys::ScanKeyData>::zeroed();
            pg_sys::ScanKeyInit(
                key.as_mut_ptr(),
                1,
                pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
                pg_sys::Oid::from(pg_sys::F_OIDEQ),
                pg_sys::Datum::from(value),
            );
            #[cfg(feature = "pg18")]
            let scan =
                pg_sys::index_beginscan(toast, index, self.snapshot, std::ptr::null_mut(), 1, 0);
            #[cfg(not(feature = "pg18"))]
            let scan = pg_sys::index_beginscan(toast, index, self.snapshot, 1, 0);
            pg_sys::index_rescan(scan, key.as_mut_ptr(), 1, std::ptr::null_mut(), 0);
            let chunks = Relation::from_raw(toast, Fork::Main);
            let mut started = 0;
            let mut last = None;
            loop {
                let tid =
                    pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection);
                if tid.is_null() {
                    break;
                }
                let block =
                    (u32::from((*tid).ip_blkid.bi_hi) << 16) | u32::from((*tid).ip_blkid.bi_lo);
                if last != Some(block) {
                    last = Some(block);
                    if chunks.prefetch_block(block) == Prefetch::Started {
                        started += 1;
                    }
                }
            }
            pg_sys::index_endscan(scan);
            pg_sys::index_close(index, lock);
            pg_sys::table_close(toast, lock);
            started
        }
    }
}

/// The offset of the tuple a heap TID leads to: the item itself, or the one a HOT chain's
/// redirect points at (an indexed column is the same along a HOT chain).
fn live_offset(page: &PageRef<'_>, offset: u16) -> Option<u16> {
    let id = page.item_id(offset)?;
    match id.flags {
        ItemFlags::Normal => Some(offset),
        ItemFlags::Redirect => {
            let target = id.offset;
            (page.item_id(target)?.flags == ItemFlags::Normal).then_some(target)
        }
        _ => None,
    }
}

/// The value id of an on-disk TOAST pointer at the start of `bytes` (a 1-byte varlena header
/// `0x01`, the tag `VARTAG_ONDISK`, then `varatt_external`, unaligned), or `None` for any
/// other value (inline, compressed inline, in memory).
fn external_value_id(bytes: &[u8]) -> Option<pg_sys::Oid> {
    if !cfg!(target_endian = "little") {
        return None;
    }
    let external = bytes.get(2..2 + VARATT_EXTERNAL_SIZE)?;
    if bytes[0] != 0x01 || u32::from(bytes[1]) != pg_sys::vartag_external::VARTAG_ONDISK {
        return None;
    }
    let id = &external[VALUE_ID_AT..VALUE_ID_AT + 4];
    Some(pg_sys::Oid::from(u32::from_le_bytes([
        id[0], id[1], id[2], id[3],
    ])))
}

/// The valid index of a TOAST table (there is one; a second one exists only while REINDEX
/// CONCURRENTLY runs), opened with `lock`.
///
/// # Safety
///
/// `toast` is an open TOAST table.
unsafe fn valid_index(toast: pg_sys::Relation, lock: pg_sys::LOCKMODE) -> Option<pg_sys::Relation> {
    // SAFETY: per the contract; RelationGetIndexList returns a copied list of OIDs, freed
    // here, and an index opened is returned open or closed before looking at the next.
    unsafe {
        let list = pg_sys::RelationGetIndexList(toast);
        let mut found = None;
        if !list.is_null() {
            for n in 0..(*list).length {
                let index = pg_sys::index_open(pg_sys::list_nth_oid(list, n), lock);
                if (*(*index).rd_index).indisvalid {
                    found = Some(index);
                    break;
                }
                pg_sys::index_close(index, lock);
            }
            pg_sys::list_free(list);
        }
        found
    }
}
