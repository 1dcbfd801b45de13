//! The table a build reads, and the scan that hands each of its indexable values to the build.

use crate::am::shared::build::TableScan;
use crate::opclass::{Support, Value};
use crate::storage::{ItemPointer, Relation};
use pgrx::pg_sys;

/// The table of a build: `heap` null for an empty build (an INIT fork).
#[derive(Clone, Copy)]
pub struct Table {
    pub heap: pg_sys::Relation,
    pub index_info: *mut pg_sys::IndexInfo,
}

impl Table {
    /// No table: the INIT fork of an unlogged index.
    pub const EMPTY: Table = Table {
        heap: std::ptr::null_mut(),
        index_info: std::ptr::null_mut(),
    };

    pub fn is_empty(&self) -> bool {
        self.heap.is_null()
    }

    /// Scans the table (all of it, or a parallel scan's share when `scan` is not null): each
    /// indexable value, detoasted, checked and normalized as the operator class wants
    /// (pgvector's `HnswFormIndexValue`), goes to `insert` with its heap TID. Returns the heap
    /// tuples seen and the values given to `insert`. An empty table gives none.
    ///
    /// # Safety
    ///
    /// The table is the build of `rel`'s; `scan` is null or a parallel scan of its heap.
    pub unsafe fn scan_values(
        &self,
        rel: Relation,
        support: &Support,
        scan: pg_sys::TableScanDesc,
        progress: bool,
        insert: &mut dyn FnMut(Value, ItemPointer),
    ) -> (f64, i64) {
        if self.is_empty() {
            return (0.0, 0);
        }
        let mut values = 0i64;
        let mut row = |datum: pg_sys::Datum, tid: ItemPointer| {
            // SAFETY: a non-NULL value of the indexed column's type.
            if let Some(value) = unsafe { support.index_value(datum) } {
                values += 1;
                insert(value, tid);
            }
        };
        let mut table = TableScan::new("Hnsw build temporary context", &mut row);
        // SAFETY: per the contract.
        let reltuples = unsafe { table.run(self.heap, rel.raw(), self.index_info, progress, scan) };
        drop(table);
        (reltuples, values)
    }
}
