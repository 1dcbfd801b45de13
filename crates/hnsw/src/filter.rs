//! Filtered search: the nearest elements that pass a filter the store can test per element
//! (an attribute kept beside the element, as a composite index would keep it), walked on the
//! graph built without the filter.
//!
//! The descent through the upper layers ignores the filter (it only finds a place to start).
//! Layer 0 keeps two queues: C, the candidates to expand, and W, the `ef` nearest elements that
//! pass. Only passing elements count towards `ef` and are returned, so W fills with answers
//! however few rows pass. What differs is how a hop treats a neighbor that fails:
//!
//! * [`Expansion::Steer`]: it is loaded like any other and may be expanded, so failing regions
//!   still carry the walk towards the query (the approach of pgvector's unreleased composite
//!   index, after HQANN). Every failing neighbor costs a load; at most
//!   [`FilterParams::max_failing`] of them are expanded, as a budget for rare values.
//! * [`Expansion::TwoHop`]: it is not loaded; its own neighbors that pass are loaded in its
//!   place (ACORN's expansion), so no failing element is ever compared with the query, but its
//!   neighbor list is read and its neighbors tested. When the passing neighborhood runs out
//!   before W is full, the walk goes on as [`Expansion::Steer`] from the failing neighbors it
//!   skipped, nearest parent first, within the same budget.
//!
//! The store tests each neighbor before any load ([`FilterStore`]), and that test may be
//! approximate in one direction: it may accept an element that fails (a fingerprint beside the
//! link that matches by chance), as long as the store then loads it as not live (its exact
//! attribute checked); such an element, like one with no rows left, steers the walk but is
//! never returned or counted towards `ef`.
//!
//! A [`FilteredScan`] follows [`crate::Scan`]'s contract: `hnsw.ef_search`, the iterative
//! modes, `max_scan_tuples` and the memory budget from [`ScanParams`], the scan lock around
//! each round, and growth that fails as "out of memory" rather than aborting.
//!
//! [`FilterParams::seeds`] adds entries of the caller's (elements known to pass, such as an
//! entry point kept per frequent value) to the descent's, so that a walk can start inside a
//! matching region far from the query's.

use crate::id_set::IdSet;
use crate::scan::{IterativeScan, ScanParams};
use crate::search::{descend, descent_ef, entry_candidate, SearchState, SearchStats};
use crate::storage::{Candidate, Candidates, GraphLock, GraphStore};
use vector_pairing_heap::{HeapOrder, PairingHeap};

/// A store that knows the scan's filter: it tests each neighbor from what the list keeps beside
/// the link (without reading the neighbor), and loads an element whose exact attribute fails as
/// not live.
pub trait FilterStore: GraphStore {
    /// Appends the layer-0 neighbors of a loaded element, in stored order, each with whether it
    /// may pass the filter (false: it fails for sure).
    fn tested_neighbors(
        &mut self,
        element: &Candidate<Self::Id, Self::Meta>,
        out: &mut Vec<(Self::Id, bool)>,
    );

    /// The same for an element known only by its id (a page store reads the element to find
    /// its list): what a two-hop expansion needs for the failing neighbors it does not load.
    fn tested_neighbors_of(&mut self, id: &Self::Id, out: &mut Vec<(Self::Id, bool)>);
}

/// How a hop treats a neighbor that fails the filter (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expansion {
    /// Load failing neighbors too and let them steer the walk.
    Steer,
    /// Load the passing neighbors of a failing neighbor instead of it.
    TwoHop,
}

/// How a filtered scan walks, beside the scan's own settings ([`ScanParams`]).
#[derive(Clone, Debug)]
pub struct FilterParams<Id> {
    pub expansion: Expansion,
    /// Failing elements a scan expands at most (their neighbor lists read).
    pub max_failing: usize,
    /// Elements known to pass, added to layer 0's entries.
    pub seeds: Vec<Id>,
    /// [`Expansion::TwoHop`]: a hop with at least this many passing neighbors of its own reads
    /// no failing neighbor's list (`usize::MAX`: every hop does, as ACORN).
    pub enough_passing: usize,
}

impl<Id> FilterParams<Id> {
    /// The default budget, no seeds.
    pub fn new(expansion: Expansion) -> Self {
        FilterParams {
            expansion,
            max_failing: 10_000,
            seeds: Vec::new(),
            enough_passing: usize::MAX,
        }
    }
}

/// Work of one filtered search, beyond the walk's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// The walk's counters (`distances` counts loads of passing and failing elements alike).
    pub search: SearchStats,
    /// Neighbors tested (from beside their links).
    pub tested: u64,
    /// Failing elements loaded (compared with the query), chance matches included.
    pub failing_loaded: u64,
    /// Failing elements whose neighbor list was read (expanded or looked through).
    pub failing_expanded: u64,
}

/// What a loaded candidate is: an element that passes, or one that fails.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Passing,
    Failing,
}

/// The next element a walk expands: a loaded candidate, or a failing neighbor a two-hop
/// expansion held back (known by id only).
enum Next<Id> {
    Loaded(u32),
    HeldBack(Id),
}

/// The live elements nearest to `query` that pass the store's filter, nearest first, at most
/// `ef` of them, and the work done: one round of a [`FilteredScan`].
pub fn filtered_search<S: FilterStore>(
    store: &mut S,
    query: &S::Value,
    ef: usize,
    params: &FilterParams<S::Id>,
) -> (Candidates<S::Id, S::Meta>, FilterStats)
where
    S::Value: Clone,
{
    let scan = ScanParams {
        ef_search: ef,
        descent_ef: descent_ef(ef),
        ..ScanParams::default()
    };
    let mut filtered = FilteredScan::new(query.clone(), scan, params.clone());
    let results = std::iter::from_fn(|| filtered.next(store)).collect();
    (results, filtered.stats())
}

/// A filtered index scan: rounds of the filtered walk, each finding up to `ef_search` passing
/// elements not returned yet, resumed (iterative scans) from the candidates the last round left
/// queued or pushed out, as pgvector's iterative scan resumes from its discarded elements. Once
/// `max_scan_tuples` elements are visited or the memory budget is spent, the passing elements
/// already loaded are handed out, nearest first, and the scan ends.
pub struct FilteredScan<S: GraphStore> {
    query: S::Value,
    params: ScanParams,
    filter: FilterParams<S::Id>,
    state: SearchState<S::Id, S::Meta>,
    walk: Walk<S::Id>,
    stats: FilterStats,
    started: bool,
    /// The scan started as an iterative one (only then does it resume).
    iterative: bool,
    /// No further round: `max_scan_tuples` or the memory budget reached, or nothing to walk.
    finished: bool,
    /// The last round's results, furthest first.
    ready: Vec<u32>,
    /// The furthest distance returned (strict order).
    previous: f64,
}

impl<S: FilterStore> FilteredScan<S> {
    /// A scan for `query` with the scan's settings and the filter's.
    pub fn new(query: S::Value, params: ScanParams, filter: FilterParams<S::Id>) -> Self {
        FilteredScan {
            query,
            params,
            filter,
            state: SearchState::new(),
            walk: Walk {
                c: PairingHeap::new(HeapOrder::Nearest),
                w: PairingHeap::new(HeapOrder::Furthest),
                held: PairingHeap::new(HeapOrder::Nearest),
                held_ids: Vec::new(),
                pushed_out: Vec::new(),
                kinds: Vec::new(),
                expanded: Vec::new(),
                visited: IdSet::default(),
                tuples: 0,
                ef: params.ef_search.max(1),
                out_of_memory: None,
                #[cfg(test)]
                reservations_left: None,
            },
            stats: FilterStats::default(),
            started: false,
            iterative: false,
            finished: false,
            ready: Vec::new(),
            previous: f64::NEG_INFINITY,
        }
    }

    /// Replaces the scan's settings for the rest of the scan (as [`crate::Scan::set_params`]).
    pub fn set_params(&mut self, params: ScanParams) {
        self.params = params;
    }

    /// The scan's settings in effect.
    pub fn params(&self) -> ScanParams {
        self.params
    }

    /// The query.
    pub fn query(&self) -> &S::Value {
        &self.query
    }

    /// The work so far.
    pub fn stats(&self) -> FilterStats {
        let mut stats = self.stats;
        stats.search.add(&self.state.stats);
        stats
    }

    /// Layer-0 elements seen so far, entries included, as `max_scan_tuples` counts them
    /// (pgvector's `tuples`).
    pub fn tuples(&self) -> u64 {
        self.walk.tuples
    }

    /// Bytes the scan's structures hold now (its own estimate: the candidates, the visited
    /// set, the queues), compared with the memory budget.
    pub fn memory_allocated(&self) -> usize {
        let w = &self.walk;
        self.state.arena.capacity() * std::mem::size_of::<Candidate<S::Id, S::Meta>>()
            + w.visited.capacity() * (std::mem::size_of::<S::Id>() + 1)
            + w.c.allocated_bytes()
            + w.w.allocated_bytes()
            + w.held.allocated_bytes()
            + w.kinds.capacity()
            + w.expanded.capacity()
            + w.held_ids.capacity() * std::mem::size_of::<S::Id>()
            + w.pushed_out.capacity() * std::mem::size_of::<u32>()
    }

    /// Bytes of an allocation that failed: the scan stopped and [`Self::next`] returns `None`;
    /// the caller raises "out of memory" instead of ending the scan.
    pub fn out_of_memory(&self) -> Option<usize> {
        self.walk.out_of_memory.or(self.state.out_of_memory)
    }

    /// The rows [`Self::next`] will return without walking again, nearest first (a strict scan
    /// may still skip some).
    pub fn upcoming(&self) -> impl Iterator<Item = &Candidate<S::Id, S::Meta>> + '_ {
        self.ready
            .iter()
            .rev()
            .map(|&i| self.state.get(i))
            .filter(|c| c.live)
    }

    /// The next passing element, nearest first within a round; `None` when the scan is done.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        loop {
            if self.out_of_memory().is_some() {
                return None;
            }
            if let Some(index) = self.ready.pop() {
                let candidate = self.state.get(index);
                if !candidate.live {
                    continue;
                }
                if self.params.mode == IterativeScan::Strict && candidate.distance < self.previous {
                    continue;
                }
                self.previous = self.previous.max(candidate.distance);
                return Some(candidate.clone());
            }
            if self.finished {
                return None;
            }
            store.lock(GraphLock::ScanShare);
            self.walk.ef = self.params.ef_search.max(1);
            if !self.started {
                self.started = true;
                self.iterative = self.params.mode != IterativeScan::Off;
                if !self.start(store) {
                    self.finished = true;
                }
            } else if self.params.mode == IterativeScan::Off || !self.iterative {
                // As `Scan`: a scan that started as a single search kept nothing to resume.
                self.finished = true;
            } else if self.tuples() >= self.params.max_scan_tuples
                || self.memory_allocated() > self.params.max_memory
            {
                // Spent: what was loaded and passes is all that comes back.
                self.walk.hand_out_pushed_out(&self.state);
                self.finished = true;
            } else if !self.walk.resume(&self.state) {
                self.finished = true;
            }
            if !self.finished {
                let before = (self.tuples(), self.stats.failing_expanded);
                self.walk.run(
                    store,
                    &mut self.state,
                    &mut self.stats,
                    &self.query,
                    &self.filter,
                );
                // A round that found nothing and moved nowhere (the failing budget spent on
                // what is left) ends the scan.
                let after = (self.tuples(), self.stats.failing_expanded);
                if self.walk.w.is_empty() && before == after {
                    self.finished = true;
                }
            }
            store.unlock(GraphLock::ScanShare);
            self.ready.clear();
            if self.ready.try_reserve(self.walk.w.len()).is_err() {
                self.walk.out_of_memory = Some(self.walk.w.len() * 4);
                return None;
            }
            while let Some((index, _)) = self.walk.w.pop() {
                self.ready.push(index);
            }
        }
    }

    /// The descent and layer 0's entries; false on an empty graph.
    fn start(&mut self, store: &mut S) -> bool {
        let Some(entry) = store.entry_point() else {
            return false;
        };
        let state = &mut self.state;
        let start = entry_candidate(store, state, &self.query, entry);
        let top = state.get(start).level;
        let mut entries = descend(
            store,
            state,
            &self.query,
            vec![start],
            (top, 0),
            (self.params.descent_ef.max(1), 1),
            false,
        );
        if state.out_of_memory.is_some() {
            return false;
        }
        let seeds = self.filter.seeds.len();
        if seeds > 0 {
            let mut loaded = Vec::new();
            if self.walk.reserve(state, seeds).is_err()
                || loaded.try_reserve(seeds).is_err()
                || entries.try_reserve(seeds).is_err()
            {
                self.walk
                    .out_of_memory
                    .get_or_insert(seeds * std::mem::size_of::<Candidate<S::Id, S::Meta>>());
                return false;
            }
            store.load(&self.query, &self.filter.seeds, &mut loaded);
            state.stats.distances += self.filter.seeds.len() as u64;
            state.stats.load_batches += 1;
            entries.extend(loaded.into_iter().map(|c| state.push(c)));
        }
        if self.walk.reserve(state, entries.len()).is_err() {
            return false;
        }
        for &index in &entries {
            let id = state.get(index).id;
            if !self.walk.visited.insert(id) {
                continue;
            }
            self.walk.tuples += 1;
            // An entry comes from the descent, loaded: its exact attribute is known.
            let kind = if state.get(index).live {
                Kind::Passing
            } else {
                Kind::Failing
            };
            self.walk.offer(state, index, kind);
        }
        true
    }
}

/// Bytes a queued candidate takes in a pairing heap, for the size of a failed reservation.
const HEAP_NODE_BYTES: usize = 24;

struct Walk<Id> {
    /// Candidates to expand, nearest first (passing and loaded failing elements).
    c: PairingHeap,
    /// Passing elements kept, furthest first.
    w: PairingHeap,
    /// Failing neighbors skipped by a two-hop expansion (indices into `held_ids`), by their
    /// parent's distance.
    held: PairingHeap,
    held_ids: Vec<Id>,
    /// The kind of each arena index, and whether it was expanded.
    kinds: Vec<Kind>,
    expanded: Vec<bool>,
    /// Loaded elements a round left out (not queued, or pushed out of W), for the next round.
    pushed_out: Vec<u32>,
    visited: IdSet<Id>,
    /// Layer-0 elements seen (entries and neighbors newly visited).
    tuples: u64,
    ef: usize,
    /// Bytes of a reservation that failed.
    out_of_memory: Option<usize>,
    /// Tests: the number of reservations that succeed before one fails.
    #[cfg(test)]
    reservations_left: Option<usize>,
}

impl<Id: Copy + Eq + std::hash::Hash> Walk<Id> {
    fn kind(&self, index: u32) -> Kind {
        self.kinds[index as usize]
    }

    fn set_kind(&mut self, index: u32, kind: Kind) {
        let i = index as usize;
        if self.kinds.len() <= i {
            self.kinds.resize(i + 1, Kind::Failing);
            self.expanded.resize(i + 1, false);
        }
        self.kinds[i] = kind;
    }

    /// Room for `n` more elements in everything a batch of `n` may grow, so that the pushes
    /// that follow cannot fail; on failure, records it and returns `Err`.
    fn reserve<Meta>(&mut self, state: &mut SearchState<Id, Meta>, n: usize) -> Result<(), ()> {
        let arena = state.arena.len() + n;
        let reserved = state
            .arena
            .try_reserve(n)
            .map_err(|_| n * std::mem::size_of::<Candidate<Id, Meta>>())
            .and_then(|_| {
                self.kinds
                    .try_reserve(arena.saturating_sub(self.kinds.len()))
                    .and_then(|_| {
                        self.expanded
                            .try_reserve(arena.saturating_sub(self.expanded.len()))
                    })
                    .map_err(|_| n)
            })
            .and_then(|_| self.visited.try_reserve(n).map_err(|_| n * 8))
            .and_then(|_| self.held_ids.try_reserve(n).map_err(|_| n * 8))
            .and_then(|_| self.pushed_out.try_reserve(n).map_err(|_| n * 4))
            .and_then(|_| self.c.try_reserve(n))
            .and_then(|_| self.w.try_reserve(n))
            .and_then(|_| self.held.try_reserve(n));
        #[cfg(test)]
        let reserved = match self.reservations_left.as_mut() {
            Some(0) => Err(n),
            Some(left) => {
                *left -= 1;
                reserved
            }
            None => reserved,
        };
        reserved.map_err(|bytes| {
            self.out_of_memory = Some(bytes);
        })
    }

    fn full(&self) -> bool {
        self.w.len() >= self.ef
    }

    fn furthest(&self) -> f64 {
        self.w.peek().map_or(f64::INFINITY, |(_, d)| d)
    }

    /// pgvector's keep rule with W counting only passing elements: a loaded element is queued
    /// if it is nearer than W's furthest or W is not full yet; a passing one also enters W.
    fn offer<Meta: Clone>(&mut self, state: &SearchState<Id, Meta>, index: u32, kind: Kind) {
        self.set_kind(index, kind);
        let distance = state.get(index).distance;
        if self.full() && distance >= self.furthest() {
            self.pushed_out.push(index);
            return;
        }
        self.c.push(index, distance);
        if kind == Kind::Passing {
            self.w.push(index, distance);
            if self.w.len() > self.ef {
                if let Some((out, _)) = self.w.pop() {
                    self.pushed_out.push(out);
                }
            }
        }
    }

    /// Starts a round after the last one's results were taken (W is empty): what it left out
    /// is offered again. False when nothing is left to walk.
    fn resume<Meta: Clone>(&mut self, state: &SearchState<Id, Meta>) -> bool {
        let left_out = std::mem::take(&mut self.pushed_out);
        if self.pushed_out.try_reserve(left_out.len()).is_err()
            || self.c.try_reserve(left_out.len()).is_err()
            || self.w.try_reserve(left_out.len()).is_err()
        {
            self.out_of_memory = Some(left_out.len() * HEAP_NODE_BYTES);
            return false;
        }
        for index in left_out {
            let kind = self.kind(index);
            self.offer(state, index, kind);
        }
        !(self.c.is_empty() && self.held.is_empty())
    }

    /// Ends the scan with the passing elements it loaded and left out, all of them into W.
    fn hand_out_pushed_out<Meta: Clone>(&mut self, state: &SearchState<Id, Meta>) {
        self.c = PairingHeap::new(HeapOrder::Nearest);
        self.held = PairingHeap::new(HeapOrder::Nearest);
        let left_out = std::mem::take(&mut self.pushed_out);
        if self.w.try_reserve(left_out.len()).is_err() {
            self.out_of_memory = Some(left_out.len() * HEAP_NODE_BYTES);
            return;
        }
        for index in left_out {
            if self.kind(index) == Kind::Passing {
                self.w.push(index, state.get(index).distance);
            }
        }
    }

    fn run<S: FilterStore<Id = Id>>(
        &mut self,
        store: &mut S,
        state: &mut SearchState<Id, S::Meta>,
        stats: &mut FilterStats,
        query: &S::Value,
        params: &FilterParams<Id>,
    ) {
        let budget = params.max_failing as u64;
        if self.c.is_empty() && self.held.is_empty() {
            // Handing out what was left: nothing to walk.
            return;
        }
        let mut neighbors = Vec::new();
        let mut second = Vec::new();
        let mut failing = Vec::new();
        let mut batch: Vec<Id> = Vec::new();
        let mut batch_kinds: Vec<Kind> = Vec::new();
        let mut loaded = Vec::new();
        loop {
            let next = match self.c.pop() {
                Some((index, distance)) => {
                    if self.full() && distance > self.furthest() {
                        // The next round may start from it.
                        if self.c.try_reserve(1).is_err() {
                            self.out_of_memory = Some(HEAP_NODE_BYTES);
                        } else {
                            self.c.push(index, distance);
                        }
                        break;
                    }
                    Next::Loaded(index)
                }
                // Out of candidates before W is full: go on from a held-back neighbor.
                None if !self.full() && stats.failing_expanded < budget => {
                    let Some((held, _)) = self.held.pop() else {
                        break;
                    };
                    Next::HeldBack(self.held_ids[held as usize])
                }
                None => break,
            };
            neighbors.clear();
            let parent_distance = match next {
                Next::Loaded(index) => {
                    // A row pushed out of W after its expansion comes back on resume: its
                    // neighbors are all visited already.
                    if std::mem::replace(&mut self.expanded[index as usize], true) {
                        continue;
                    }
                    if self.kind(index) == Kind::Failing {
                        if stats.failing_expanded >= budget {
                            continue;
                        }
                        stats.failing_expanded += 1;
                    }
                    store.tested_neighbors(state.get(index), &mut neighbors);
                    state.get(index).distance
                }
                Next::HeldBack(id) => {
                    stats.failing_expanded += 1;
                    store.tested_neighbors_of(&id, &mut neighbors);
                    f64::INFINITY
                }
            };
            state.stats.hops += 1;
            batch.clear();
            batch_kinds.clear();
            failing.clear();
            let n = neighbors.len();
            if self.reserve(state, n).is_err()
                || batch.try_reserve(n).is_err()
                || batch_kinds.try_reserve(n).is_err()
                || failing.try_reserve(n).is_err()
            {
                self.out_of_memory.get_or_insert(n * HEAP_NODE_BYTES);
                return;
            }
            for &(id, may_pass) in &neighbors {
                if !self.visited.insert(id) {
                    continue;
                }
                state.stats.visited += 1;
                self.tuples += 1;
                stats.tested += 1;
                if may_pass {
                    batch.push(id);
                    batch_kinds.push(Kind::Passing);
                } else {
                    failing.push(id);
                }
            }
            let passing = batch.len();
            for &id in &failing {
                match params.expansion {
                    Expansion::Steer => {
                        batch.push(id);
                        batch_kinds.push(Kind::Failing);
                    }
                    Expansion::TwoHop => {
                        // Its neighbors that pass stand in for it, unless the hop found enough
                        // passing neighbors of its own; it waits in case they run out.
                        let held = self.held_ids.len() as u32;
                        self.held_ids.push(id);
                        self.held.push(held, parent_distance);
                        if passing >= params.enough_passing || stats.failing_expanded >= budget {
                            continue;
                        }
                        stats.failing_expanded += 1;
                        second.clear();
                        store.tested_neighbors_of(&id, &mut second);
                        let more = second.len();
                        if self.reserve(state, batch.len() + more).is_err()
                            || batch.try_reserve(more).is_err()
                            || batch_kinds.try_reserve(more).is_err()
                        {
                            self.out_of_memory.get_or_insert(more * HEAP_NODE_BYTES);
                            return;
                        }
                        for &(id2, may_pass) in &second {
                            if self.visited.contains(&id2) {
                                continue;
                            }
                            stats.tested += 1;
                            if may_pass {
                                self.visited.insert(id2);
                                state.stats.visited += 1;
                                self.tuples += 1;
                                batch.push(id2);
                                batch_kinds.push(Kind::Passing);
                            }
                        }
                    }
                }
            }
            if batch.is_empty() {
                continue;
            }
            if self.reserve(state, batch.len()).is_err() || loaded.try_reserve(batch.len()).is_err()
            {
                self.out_of_memory.get_or_insert(batch.len());
                return;
            }
            loaded.clear();
            store.load(query, &batch, &mut loaded);
            state.stats.distances += batch.len() as u64;
            state.stats.load_batches += 1;
            for (element, &kind) in loaded.drain(..).zip(&batch_kinds) {
                // A loaded element that is not live (no rows left, or its exact attribute
                // fails where the test before the load could only say it may pass) steers
                // like a failing one.
                let kind = if element.live { kind } else { Kind::Failing };
                if kind == Kind::Failing {
                    stats.failing_loaded += 1;
                }
                let index = state.push(element);
                self.offer(state, index, kind);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{l2_squared, InMemoryGraph};
    use crate::storage::EntryPoint;
    use crate::GraphParams;

    /// Every third element passes.
    struct Thirds(InMemoryGraph);

    impl GraphStore for Thirds {
        type Id = u32;
        type Meta = ();
        type Value = Vec<f32>;

        fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
            self.0.entry_point()
        }

        fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
            self.0.neighbors(element, layer, out);
        }

        fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
            let first = out.len();
            self.0.load(query, ids, out);
            for c in &mut out[first..] {
                c.live &= c.id % 3 == 0;
            }
        }
    }

    impl FilterStore for Thirds {
        fn tested_neighbors(&mut self, element: &Candidate<u32, ()>, out: &mut Vec<(u32, bool)>) {
            let mut ids = Vec::new();
            self.0.neighbors(element, 0, &mut ids);
            out.extend(ids.into_iter().map(|id| (id, id % 3 == 0)));
        }

        fn tested_neighbors_of(&mut self, id: &u32, out: &mut Vec<(u32, bool)>) {
            let mut ids = Vec::new();
            self.0.read_neighbors_of(*id, &mut ids);
            out.extend(ids.into_iter().map(|id| (id, id % 3 == 0)));
        }
    }

    #[test]
    fn a_failed_reservation_stops_the_scan_with_out_of_memory() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let vectors: Vec<Vec<f32>> = (0..600)
            .map(|_| (0..4).map(|_| next() as f32).collect())
            .collect();
        let params = GraphParams {
            m: 4,
            ef_construction: 16,
        };
        let (graph, _) = InMemoryGraph::build(&vectors, &params, l2_squared, &mut next);
        let mut store = Thirds(graph);
        let scan_params = ScanParams {
            ef_search: 10,
            mode: IterativeScan::Relaxed,
            ..ScanParams::default()
        };
        for left in [0usize, 1, 3, 10] {
            let mut scan: FilteredScan<Thirds> = FilteredScan::new(
                vec![0.5; 4],
                scan_params,
                FilterParams::new(Expansion::TwoHop),
            );
            scan.walk.reservations_left = Some(left);
            let mut rows = 0;
            while let Some(c) = scan.next(&mut store) {
                assert_eq!(c.id % 3, 0);
                rows += 1;
            }
            assert!(
                scan.out_of_memory().is_some(),
                "{left}: the failure is reported"
            );
            assert!(rows < 200, "{left}: the scan stopped ({rows} rows)");
        }
        let mut scan: FilteredScan<Thirds> = FilteredScan::new(
            vec![0.5; 4],
            scan_params,
            FilterParams::new(Expansion::TwoHop),
        );
        let rows = std::iter::from_fn(|| scan.next(&mut store)).count();
        assert_eq!(scan.out_of_memory(), None);
        assert_eq!(
            rows, 200,
            "without the failure every passing row comes back"
        );
    }
}
