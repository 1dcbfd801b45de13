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
//! were seen or the scan's memory exceeds the limit, no new searches run;
//! the remaining discarded elements are returned one by one, nearest first.
//!
//! The memory compared with the limit is the one pgvector measures: the
//! blocks of its scan memory context, replayed allocation by allocation by
//! [`crate::scan_memory`] while an iterative scan runs (a plain scan never
//! looks at it and pays nothing for it).
//!
//! `Strict` additionally never returns an element closer than the previous
//! one returned (results that would break the order are skipped); `Relaxed`
//! may return slightly out-of-order results across resumes.

use crate::scan_memory::{Metered, ScanMemory, ScanMemoryConfig};
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
    /// [`memory_limit`]), compared with [`Scan::memory_allocated`].
    pub max_memory: usize,
    /// `hnsw.beam_width`: candidates each layer-0 round expands together (1: pgvector's walk).
    pub beam_width: usize,
    /// Queue size on the layers above 0 (1: pgvector's greedy descent; see
    /// [`crate::search::descent_ef`]).
    pub descent_ef: usize,
}

impl Default for ScanParams {
    fn default() -> Self {
        ScanParams {
            ef_search: 40,
            mode: IterativeScan::Off,
            max_scan_tuples: 20_000,
            max_memory: memory_limit(4096, 1.0),
            beam_width: 1,
            descent_ef: crate::search::descent_ef(40),
        }
    }
}

/// pgvector's scan memory limit: `work_mem` (kB) times the multiplier, plus
/// 256 bytes of slack.
pub fn memory_limit(work_mem_kb: usize, multiplier: f64) -> usize {
    let bytes = work_mem_kb as f64 * multiplier * 1024.0 + 256.0;
    bytes.min((usize::MAX / 2) as f64) as usize
}

/// A resumable index scan.
pub struct Scan<S: GraphStore> {
    query: S::Value,
    params: ScanParams,
    state: SearchState<S::Id, S::Meta>,
    /// Current results, furthest first (the next one is at the end).
    w: Vec<u32>,
    started: bool,
    previous_distance: f64,
    memory_config: ScanMemoryConfig<S::Id>,
    /// pgvector's scan memory, tracked when the scan started as an iterative one.
    memory: Option<ScanMemory>,
    /// The element returned last is still at the end of pgvector's result list; it is
    /// released when the next one is asked for.
    returned: bool,
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
            memory_config: ScanMemoryConfig::default(),
            memory: None,
            returned: false,
        }
    }

    /// Measures memory for this store and query (see [`ScanMemoryConfig`]); without it, a
    /// default configuration (`m` 16, ids hashed) is used.
    pub fn with_memory(mut self, config: ScanMemoryConfig<S::Id>) -> Self {
        self.memory_config = config;
        self
    }

    /// Replaces the settings for the rest of the scan. pgvector reads its settings each time it
    /// uses them, so a scan (a cursor) sees a change made between two fetches; call this before
    /// [`Scan::next`] with the current values to do the same.
    pub fn set_params(&mut self, params: ScanParams) {
        self.params = params;
    }

    /// The settings in effect.
    pub fn params(&self) -> ScanParams {
        self.params
    }

    /// The query.
    pub fn query(&self) -> &S::Value {
        &self.query
    }

    /// Work counters so far (all layers and resumes).
    pub fn stats(&self) -> SearchStats {
        self.state.stats
    }

    /// pgvector's `tuples` counter, compared with `max_scan_tuples`.
    pub fn tuples(&self) -> u64 {
        self.state.tuples
    }

    /// What pgvector's `MemoryContextMemAllocated` of its scan context would be now, compared
    /// with `max_memory`; 0 unless the scan started as an iterative one.
    pub fn memory_allocated(&self) -> usize {
        self.memory.as_ref().map_or(0, ScanMemory::allocated)
    }

    /// Bytes of an allocation that failed: the scan stopped and [`Scan::next`] returns `None`;
    /// the caller raises "out of memory" instead of ending the scan.
    pub fn out_of_memory(&self) -> Option<usize> {
        self.state.out_of_memory
    }

    /// Next live element, nearest first; `None` when the scan is over.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        if !self.started {
            self.started = true;
            if self.params.mode != IterativeScan::Off {
                let config = &self.memory_config;
                self.memory = Some(ScanMemory::new(config.layout, config.m, &config.query));
            }
            store.lock(GraphLock::ScanShare);
            self.w = self.first_items(store);
            store.unlock(GraphLock::ScanShare);
        }
        if std::mem::take(&mut self.returned) {
            self.release_last();
        }
        loop {
            if self.state.out_of_memory.is_some() {
                return None;
            }
            if self.w.is_empty() && !self.refill(store) {
                return None;
            }
            let index = self.w.pop()?;
            let candidate = self.state.get(index);
            if !candidate.live {
                self.release_last();
                continue;
            }
            if self.params.mode == IterativeScan::Strict {
                if candidate.distance < self.previous_distance {
                    self.release_last();
                    continue;
                }
                self.previous_distance = candidate.distance;
            }
            self.returned = true;
            return Some(self.state.get(index).clone());
        }
    }

    /// Every live candidate of the current results at once, nearest first: the first call runs
    /// the search, a later one resumes it (iterative scans) once the results are used up. Empty
    /// when the scan is over. (A quantized index reranks its candidates as a whole.)
    pub fn take_results(&mut self, store: &mut S) -> Vec<Candidate<S::Id, S::Meta>> {
        let mut out = Vec::new();
        let Some(first) = self.next(store) else {
            return out;
        };
        out.push(first);
        // `next` would search again once the results run out: stop before that.
        while self.w.iter().any(|&index| self.state.get(index).live) {
            match self.next(store) {
                Some(candidate) => out.push(candidate),
                None => break,
            }
        }
        out
    }

    /// The results [`Scan::next`] will return next without searching again, nearest first
    /// (the one returned last excluded). A strict iterative scan may still skip some of them.
    pub fn upcoming(&self) -> impl Iterator<Item = &Candidate<S::Id, S::Meta>> + '_ {
        self.w
            .iter()
            .rev()
            .map(|&index| self.state.get(index))
            .filter(|candidate| candidate.live)
    }

    /// pgvector is done with the last element of its result list (all its heap TIDs were
    /// handed out or skipped): the list drops it, and iterative scans free it.
    fn release_last(&mut self) {
        let free_element = self.params.mode != IterativeScan::Off;
        if let Some(memory) = self.memory.as_mut() {
            memory.release_last(free_element);
        }
    }

    fn first_items(&mut self, store: &mut S) -> Vec<u32> {
        let Some(entry) = store.entry_point() else {
            return Vec::new();
        };
        if let Some(memory) = self.memory.as_mut() {
            memory.entry_point();
        }
        let start = entry_candidate(store, &mut self.state, &self.query, entry);
        if let Some(memory) = self.memory.as_mut() {
            memory.entry_loaded();
        }
        let top = self.state.get(start).level;
        let key = self.memory_config.visited_key;
        let layers = (top, 0);
        let width = (self.params.descent_ef, self.params.beam_width);
        let (state, query) = (&mut self.state, &self.query);
        let entries = match self.memory.as_mut() {
            Some(memory) => {
                let mut metered = Metered { store, memory, key };
                descend(
                    &mut metered,
                    state,
                    query,
                    vec![start],
                    layers,
                    width,
                    false,
                )
            }
            None => descend(store, state, query, vec![start], layers, width, false),
        };
        if let Some(memory) = self.memory.as_mut() {
            let keys = entries.iter().map(|&i| key(&self.state.get(i).id));
            memory.start_first_ground(self.params.ef_search, keys);
        }
        let q = LayerQuery {
            query: &self.query,
            ef: self.params.ef_search,
            layer: 0,
            count_live_only: false,
            discard: self.params.mode != IterativeScan::Off,
            beam: self.params.beam_width,
        };
        let memory = self.memory.as_mut().map(|m| (m, key));
        layer_zero(store, &mut self.state, memory, &q, &entries, true)
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
            || self.memory_allocated() > self.params.max_memory;
        if exhausted {
            let discarded = self.state.discarded.as_mut().expect("checked above");
            match discarded.pop() {
                Some((index, _)) => self.w.push(index),
                None => return false,
            }
            if let Some(memory) = self.memory.as_mut() {
                memory.hand_out_discarded();
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
        if let Some(memory) = self.memory.as_mut() {
            memory.start_resume(entries.len());
        }
        let q = LayerQuery {
            query: &self.query,
            ef: self.params.ef_search,
            layer: 0,
            count_live_only: false,
            discard: true,
            beam: self.params.beam_width,
        };
        let memory = self
            .memory
            .as_mut()
            .map(|m| (m, self.memory_config.visited_key));
        layer_zero(store, &mut self.state, memory, &q, &entries, false)
    }
}

/// The memory model with the visited-key function of the store's ids.
type Meter<'a, Id> = (&'a mut ScanMemory, fn(&Id) -> u64);

/// Runs a layer-0 search, through the memory model when there is one, and returns W furthest
/// first.
fn layer_zero<S: GraphStore>(
    store: &mut S,
    state: &mut SearchState<S::Id, S::Meta>,
    memory: Option<Meter<'_, S::Id>>,
    q: &LayerQuery<'_, S::Value>,
    entries: &[u32],
    fresh_visited: bool,
) -> Vec<u32> {
    let Some((memory, key)) = memory else {
        return search_layer(store, state, q, entries, fresh_visited);
    };
    let mut metered = Metered {
        store,
        memory: &mut *memory,
        key,
    };
    let w = search_layer(&mut metered, state, q, entries, fresh_visited);
    memory.results(w.len());
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insert::GraphParams;
    use crate::level::SplitMix64;
    use crate::memory::{l2_squared, InMemoryGraph};
    use crate::repair::VacuumStore;

    fn graph() -> (InMemoryGraph, Vec<f32>) {
        let mut rng = SplitMix64::new(3);
        let mut point = || (0..8).map(|_| rng.next_f64() as f32).collect::<Vec<f32>>();
        let vectors: Vec<Vec<f32>> = (0..3000).map(|_| point()).collect();
        let query = point();
        let params = GraphParams {
            m: 8,
            ef_construction: 32,
        };
        let mut levels = SplitMix64::new(4);
        let graph =
            InMemoryGraph::build(&vectors, &params, l2_squared, &mut || levels.next_f64()).0;
        (graph, query)
    }

    fn config() -> ScanMemoryConfig<u32> {
        ScanMemoryConfig {
            m: 8,
            ..ScanMemoryConfig::default()
        }
    }

    #[test]
    fn upcoming_results_are_the_next_ones_returned() {
        let (mut graph, query) = graph();
        let mut scan = Scan::new(query, ScanParams::default());
        let first = scan.next(&mut graph).expect("a result");
        let announced: Vec<u32> = scan.upcoming().map(|c| c.id).collect();
        assert_eq!(announced.len(), ScanParams::default().ef_search - 1);
        let mut returned = Vec::new();
        while let Some(c) = scan.next(&mut graph) {
            returned.push(c.id);
        }
        assert_eq!(announced, returned);
        assert!(!announced.contains(&first.id));
        assert_eq!(scan.upcoming().count(), 0);
    }

    #[test]
    fn upcoming_skips_deleted_elements() {
        let (mut graph, query) = graph();
        let mut scan = Scan::new(query.clone(), ScanParams::default());
        scan.next(&mut graph);
        let second = scan.upcoming().next().expect("a second result").id;
        graph.kill_heap_tid(u64::from(second));
        // Vacuum's first pass: the element keeps its links but has no heap TID left.
        let (mut cursor, mut headers) = (0, Vec::new());
        while graph.prune_heap_tids(&mut cursor, &mut headers) {}
        assert!(!graph.is_live(second));
        let mut scan = Scan::new(query, ScanParams::default());
        scan.next(&mut graph);
        assert!(scan.upcoming().all(|c| c.id != second));
    }

    #[test]
    fn failed_reservation_stops_the_scan_and_is_reported() {
        let (mut graph, query) = graph();
        let params = ScanParams {
            mode: IterativeScan::Relaxed,
            max_scan_tuples: u64::MAX,
            ..ScanParams::default()
        };
        let mut whole = Scan::new(query.clone(), params);
        let mut all = 0;
        while whole.next(&mut graph).is_some() {
            all += 1;
        }
        assert_eq!(whole.out_of_memory(), None);
        let mut scan = Scan::new(query, params);
        scan.state.reservations_left = Some(200);
        let mut returned = 0;
        while scan.next(&mut graph).is_some() {
            returned += 1;
        }
        assert!(
            scan.out_of_memory().is_some(),
            "the failure was not reported"
        );
        assert!(returned < all, "{returned} of {all} returned");
        assert!(
            scan.next(&mut graph).is_none(),
            "the scan went on after the failure"
        );
    }

    #[test]
    fn only_iterative_scans_track_memory() {
        let (mut graph, query) = graph();
        let mut scan = Scan::new(query.clone(), ScanParams::default()).with_memory(config());
        while scan.next(&mut graph).is_some() {}
        assert_eq!(scan.memory_allocated(), 0);
        let params = ScanParams {
            mode: IterativeScan::Relaxed,
            ..ScanParams::default()
        };
        let mut scan = Scan::new(query, params).with_memory(config());
        scan.next(&mut graph);
        // The keeper block plus a block for the layer-0 visited table (40 * 2 * 8 ids: 1024
        // buckets of 8 bytes).
        assert!(
            scan.memory_allocated() > 8192 + 8192,
            "{}",
            scan.memory_allocated()
        );
    }

    #[test]
    fn resumes_stop_once_memory_exceeds_the_limit() {
        let (mut graph, query) = graph();
        for mode in [IterativeScan::Relaxed, IterativeScan::Strict] {
            let limit = memory_limit(64, 1.0);
            let params = ScanParams {
                ef_search: 10,
                mode,
                max_scan_tuples: u64::MAX,
                max_memory: limit,
                beam_width: 1,
                descent_ef: crate::search::descent_ef(10),
            };
            let mut scan = Scan::new(query.clone(), params).with_memory(config());
            let mut tuples_when_over = None;
            let mut returned = 0;
            while scan.next(&mut graph).is_some() {
                returned += 1;
                match tuples_when_over {
                    // No search runs once the limit was seen exceeded.
                    Some(tuples) => assert_eq!(scan.tuples(), tuples, "{mode:?}"),
                    None if scan.memory_allocated() > limit => {
                        tuples_when_over = Some(scan.tuples());
                    }
                    None => {}
                }
            }
            let tuples = tuples_when_over.expect("the limit is reached");
            assert!(tuples < 3000, "{mode:?}: {tuples}");
            if mode == IterativeScan::Relaxed {
                // Everything seen is handed out in the end.
                assert_eq!(returned, scan.tuples(), "{mode:?}");
            }
        }
    }
}
