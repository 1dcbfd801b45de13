//! What a walk's reads did.

/// Counters of a walk's reads (`EXPLAIN (ANALYZE, HNSW)`, `hnsw_last_scan_stats()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Blocks the hops asked for (distinct within a hop).
    pub blocks: u64,
    /// Of those, found in shared buffers.
    pub hits: u64,
    /// Of those, read from disk (or the kernel's cache).
    pub reads: u64,
    /// Reads that had been requested before the walk needed the block (a hint, or a stream
    /// reading ahead).
    pub prefetched: u64,
    /// Hints whose block was never needed.
    pub unused: u64,
    /// Look-ahead hints issued (adaptive look-ahead: zero while it is off).
    pub speculated: u64,
    /// Sum over consumed blocks of the reads requested ahead at that moment.
    pub in_flight_sum: u64,
    /// Number of samples in `in_flight_sum`.
    pub in_flight_samples: u64,
}

impl IoCounters {
    /// Mean number of reads requested ahead when a block was consumed.
    pub fn mean_in_flight(&self) -> f64 {
        if self.in_flight_samples == 0 {
            0.0
        } else {
            self.in_flight_sum as f64 / self.in_flight_samples as f64
        }
    }
}
