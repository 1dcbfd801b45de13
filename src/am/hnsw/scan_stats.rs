//! What an index scan's graph walk did: hops, elements visited and its reads (see
//! [`crate::storage::io`]); for a quantized index, the elements visited are the codes compared,
//! and the reranks' rows and vector reads follow.
//!
//! * On PostgreSQL 18, `EXPLAIN (ANALYZE, HNSW)` prints them under each index scan node of an
//!   hnsw index ([`crate::am::explain`]).
//! * On every version, `hnsw_last_scan_stats()` returns them for the last hnsw scan that ended
//!   in this session.

use crate::am::shared::scan_counters::{stats_row, Field, ScanStats, Stat};
use crate::storage::io::IoCounters;
use std::cell::Cell;
use std::ffi::CStr;

/// Counters of one index scan (all its rescans together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScanCounters {
    /// Candidates expanded (neighbor lists read).
    pub hops: u64,
    /// Elements whose distance was computed.
    pub visited: u64,
    pub io: IoCounters,
    /// Table blocks requested ahead of the rows returned (cold scans only).
    pub heap_prefetches: u64,
    /// A quantized index's rerank, if the scan was of one.
    pub rerank: Option<RerankCounters>,
}

/// What the reranks of a quantized index's scan did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RerankCounters {
    /// Candidates whose exact distance was computed.
    pub rows: u64,
    /// Vector blocks they were read from, and how those reads went.
    pub io: IoCounters,
}

thread_local! {
    static LAST_SCAN: Cell<Option<ScanCounters>> = const { Cell::new(None) };
}

/// Records the counters of a scan that ended.
pub fn record_finished_scan(counters: ScanCounters) {
    LAST_SCAN.with(|last| last.set(Some(counters)));
}

impl ScanStats for ScanCounters {
    const GROUP: &'static CStr = c"HNSW";

    fn fields(&self) -> Vec<Field> {
        let count = |key, label, n: u64| Field {
            key,
            label,
            value: Stat::Count(n),
        };
        let mut fields = vec![
            count("hops", c"Hops", self.hops),
            count("visited", c"Visited", self.visited),
            count("blocks", c"Blocks", self.io.blocks),
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
        ];
        // A quantized index's distances are code estimates; then come the reranks.
        if let Some(rerank) = &self.rerank {
            fields.extend([
                count("reranked", c"Reranked", rerank.rows),
                count("rerank-blocks", c"Rerank Blocks", rerank.io.blocks),
                count("rerank-reads", c"Rerank Reads", rerank.io.reads),
            ]);
        }
        fields
    }
}

crate::sql_function! {
    /// `hnsw_last_scan_stats()`: the counters of the last hnsw scan that ended in this
    /// session, or a row of NULLs if there was none.
    fn hnsw_last_scan_stats(call) {
        let last = LAST_SCAN.with(Cell::get);
        // SAFETY: the SQL declaration returns seven bigint columns, one float8 column and
        // bigint columns: the fields of ScanCounters, in order (the last three, the rerank's,
        // since 0.8.6.4).
        unsafe { stats_row(call.raw(), last.as_ref()) }
    }
}
