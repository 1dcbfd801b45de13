//! What vacuum passes to an index: the dead heap TIDs, and its cost-based delay.

use crate::storage::tid::item_pointer_data;
use pgrx::pg_sys;
use vector_formats::page::ItemPointer;

/// The vacuum callback that tells which heap TIDs are dead.
pub struct DeadTids {
    callback: pg_sys::IndexBulkDeleteCallback,
    state: *mut std::ffi::c_void,
}

impl DeadTids {
    /// # Safety
    ///
    /// `callback` and `state` are what Postgres passed to `ambulkdelete`, used only during it.
    pub unsafe fn new(
        callback: pg_sys::IndexBulkDeleteCallback,
        state: *mut std::ffi::c_void,
    ) -> Self {
        DeadTids { callback, state }
    }

    pub fn is_dead(&self, tid: ItemPointer) -> bool {
        let Some(callback) = self.callback else {
            return false;
        };
        let mut data = item_pointer_data(tid);
        // SAFETY: the callback and its state come from ambulkdelete (new's contract); it only
        // reads the TID.
        unsafe { callback(&raw mut data, self.state) }
    }
}

/// `vacuum_delay_point`: vacuum's cost-based sleep, and a chance to be cancelled. Call it
/// between pages, with no buffer locked.
pub fn vacuum_delay_point() {
    // SAFETY: the caller holds no buffer lock; the call may sleep or raise a cancel ERROR.
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::vacuum_delay_point();
        #[cfg(not(feature = "pg15"))]
        pg_sys::vacuum_delay_point(false);
    }
}
