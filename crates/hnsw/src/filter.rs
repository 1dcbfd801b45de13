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
//! [`FilterParams::seeds`] adds entries of the caller's (elements known to pass, such as an
//! entry point kept per frequent value) to the descent's, so that a walk can start inside a
//! matching region far from the query's.

use crate::id_set::IdSet;
use crate::scan::IterativeScan;
use crate::search::{descend, descent_ef, entry_candidate, SearchState, SearchStats};
use crate::storage::{Candidate, Candidates, GraphStore};
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

/// Settings of one filtered search.
#[derive(Clone, Debug)]
pub struct FilterParams<Id> {
    /// Passing elements kept on layer 0 (`hnsw.ef_search`).
    pub ef: usize,
    /// Queue size on the layers above 0.
    pub descent_ef: usize,
    pub expansion: Expansion,
    /// Failing elements a walk expands at most (their neighbor lists read).
    pub max_failing: usize,
    /// Elements known to pass, added to layer 0's entries.
    pub seeds: Vec<Id>,
    /// [`Expansion::TwoHop`]: a hop with at least this many passing neighbors of its own reads
    /// no failing neighbor's list (`usize::MAX`: every hop does, as ACORN).
    pub enough_passing: usize,
}

impl<Id> FilterParams<Id> {
    /// The settings for `ef` with the default budget and no seeds.
    pub fn new(ef: usize, expansion: Expansion) -> Self {
        FilterParams {
            ef,
            descent_ef: descent_ef(ef),
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
    /// Elements whose attribute was tested.
    pub tested: u64,
    /// Failing elements loaded (compared with the query).
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
/// `params.ef` of them, and the work done: one round of a [`FilteredScan`].
pub fn filtered_search<S: FilterStore>(
    store: &mut S,
    query: &S::Value,
    params: &FilterParams<S::Id>,
) -> (Candidates<S::Id, S::Meta>, FilterStats)
where
    S::Value: Clone,
{
    let mut scan = FilteredScan::new(query.clone(), params.clone(), IterativeScan::Off, 0);
    let results = std::iter::from_fn(|| scan.next(store)).collect();
    (results, scan.stats())
}

/// A filtered index scan: rounds of the filtered walk, each finding up to `ef` passing elements
/// not returned yet, resumed (iterative scans) from the candidates the last round left queued
/// or pushed out, as pgvector's iterative scan resumes from its discarded elements.
pub struct FilteredScan<S: GraphStore> {
    query: S::Value,
    params: FilterParams<S::Id>,
    mode: IterativeScan,
    max_scan_tuples: u64,
    state: SearchState<S::Id, S::Meta>,
    walk: Walk<S::Id>,
    stats: FilterStats,
    started: bool,
    /// The last round's results, furthest first.
    ready: Vec<u32>,
    /// The furthest distance returned (strict order).
    previous: f64,
}

impl<S: FilterStore> FilteredScan<S> {
    /// A scan for `query`; `mode` and `max_scan_tuples` as `hnsw.iterative_scan` and
    /// `hnsw.max_scan_tuples` (elements visited before no further round starts).
    pub fn new(
        query: S::Value,
        params: FilterParams<S::Id>,
        mode: IterativeScan,
        max_scan_tuples: u64,
    ) -> Self {
        let ef = params.ef.max(1);
        FilteredScan {
            query,
            params,
            mode,
            max_scan_tuples,
            state: SearchState::new(),
            walk: Walk {
                c: PairingHeap::new(HeapOrder::Nearest),
                w: PairingHeap::new(HeapOrder::Furthest),
                held: PairingHeap::new(HeapOrder::Nearest),
                held_ids: Vec::new(),
                pushed_out: Vec::new(),
                kinds: Vec::new(),
                visited: IdSet::default(),
                ef,
            },
            stats: FilterStats::default(),
            started: false,
            ready: Vec::new(),
            previous: f64::NEG_INFINITY,
        }
    }

    /// The work so far.
    pub fn stats(&self) -> FilterStats {
        let mut stats = self.stats;
        stats.search.add(&self.state.stats);
        stats
    }

    /// Elements visited so far (pgvector's `tuples`, as `max_scan_tuples` counts them).
    pub fn tuples(&self) -> u64 {
        self.state.stats.visited
    }

    /// The next passing element, nearest first within a round; `None` when the scan is done.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        loop {
            if let Some(index) = self.ready.pop() {
                let candidate = self.state.get(index);
                if !candidate.live {
                    continue;
                }
                if self.mode == IterativeScan::Strict && candidate.distance < self.previous {
                    continue;
                }
                self.previous = self.previous.max(candidate.distance);
                return Some(candidate.clone());
            }
            if !self.started {
                self.started = true;
                if !self.start(store) {
                    return None;
                }
            } else if self.mode == IterativeScan::Off
                || self.tuples() >= self.max_scan_tuples
                || !self.walk.resume(&self.state)
            {
                return None;
            }
            self.walk.run(
                store,
                &mut self.state,
                &mut self.stats,
                &self.query,
                &self.params,
            );
            self.ready = std::iter::from_fn(|| self.walk.w.pop().map(|(i, _)| i)).collect();
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
        if !self.params.seeds.is_empty() {
            let mut loaded = Vec::with_capacity(self.params.seeds.len());
            store.load(&self.query, &self.params.seeds, &mut loaded);
            state.stats.distances += self.params.seeds.len() as u64;
            state.stats.load_batches += 1;
            entries.extend(loaded.into_iter().map(|c| state.push(c)));
        }
        for &index in &entries {
            let id = state.get(index).id;
            if !self.walk.visited.insert(id) {
                continue;
            }
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

struct Walk<Id> {
    /// Candidates to expand, nearest first (passing and loaded failing elements).
    c: PairingHeap,
    /// Passing elements kept, furthest first.
    w: PairingHeap,
    /// Failing neighbors skipped by a two-hop expansion (indices into `held_ids`), by their
    /// parent's distance.
    held: PairingHeap,
    held_ids: Vec<Id>,
    /// The kind of each arena index.
    kinds: Vec<Kind>,
    /// Loaded elements a round left out (not queued, or pushed out of W), for the next round.
    pushed_out: Vec<u32>,
    visited: IdSet<Id>,
    ef: usize,
}

impl<Id: Copy + Eq + std::hash::Hash> Walk<Id> {
    fn kind(&self, index: u32) -> Kind {
        self.kinds[index as usize]
    }

    fn set_kind(&mut self, index: u32, kind: Kind) {
        let i = index as usize;
        if self.kinds.len() <= i {
            self.kinds.resize(i + 1, Kind::Failing);
        }
        self.kinds[i] = kind;
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
        for index in left_out {
            let kind = self.kind(index);
            self.offer(state, index, kind);
        }
        !(self.c.is_empty() && self.held.is_empty())
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
            for &(id, may_pass) in &neighbors {
                if !self.visited.insert(id) {
                    continue;
                }
                state.stats.visited += 1;
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
                        for &(id2, may_pass) in &second {
                            if self.visited.contains(&id2) {
                                continue;
                            }
                            stats.tested += 1;
                            if may_pass {
                                self.visited.insert(id2);
                                state.stats.visited += 1;
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
