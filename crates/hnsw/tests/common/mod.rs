//! Shared test helpers: deterministic clustered data and brute force k-NN.
#![allow(dead_code)]

use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;

/// Standard normal sample (Box–Muller).
pub fn gaussian(rng: &mut SplitMix64) -> f32 {
    let u1 = rng.next_f64().max(1e-300);
    let u2 = rng.next_f64();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// Clustered data set: `clusters` Gaussian centers (σ = 1) and points
/// around them (σ = `spread`).
pub struct Clustered {
    centers: Vec<Vec<f32>>,
    spread: f32,
    rng: SplitMix64,
}

impl Clustered {
    pub fn new(seed: u64, clusters: usize, dims: usize, spread: f32) -> Self {
        let mut rng = SplitMix64::new(seed);
        let centers = (0..clusters)
            .map(|_| (0..dims).map(|_| gaussian(&mut rng)).collect())
            .collect();
        Clustered {
            centers,
            spread,
            rng,
        }
    }

    pub fn point(&mut self) -> Vec<f32> {
        let c = (self.rng.next_u64() % self.centers.len() as u64) as usize;
        let center = self.centers[c].clone();
        center
            .iter()
            .map(|x| x + self.spread * gaussian(&mut self.rng))
            .collect()
    }

    pub fn points(&mut self, n: usize) -> Vec<Vec<f32>> {
        (0..n).map(|_| self.point()).collect()
    }
}

/// Ids of the `k` nearest vectors among `ids` (ties by id).
pub fn brute_force(vectors: &[Vec<f32>], ids: &[u32], query: &[f32], k: usize) -> Vec<u32> {
    let mut scored: Vec<(f64, u32)> = ids
        .iter()
        .map(|&id| (l2_squared(query, &vectors[id as usize]), id))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, id)| id).collect()
}

/// Fraction of `truth` found in `found`.
pub fn recall(found: &[u32], truth: &[u32]) -> f64 {
    let hits = truth.iter().filter(|t| found.contains(t)).count();
    hits as f64 / truth.len() as f64
}

use vector_hnsw::insert::back_link_slot;
use vector_hnsw::storage::{
    Candidate, Duplicate, ElementHeader, EntryPoint, EntryUpdate, GraphLock, GraphStore,
    GraphWrite, NewElement, Slot,
};
use vector_hnsw::{InMemoryGraph, LinkBack, VacuumStore};

/// Behaviour switches of [`Wrapped`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Tweaks {
    /// Load every id of a batch with its own `load` call.
    pub split_loads: bool,
    /// Ignore look-ahead hints (and do not record them).
    pub ignore_lookahead: bool,
    /// Drop neighbor rewrites (a broken store: repairs never land).
    pub drop_rewrites: bool,
    /// Choose a back-link's slot before checking whether the list already names the element,
    /// as pgvector does (the default checks first and skips the list's distances).
    pub eager_back_links: bool,
}

/// An [`InMemoryGraph`] behind a recording / misbehaving facade.
pub struct Wrapped {
    pub inner: InMemoryGraph,
    pub tweaks: Tweaks,
    /// Every id loaded with a query, in order.
    pub loaded: Vec<u32>,
    /// Size of every `load` call.
    pub batches: Vec<usize>,
    /// Every look-ahead hint (first id shown).
    pub hints: Vec<u32>,
    /// Lock / unlock calls.
    pub locks: Vec<(bool, GraphLock)>,
}

impl Wrapped {
    pub fn new(inner: InMemoryGraph, tweaks: Tweaks) -> Self {
        Wrapped {
            inner,
            tweaks,
            loaded: Vec::new(),
            batches: Vec::new(),
            hints: Vec::new(),
            locks: Vec::new(),
        }
    }
}

impl GraphStore for Wrapped {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.inner.entry_point()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        self.inner.neighbors(element, layer, out)
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        self.loaded.extend_from_slice(ids);
        if self.tweaks.split_loads {
            for id in ids {
                self.batches.push(1);
                self.inner.load(query, std::slice::from_ref(id), out);
            }
        } else {
            self.batches.push(ids.len());
            self.inner.load(query, ids, out);
        }
    }

    fn lookahead_width(&self) -> usize {
        if self.tweaks.ignore_lookahead {
            0
        } else {
            4
        }
    }

    fn lookahead(
        &mut self,
        _layer: u8,
        upcoming: &[&Candidate<u32, ()>],
        visited: &dyn Fn(&u32) -> bool,
    ) {
        assert!(!self.tweaks.ignore_lookahead, "width 0 means no call");
        assert!(upcoming.iter().all(|c| visited(&c.id)));
        if let Some(first) = upcoming.first() {
            self.hints.push(first.id);
        }
    }

    fn lock(&mut self, lock: GraphLock) {
        self.locks.push((true, lock));
    }

    fn unlock(&mut self, lock: GraphLock) {
        self.locks.push((false, lock));
    }
}

impl LinkBack for Wrapped {
    fn link_back(
        &mut self,
        neighbor: &Candidate<u32, ()>,
        layer: u8,
        new: &Candidate<u32, ()>,
        lm: usize,
        check_existing: bool,
    ) {
        let check_first = check_existing && !self.tweaks.eager_back_links;
        if let Some(slot) = back_link_slot(self, neighbor, new.clone(), layer, lm, check_first) {
            self.set_neighbor(neighbor, layer, new.id, slot, check_existing);
        }
    }
}

impl GraphWrite for Wrapped {
    type HeapTid = u64;

    fn value(&mut self, element: &Candidate<u32, ()>) -> Vec<f32> {
        self.inner.value(element)
    }

    type ValueRef = u32;

    fn value_ref(&mut self, element: &Candidate<u32, ()>) -> u32 {
        self.inner.value_ref(element)
    }

    fn ref_distance(&self, a: u32, b: u32) -> f64 {
        self.inner.ref_distance(a, b)
    }

    fn add_element(
        &mut self,
        element: &NewElement<Vec<f32>, u64>,
        neighbors: &[Vec<Candidate<u32, ()>>],
    ) -> Candidate<u32, ()> {
        self.inner.add_element(element, neighbors)
    }

    fn set_neighbor(
        &mut self,
        element: &Candidate<u32, ()>,
        layer: u8,
        new: u32,
        slot: Slot,
        check_existing: bool,
    ) {
        if !self.tweaks.drop_rewrites {
            self.inner
                .set_neighbor(element, layer, new, slot, check_existing)
        }
    }

    fn write_neighbors(&mut self, element: &Candidate<u32, ()>, neighbors: &[Vec<u32>]) {
        if !self.tweaks.drop_rewrites {
            self.inner.write_neighbors(element, neighbors)
        }
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<u32>>, update: EntryUpdate) {
        self.inner.set_entry_point(entry, update)
    }

    fn try_add_duplicate(
        &mut self,
        value: &Vec<f32>,
        heap_tid: u64,
        existing: &Candidate<u32, ()>,
    ) -> Duplicate {
        self.inner.try_add_duplicate(value, heap_tid, existing)
    }
}

impl VacuumStore for Wrapped {
    type Cursor = usize;

    fn prune_heap_tids(&mut self, cursor: &mut usize, out: &mut Vec<ElementHeader<u32>>) -> bool {
        self.inner.prune_heap_tids(cursor, out)
    }

    fn scan_elements(&mut self, cursor: &mut usize, out: &mut Vec<Candidate<u32, ()>>) -> bool {
        self.inner.scan_elements(cursor, out)
    }

    fn load_element(&mut self, id: u32) -> Candidate<u32, ()> {
        self.inner.load_element(id)
    }

    fn neighbor_slots(&mut self, element: &Candidate<u32, ()>, out: &mut Vec<Option<u32>>) {
        self.inner.neighbor_slots(element, out)
    }

    fn mark_deleted(&mut self, ids: &[u32]) {
        self.inner.mark_deleted(ids)
    }
}
