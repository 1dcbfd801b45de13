//! What an ivfflat scan did: lists probed, and the reads of their pages (see
//! [`vector_io::ChainHints`]).
//!
//! * On PostgreSQL 18, `EXPLAIN (ANALYZE, IVFFLAT)` prints them under each index scan node of
//!   an ivfflat index ([`crate::am::explain`]).
//! * On every version, `ivfflat_last_scan_stats()` returns them for the last ivfflat scan that
//!   ended in this session.

use crate::am::shared::scan_counters::{stats_row, Field, ScanStats, Stat};
use std::cell::Cell;
use std::ffi::CStr;
use vector_io::IoCounters;

/// Counters of one index scan (all its rescans together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScanCounters {
    /// Lists whose entries were read.
    pub lists: u64,
    /// Reads of their pages: `blocks` is the pages read.
    pub io: IoCounters,
    /// Table blocks requested ahead of the rows returned (cold scans only).
    pub heap_prefetches: u64,
}

impl ScanStats for ScanCounters {
    const GROUP: &'static CStr = c"IVFFlat";

    fn fields(&self) -> Vec<Field> {
        let count = |key, label, n: u64| Field {
            key,
            label,
            value: Stat::Count(n),
        };
        vec![
            count("lists", c"Lists Probed", self.lists),
            count("pages", c"Pages", self.io.blocks),
            count("hits", c"Hits", self.io.hits),
            count("reads", c"Reads", self.io.reads),
            count("prefetched", c"Prefetched Reads", self.io.prefetched),
            count("unused", c"Unused Prefetches", self.io.unused),
            Field {
                key: "in-flight",
                label: c"Mean In Flight",
                value: Stat::Mean(self.io.mean_in_flight()),
            },
            count("heap-prefetches", c"Heap Prefetches", self.heap_prefetches),
        ]
    }
}

thread_local! {
    static LAST_SCAN: Cell<Option<ScanCounters>> = const { Cell::new(None) };
}

/// Records the counters of a scan that ended.
pub fn record_finished_scan(counters: ScanCounters) {
    LAST_SCAN.with(|last| last.set(Some(counters)));
}

crate::sql_function! {
    /// `ivfflat_last_scan_stats()`: the counters of the last ivfflat scan that ended in this
    /// session, or a row of NULLs if there was none.
    fn ivfflat_last_scan_stats(call) {
        let last = LAST_SCAN.with(Cell::get);
        // SAFETY: the SQL declaration returns six bigint columns, one float8 and one bigint
        // column: the fields of ScanCounters, in order.
        unsafe { stats_row(call.raw(), last.as_ref()) }
    }
}
