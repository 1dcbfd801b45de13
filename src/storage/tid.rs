//! TIDs as Postgres passes them.

use pgrx::pg_sys;
use vector_formats::page::ItemPointer;

/// The `ItemPointerData` Postgres expects for a TID.
pub fn item_pointer_data(tid: ItemPointer) -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (tid.block >> 16) as u16,
            bi_lo: tid.block as u16,
        },
        ip_posid: tid.offset,
    }
}

/// Reads a TID handed over by Postgres.
///
/// # Safety
///
/// `tid` points to a valid `ItemPointerData`.
pub unsafe fn item_pointer_from(tid: pg_sys::ItemPointer) -> ItemPointer {
    // SAFETY: per the contract.
    let tid = unsafe { &*tid };
    let block = (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo);
    ItemPointer::new(block, tid.ip_posid)
}
