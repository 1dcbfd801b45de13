//! Layer search (HNSW paper, Algorithm 2) with pgvector's exact rules.
//!
//! A search on one layer keeps a candidate queue C (nearest first), a result
//! queue W (furthest first) and a visited set. Rules that matter for
//! returning the same ids in the same order as pgvector:
//!
//! * entry points go into C and W in the order given; they are added to the
//!   visited set only when the search starts a fresh visited set;
//! * a popped candidate farther than W's furthest element ends the search;
//! * its neighbor list is read, every id not yet visited is marked visited,
//!   and then the whole batch is handed to the store ([`GraphStore::load`]);
//! * each loaded neighbor, in list order, is compared with W's *current*
//!   furthest element: it is kept if strictly closer, or unconditionally
//!   while W counts fewer than `ef` elements; otherwise it is dropped (or,
//!   for iterative scans, parked in the "discarded" queue);
//! * a kept neighbor whose level is below the layer is skipped;
//! * in repair mode only live elements count towards `ef` (elements being
//!   deleted still guide the search but do not push out real results);
//! * when W counts more than `ef`, its furthest element is removed (and
//!   parked as discarded for iterative scans);
//! * the result is W drained furthest-first — callers reverse it.
//!
//! Upper layers use the same routine with a fresh visited set per layer. pgvector descends
//! greedily (`ef = 1`); a scan here keeps [`descent_ef`] of its `ef_search` there, because one
//! greedy path ends in the wrong cluster often enough on clustered data to cost whole queries
//! (docs/benchmarks.md, "The descent").

use crate::id_set::IdSet;
use crate::storage::{Candidate, Candidates, EntryPoint, GraphStore};
use std::collections::TryReserveError;
use vector_pairing_heap::{HeapOrder, PairingHeap};

/// Work counted during a search (or an insert / repair).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Candidates expanded (neighbor lists read).
    pub hops: u64,
    /// Elements newly added to the visited set, entry points included.
    pub visited: u64,
    /// Distances computed (elements loaded with a query).
    pub distances: u64,
    /// Calls to [`GraphStore::load`].
    pub load_batches: u64,
}

impl SearchStats {
    /// Adds another set of counters to this one.
    pub fn add(&mut self, other: &SearchStats) {
        self.hops += other.hops;
        self.visited += other.visited;
        self.distances += other.distances;
        self.load_batches += other.load_batches;
    }
}

/// Ids a layer-0 search typically visits per unit of `ef` (measured ~37 with m = 16).
const VISITED_PER_EF: usize = 40;

/// Parameters of one layer search.
pub(crate) struct LayerQuery<'q, V> {
    pub(crate) query: &'q V,
    pub(crate) ef: usize,
    pub(crate) layer: u8,
    /// Count only live elements towards `ef` (repair of an existing element).
    pub(crate) count_live_only: bool,
    /// Park dropped elements in the discarded queue (iterative scans).
    pub(crate) discard: bool,
    /// Candidates expanded together, their neighbors loaded as one batch (1: pgvector's walk).
    pub(crate) beam: usize,
}

/// Candidates, visited set and (for iterative scans) discarded queue that
/// can outlive one layer search.
pub(crate) struct SearchState<Id, Meta> {
    pub(crate) arena: Vec<Candidate<Id, Meta>>,
    visited: IdSet<Id>,
    pub(crate) discarded: Option<PairingHeap>,
    /// pgvector's `tuples` counter: entry points and neighbors seen on
    /// layer 0 (upper layers are not counted, as in pgvector's scans).
    pub(crate) tuples: u64,
    pub(crate) stats: SearchStats,
    ids: Vec<Id>,
    loaded: Vec<Candidate<Id, Meta>>,
    /// Scratch for look-ahead: arena indices of upcoming candidates.
    upcoming: Vec<u32>,
    /// Scratch of a round: the arena indices of the candidates it expands, and their
    /// neighbors' ids (kept so that a layer search allocates neither).
    round: Vec<u32>,
    neighbor_ids: Vec<Id>,
    /// Bytes of a reservation that failed: the search stopped there, and its owner raises
    /// "out of memory" (an iterative scan's structures grow with its settings).
    pub(crate) out_of_memory: Option<usize>,
    /// Tests: the number of hops whose reservation succeeds before one fails.
    #[cfg(test)]
    pub(crate) reservations_left: Option<usize>,
}

impl<Id: Copy + Eq + std::hash::Hash, Meta: Clone> SearchState<Id, Meta> {
    pub(crate) fn new() -> Self {
        SearchState {
            arena: Vec::new(),
            visited: IdSet::default(),
            discarded: None,
            tuples: 0,
            stats: SearchStats::default(),
            ids: Vec::new(),
            loaded: Vec::new(),
            upcoming: Vec::new(),
            round: Vec::new(),
            neighbor_ids: Vec::new(),
            out_of_memory: None,
            #[cfg(test)]
            reservations_left: None,
        }
    }

    /// Makes room for a hop's batch of `n` neighbors in everything the hop may grow, so that
    /// the pushes that follow cannot fail; on failure, records the request and returns false.
    fn reserve_batch(&mut self, n: usize, queues: &mut Queues) -> bool {
        fn room<T>(r: Result<(), TryReserveError>, n: usize) -> Result<(), usize> {
            r.map_err(|_| n.saturating_mul(std::mem::size_of::<T>()))
        }
        let reserved = room::<Id>(self.visited.try_reserve(n), n)
            .and_then(|_| room::<Id>(self.ids.try_reserve(n), n))
            .and_then(|_| room::<Candidate<Id, Meta>>(self.arena.try_reserve(n), n))
            .and_then(|_| room::<Candidate<Id, Meta>>(self.loaded.try_reserve(n), n))
            .and_then(|_| queues.c.try_reserve(n))
            .and_then(|_| queues.w.try_reserve(n))
            .and_then(|_| self.discarded.as_mut().map_or(Ok(()), |d| d.try_reserve(n)));
        #[cfg(test)]
        let reserved = match self.reservations_left.as_mut() {
            Some(0) => Err(n),
            Some(left) => {
                *left -= 1;
                reserved
            }
            None => reserved,
        };
        match reserved {
            Ok(()) => true,
            Err(bytes) => {
                self.out_of_memory = Some(bytes);
                false
            }
        }
    }

    pub(crate) fn push(&mut self, candidate: Candidate<Id, Meta>) -> u32 {
        let index = u32::try_from(self.arena.len()).expect("too many candidates");
        self.arena.push(candidate);
        index
    }

    pub(crate) fn get(&self, index: u32) -> &Candidate<Id, Meta> {
        &self.arena[index as usize]
    }

    fn counts(&self, query_counts_live_only: bool, index: u32) -> bool {
        !query_counts_live_only || self.arena[index as usize].live
    }

    fn discard(&mut self, index: u32) {
        if let Some(discarded) = self.discarded.as_mut() {
            discarded.push(index, self.arena[index as usize].distance);
        }
    }
}

/// The two queues of one layer search and the number of W's elements that
/// count towards `ef`.
struct Queues {
    c: PairingHeap,
    w: PairingHeap,
    wlen: usize,
}

/// Searches one layer from `entries` (arena indices) and returns W's
/// elements furthest first. With `fresh_visited`, the visited set (and the
/// discarded queue, when kept) start empty and the entries are marked
/// visited; otherwise they continue from the previous call.
pub(crate) fn search_layer<S: GraphStore>(
    store: &mut S,
    state: &mut SearchState<S::Id, S::Meta>,
    q: &LayerQuery<'_, S::Value>,
    entries: &[u32],
    fresh_visited: bool,
) -> Vec<u32> {
    let mut queues = Queues {
        c: PairingHeap::new(HeapOrder::Nearest),
        w: PairingHeap::new(HeapOrder::Furthest),
        wlen: 0,
    };

    if fresh_visited {
        state.visited.clear();
        if q.layer == 0 {
            // Layer 0 visits about ef × m ids: size the set once instead of rehashing
            // while the walk grows it.
            state.visited.reserve(q.ef.saturating_mul(VISITED_PER_EF));
        }
        if q.discard {
            state.discarded = Some(PairingHeap::new(HeapOrder::Nearest));
        }
    }

    for &entry in entries {
        let (id, distance) = {
            let candidate = state.get(entry);
            (candidate.id, candidate.distance)
        };
        if fresh_visited {
            if state.visited.insert(id) {
                state.stats.visited += 1;
            }
            if q.layer == 0 {
                state.tuples += 1;
            }
        }
        queues.c.push(entry, distance);
        queues.w.push(entry, distance);
        if state.counts(q.count_live_only, entry) {
            queues.wlen += 1;
        }
    }

    let beam = q.beam.max(1);
    let mut round = std::mem::take(&mut state.round);
    let mut neighbor_ids = std::mem::take(&mut state.neighbor_ids);
    let mut stopped = false;
    while !stopped {
        // Take up to `beam` candidates; the first one farther than W's furthest element ends
        // the search (W is full then, so its furthest element can only come closer).
        round.clear();
        while round.len() < beam {
            let Some((current, current_distance)) = queues.c.pop() else {
                break;
            };
            let (_, furthest) = queues.w.peek().expect("W holds at least the entries");
            if current_distance > furthest {
                stopped = true;
                break;
            }
            round.push(current);
        }
        if round.is_empty() {
            break;
        }
        state.stats.hops += round.len() as u64;

        // Gather the whole batch of unvisited neighbors first, candidate by candidate in
        // the order they were taken, each list in stored order ...
        neighbor_ids.clear();
        for &current in &round {
            store.neighbors(&state.arena[current as usize], q.layer, &mut neighbor_ids);
        }
        if !state.reserve_batch(neighbor_ids.len(), &mut queues) {
            break;
        }
        state.ids.clear();
        for &id in &neighbor_ids {
            if state.visited.insert(id) {
                state.ids.push(id);
            }
        }
        let batch = state.ids.len() as u64;
        if q.layer == 0 {
            state.tuples += batch;
        }
        state.stats.visited += batch;

        // While this batch is read, the store may start on the neighbors of the candidates
        // most likely to be expanded after it.
        let width = store.lookahead_width();
        if width > 0 && !queues.c.is_empty() {
            lookahead(store, state, &queues.c, q.layer, width);
        }

        // ... then load it in one call.
        if !state.ids.is_empty() {
            let mut loaded = std::mem::take(&mut state.loaded);
            loaded.clear();
            store.load(q.query, &state.ids, &mut loaded);
            debug_assert_eq!(loaded.len(), state.ids.len());
            state.stats.distances += batch;
            state.stats.load_batches += 1;
            for element in loaded.drain(..) {
                consider(state, q, element, &mut queues);
            }
            state.loaded = loaded;
        }
    }
    state.round = round;
    state.neighbor_ids = neighbor_ids;

    std::iter::from_fn(|| queues.w.pop().map(|(index, _)| index)).collect()
}

/// Shows the store the `width` nearest of C's root (the next expansion, unless
/// the batch being loaded beats it) and its children (the set holding the one
/// after), nearest first.
fn lookahead<S: GraphStore>(
    store: &mut S,
    state: &mut SearchState<S::Id, S::Meta>,
    c: &PairingHeap,
    layer: u8,
    width: usize,
) {
    let mut upcoming = std::mem::take(&mut state.upcoming);
    upcoming.clear();
    upcoming.extend(c.upcoming(usize::MAX));
    let arena = &state.arena;
    let distance = |i: &u32| arena[*i as usize].distance;
    if upcoming.len() > 1 {
        upcoming[1..].sort_by(|a, b| distance(a).total_cmp(&distance(b)));
    }
    upcoming.truncate(width);
    let candidates: Vec<&Candidate<S::Id, S::Meta>> =
        upcoming.iter().map(|&i| &arena[i as usize]).collect();
    let visited = &state.visited;
    store.lookahead(layer, &candidates, &|id| visited.contains(id));
    state.upcoming = upcoming;
}

/// Applies pgvector's keep / drop / discard rule to one loaded neighbor.
fn consider<Id, Meta>(
    state: &mut SearchState<Id, Meta>,
    q: &LayerQuery<'_, impl Sized>,
    element: Candidate<Id, Meta>,
    queues: &mut Queues,
) where
    Id: Copy + Eq + std::hash::Hash,
    Meta: Clone,
{
    let (_, furthest) = queues.w.peek().expect("W is never empty here");
    let always_add = queues.wlen < q.ef;
    if !(element.distance < furthest || always_add) {
        if q.discard {
            let index = state.push(element);
            state.discard(index);
        }
        return;
    }
    // Tolerate neighbor lists pointing at elements without this layer.
    if element.level < q.layer {
        return;
    }
    let distance = element.distance;
    let live = element.live;
    let index = state.push(element);
    queues.c.push(index, distance);
    queues.w.push(index, distance);
    if !q.count_live_only || live {
        queues.wlen += 1;
        if queues.wlen > q.ef {
            if let Some((dropped, _)) = queues.w.pop() {
                if q.discard {
                    state.discard(dropped);
                }
            }
        }
    }
}

/// Loads the entry point as a candidate for `query` and returns its arena
/// index. The level used afterwards is the one read from the element.
pub(crate) fn entry_candidate<S: GraphStore>(
    store: &mut S,
    state: &mut SearchState<S::Id, S::Meta>,
    query: &S::Value,
    entry: EntryPoint<S::Id>,
) -> u32 {
    let mut out = Vec::with_capacity(1);
    store.load(query, &[entry.id], &mut out);
    state.stats.distances += 1;
    state.stats.load_batches += 1;
    let candidate = out.pop().expect("store returned no entry candidate");
    state.push(candidate)
}

/// Queue size of a scan's search on each layer above 0 for a layer-0 queue of `ef_search`: a
/// quarter of it, rounded up (10 at pgvector's default 40). On 1M clustered rows this took
/// recall@10 at `ef_search` 40 from 0.918 to 0.977–0.989 for about a quarter more distances;
/// raising `ef_search` to 80 instead gave 0.947 for 40% more.
pub fn descent_ef(ef_search: usize) -> usize {
    ef_search.div_ceil(4).max(1)
}

/// Descent from layer `from` down to layer `to + 1` with a queue of `ef` on each layer (1:
/// greedy, as pgvector) expanding up to `beam` candidates a round, each layer with a fresh
/// visited set. `width` is `(ef, beam)`. Returns the entry list for layer `to` (arena indices,
/// furthest first).
pub(crate) fn descend<S: GraphStore>(
    store: &mut S,
    state: &mut SearchState<S::Id, S::Meta>,
    query: &S::Value,
    mut entries: Vec<u32>,
    layers: (u8, u8),
    width: (usize, usize),
    count_live_only: bool,
) -> Vec<u32> {
    let (from, to) = layers;
    let (ef, beam) = width;
    let mut layer = from;
    while layer > to {
        let q = LayerQuery {
            query,
            ef: ef.max(1),
            layer,
            count_live_only,
            discard: false,
            beam: beam.max(1),
        };
        entries = search_layer(store, state, &q, &entries, true);
        layer -= 1;
    }
    entries
}

/// One-shot k-NN search as a non-iterative index scan would run it: descent with
/// [`descent_ef`], then layer 0 with `ef_search`. Returns the live results nearest
/// first (the order a scan returns them) and the work counters.
pub fn search<S: GraphStore>(
    store: &mut S,
    query: &S::Value,
    ef_search: usize,
) -> (Candidates<S::Id, S::Meta>, SearchStats) {
    search_with_beam(store, query, ef_search, 1)
}

/// [`search`] whose layer-0 search expands up to `beam` candidates per round and loads all
/// their unvisited neighbors as one batch (`hnsw.beam_width`); 1 is [`search`].
pub fn search_with_beam<S: GraphStore>(
    store: &mut S,
    query: &S::Value,
    ef_search: usize,
    beam: usize,
) -> (Candidates<S::Id, S::Meta>, SearchStats) {
    search_with(store, query, ef_search, beam, descent_ef(ef_search))
}

/// [`search_with_beam`] with a queue of `descent` on the layers above 0 (1: pgvector's greedy
/// descent).
pub fn search_with<S: GraphStore>(
    store: &mut S,
    query: &S::Value,
    ef_search: usize,
    beam: usize,
    descent: usize,
) -> (Candidates<S::Id, S::Meta>, SearchStats) {
    let mut state = SearchState::new();
    let Some(entry) = store.entry_point() else {
        return (Vec::new(), state.stats);
    };
    let start = entry_candidate(store, &mut state, query, entry);
    let top = state.get(start).level;
    let entries = descend(
        store,
        &mut state,
        query,
        vec![start],
        (top, 0),
        (descent, beam),
        false,
    );
    let q = LayerQuery {
        query,
        ef: ef_search,
        layer: 0,
        count_live_only: false,
        discard: false,
        beam,
    };
    let w = search_layer(store, &mut state, &q, &entries, true);
    let results = w
        .iter()
        .rev()
        .map(|&i| state.get(i))
        .filter(|c| c.live)
        .cloned()
        .collect();
    (results, state.stats)
}
