//! Index scan with pgvector's iterative-scan semantics.
//!
//! The first call runs the normal search: greedy descent through the upper
//! layers, then layer 0 with `ef_search`, keeping the visited set. Results
//! are handed out nearest first; elements without heap TIDs are skipped.
//!
//! With iterative scans enabled, every element the layer-0 search dropped is
//! parked in a "discarded" queue (nearest first). When the current results
//! run out, the scan resumes: it pops up to `ef_search` discarded elements
//! and runs another layer-0 search from them with `ef_search`, continuing
//! the same visited set and discarded queue. Once `max_scan_tuples` elements
//! were seen or the memory estimate exceeds the limit, no new searches run;
//! the remaining discarded elements are returned one by one, nearest first.
//!
//! `Strict` additionally never returns an element closer than the previous
//! one returned (results that would break the order are skipped); `Relaxed`
//! may return slightly out-of-order results across resumes.

use crate::search::{descend, entry_candidate, search_layer, LayerQuery, SearchState, SearchStats};
use crate::storage::{Candidate, GraphLock, GraphStore};

/// `hnsw.iterative_scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IterativeScan {
    /// Return at most the `ef_search` results of one search.
    #[default]
    Off,
    /// Resume searching; order may be slightly relaxed across resumes.
    Relaxed,
    /// Resume searching; drop results that would break distance order.
    Strict,
}

/// Scan settings (pgvector GUCs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanParams {
    /// `hnsw.ef_search`: queue size of each layer-0 search and number of
    /// discarded elements each resume starts from.
    pub ef_search: usize,
    /// `hnsw.iterative_scan`.
    pub mode: IterativeScan,
    /// `hnsw.max_scan_tuples`.
    pub max_scan_tuples: u64,
    /// Memory budget in bytes: `work_mem * hnsw.scan_mem_multiplier` (see
    /// [`memory_limit`]), compared with [`Scan::memory_estimate`].
    pub max_memory: usize,
}

impl Default for ScanParams {
    fn default() -> Self {
        ScanParams {
            ef_search: 40,
            mode: IterativeScan::Off,
            max_scan_tuples: 20_000,
            max_memory: memory_limit(4096, 1.0),
        }
    }
}

/// pgvector's scan memory limit: `work_mem` (kB) times the multiplier, plus
/// 256 bytes of slack.
pub fn memory_limit(work_mem_kb: usize, multiplier: f64) -> usize {
    let bytes = work_mem_kb as f64 * multiplier * 1024.0 + 256.0;
    bytes.min((usize::MAX / 2) as f64) as usize
}

/// Approximate bytes pgvector allocates per loaded element during a scan
/// (element struct plus search candidate, with allocator overhead).
const BYTES_PER_CANDIDATE: usize = 208;
/// Approximate bytes per visited-set entry.
const BYTES_PER_VISITED: usize = 12;

/// A resumable index scan.
pub struct Scan<S: GraphStore> {
    query: S::Value,
    params: ScanParams,
    state: SearchState<S::Id, S::Meta>,
    /// Current results, furthest first (the next one is at the end).
    w: Vec<u32>,
    started: bool,
    previous_distance: f64,
}

impl<S: GraphStore> Scan<S> {
    /// Prepares a scan for `query`.
    pub fn new(query: S::Value, params: ScanParams) -> Self {
        Scan {
            query,
            params,
            state: SearchState::new(),
            w: Vec::new(),
            started: false,
            previous_distance: f64::NEG_INFINITY,
        }
    }

    /// Replaces the settings for the rest of the scan. pgvector reads its settings each time it
    /// uses them, so a scan (a cursor) sees a change made between two fetches; call this before
    /// [`Scan::next`] with the current values to do the same.
    pub fn set_params(&mut self, params: ScanParams) {
        self.params = params;
    }

    /// Work counters so far (all layers and resumes).
    pub fn stats(&self) -> SearchStats {
        self.state.stats
    }

    /// pgvector's `tuples` counter, compared with `max_scan_tuples`.
    pub fn tuples(&self) -> u64 {
        self.state.tuples
    }

    /// Estimated memory held by the scan, compared with `max_memory`.
    pub fn memory_estimate(&self) -> usize {
        let discarded = self.state.discarded.as_ref().map_or(0, |d| d.allocated());
        self.state.arena.len() * BYTES_PER_CANDIDATE
            + self.state.visited_len() * BYTES_PER_VISITED
            + discarded * 24
    }

    /// Number of elements waiting in the discarded queue.
    pub fn discarded_len(&self) -> usize {
        self.state.discarded.as_ref().map_or(0, |d| d.len())
    }

    /// Next live element, nearest first; `None` when the scan is over.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        if !self.started {
            self.started = true;
            store.lock(GraphLock::ScanShare);
            self.w = self.first_items(store);
            store.unlock(GraphLock::ScanShare);
        }
        loop {
            if self.w.is_empty() && !self.refill(store) {
                return None;
            }
            let index = self.w.pop()?;
            let candidate = self.state.get(index);
            if !candidate.live {
                continue;
            }
            if self.params.mode == IterativeScan::Strict {
                if candidate.distance < self.previous_distance {
                    continue;
                }
                self.previous_distance = candidate.distance;
            }
            return Some(candidate.clone());
        }
    }

    fn first_items(&mut self, store: &mut S) -> Vec<u32> {
        let Some(entry) = store.entry_point() else {
            return Vec::new();
        };
        let start = entry_candidate(store, &mut self.state, &self.query, entry);
        let top = self.state.get(start).level;
        let entries = descend(
            store,
            &mut self.state,
            &self.query,
            vec![start],
            (top, 0),
            false,
        );
        let discard = self.params.mode != IterativeScan::Off;
        let q = LayerQuery {
            query: &self.query,
            ef: self.params.ef_search,
            layer: 0,
            count_live_only: false,
            discard,
        };
        search_layer(store, &mut self.state, &q, &entries, true)
    }

    /// Refills `w` once it is empty. Returns false when the scan is over.
    fn refill(&mut self, store: &mut S) -> bool {
        if self.params.mode == IterativeScan::Off {
            return false;
        }
        // No discarded queue: the index was empty.
        if self.state.discarded.is_none() {
            return false;
        }
        let exhausted = self.state.tuples >= self.params.max_scan_tuples
            || self.memory_estimate() > self.params.max_memory;
        if exhausted {
            let discarded = self.state.discarded.as_mut().expect("checked above");
            match discarded.pop() {
                Some((index, _)) => self.w.push(index),
                None => return false,
            }
        } else {
            store.lock(GraphLock::ScanShare);
            self.w = self.resume(store);
            store.unlock(GraphLock::ScanShare);
        }
        !self.w.is_empty()
    }

    fn resume(&mut self, store: &mut S) -> Vec<u32> {
        let discarded = self.state.discarded.as_mut().expect("iterative scan");
        let mut entries = Vec::with_capacity(self.params.ef_search);
        while entries.len() < self.params.ef_search {
            match discarded.pop() {
                Some((index, _)) => entries.push(index),
                None => break,
            }
        }
        if entries.is_empty() {
            return Vec::new();
        }
        let q = LayerQuery {
            query: &self.query,
            ef: self.params.ef_search,
            layer: 0,
            count_live_only: false,
            discard: true,
        };
        search_layer(store, &mut self.state, &q, &entries, false)
    }
}
