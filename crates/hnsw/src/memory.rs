//! In-memory graph store used by the tests (and handy for tools).
//!
//! Elements are `f32` vectors with a pluggable distance function. Each
//! element has a level, up to [`MAX_HEAP_TIDS`] heap TIDs (plain `u64`s),
//! and per layer a neighbor list of capacity `2m` (layer 0) or `m`, stored
//! as a prefix of valid ids exactly like pgvector's slots up to the first
//! invalid one. Deleted elements keep their id slot and are reused by later
//! inserts, as pgvector reuses the space of deleted element tuples.
//!
//! Heap TIDs are declared dead with [`InMemoryGraph::kill_heap_tid`] (or
//! [`InMemoryGraph::kill_element`]); the next vacuum removes them. I/O-like
//! counters record how the algorithms used the store.

use std::collections::HashSet;

use crate::id_set::IdSet;
use crate::insert::{insert, GraphParams, InsertOutcome, LinkBack};
use crate::level::draw_level;
use crate::repair::VacuumStore;
use crate::search::SearchStats;
use crate::storage::{
    Candidate, Duplicate, ElementHeader, EntryPoint, EntryUpdate, GraphStore, GraphWrite,
    NewElement, Slot,
};

/// Heap TIDs an element can hold (pgvector: `HNSW_HEAPTIDS`).
pub const MAX_HEAP_TIDS: usize = 10;

/// Distance between two vectors.
pub type DistanceFn = fn(&[f32], &[f32]) -> f64;

/// Elements visited per vacuum batch (stands in for one page).
const BATCH: usize = 32;

/// Squared Euclidean distance (eight-lane accumulation).
pub fn l2_squared(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            let d = x[i] - y[i];
            lanes[i] += d * d;
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        let d = x - y;
        sum += d * d;
    }
    f64::from(sum)
}

/// Counters of store calls made by the algorithms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounters {
    /// Calls to `load`.
    pub load_calls: u64,
    /// Elements loaded with a distance.
    pub loaded: u64,
    /// Neighbor lists read.
    pub neighbor_reads: u64,
    /// Calls to `lookahead`.
    pub lookahead_calls: u64,
    /// Candidates shown to `lookahead`.
    pub lookahead_items: u64,
}

#[derive(Clone, Debug)]
struct Node {
    level: u8,
    heap_tids: Vec<u64>,
    deleted: bool,
    layers: Vec<Vec<u32>>,
}

/// A graph held in memory. Ids are `u32` positions.
#[derive(Clone, Debug)]
pub struct InMemoryGraph {
    m: usize,
    distance: DistanceFn,
    vectors: Vec<Vec<f32>>,
    nodes: Vec<Node>,
    entry: Option<EntryPoint<u32>>,
    dead: IdSet<u64>,
    /// Store call counters.
    pub counters: StoreCounters,
}

impl InMemoryGraph {
    /// Empty graph for `m` with the given distance.
    pub fn new(m: usize, distance: DistanceFn) -> Self {
        InMemoryGraph {
            m,
            distance,
            vectors: Vec::new(),
            nodes: Vec::new(),
            entry: None,
            dead: IdSet::default(),
            counters: StoreCounters::default(),
        }
    }

    /// Builds a graph by inserting `vectors` in order (heap TID = position),
    /// drawing levels from `uniform`.
    pub fn build(
        vectors: &[Vec<f32>],
        params: &GraphParams,
        distance: DistanceFn,
        uniform: &mut impl FnMut() -> f64,
    ) -> (Self, SearchStats) {
        let mut graph = InMemoryGraph::new(params.m, distance);
        let mut stats = SearchStats::default();
        for (i, v) in vectors.iter().enumerate() {
            let (_, s) = graph.insert_vector(v.clone(), i as u64, params, uniform);
            stats.add(&s);
        }
        (graph, stats)
    }

    /// A graph from its parts, as [`InMemoryGraph::layers`] and the accessors give them back
    /// (for tools that keep a built graph on disk): element `i` has `vectors[i]`, the level
    /// and the neighbor lists of `nodes[i]` (layer 0 first), and heap TID `i`.
    pub fn from_parts(
        m: usize,
        distance: DistanceFn,
        vectors: Vec<Vec<f32>>,
        nodes: Vec<(u8, Vec<Vec<u32>>)>,
        entry: Option<EntryPoint<u32>>,
    ) -> Self {
        assert_eq!(vectors.len(), nodes.len(), "one vector per element");
        let nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(i, (level, layers))| Node {
                level,
                heap_tids: vec![i as u64],
                deleted: false,
                layers,
            })
            .collect();
        InMemoryGraph {
            m,
            distance,
            vectors,
            nodes,
            entry,
            dead: IdSet::default(),
            counters: StoreCounters::default(),
        }
    }

    /// The neighbor lists of an element, layer 0 first.
    pub fn layers(&self, id: u32) -> &[Vec<u32>] {
        &self.nodes[id as usize].layers
    }

    /// Inserts one vector with a freshly drawn level.
    pub fn insert_vector(
        &mut self,
        vector: Vec<f32>,
        heap_tid: u64,
        params: &GraphParams,
        uniform: &mut impl FnMut() -> f64,
    ) -> (InsertOutcome<u32>, SearchStats) {
        let level = draw_level(uniform, params.m);
        let element = NewElement {
            value: vector,
            heap_tid,
            level,
        };
        insert(self, element, params)
    }

    /// `m` of the graph.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Number of id slots (including deleted elements).
    pub fn slots(&self) -> usize {
        self.nodes.len()
    }

    /// Current entry point.
    pub fn entry(&self) -> Option<EntryPoint<u32>> {
        self.entry
    }

    /// The vector of an element.
    pub fn vector(&self, id: u32) -> &[f32] {
        &self.vectors[id as usize]
    }

    /// Level of an element.
    pub fn level(&self, id: u32) -> u8 {
        self.nodes[id as usize].level
    }

    /// Whether the element was marked deleted by vacuum.
    pub fn is_deleted(&self, id: u32) -> bool {
        self.nodes[id as usize].deleted
    }

    /// Whether the element is not deleted and still has heap TIDs.
    pub fn is_live(&self, id: u32) -> bool {
        let node = &self.nodes[id as usize];
        !node.deleted && !node.heap_tids.is_empty()
    }

    /// Ids of all live elements.
    pub fn live_ids(&self) -> Vec<u32> {
        (0..self.nodes.len() as u32)
            .filter(|&id| self.is_live(id))
            .collect()
    }

    /// Heap TIDs of an element.
    pub fn heap_tids(&self, id: u32) -> &[u64] {
        &self.nodes[id as usize].heap_tids
    }

    /// The layer-0 neighbors of element `id` as a search reads them (counted, nothing for a
    /// deleted element), for stores built on this one.
    pub fn read_neighbors_of(&mut self, id: u32, out: &mut Vec<u32>) {
        self.counters.neighbor_reads += 1;
        let node = &self.nodes[id as usize];
        if !node.deleted {
            if let Some(list) = node.layers.first() {
                out.extend_from_slice(list);
            }
        }
    }

    /// Neighbor ids of an element on a layer (empty above its level).
    pub fn neighbor_ids(&self, id: u32, layer: u8) -> &[u32] {
        self.nodes[id as usize]
            .layers
            .get(layer as usize)
            .map_or(&[], |l| l.as_slice())
    }

    /// Declares a heap TID dead for the next vacuum.
    pub fn kill_heap_tid(&mut self, heap_tid: u64) {
        self.dead.insert(heap_tid);
    }

    /// Declares every heap TID of an element dead.
    pub fn kill_element(&mut self, id: u32) {
        let tids = self.nodes[id as usize].heap_tids.clone();
        self.dead.extend(tids);
    }

    /// Elements reachable from the entry point by following layer-`layer`
    /// links (only elements on that layer).
    pub fn reachable(&self, layer: u8) -> HashSet<u32> {
        let mut seen = HashSet::new();
        let Some(entry) = self.entry else {
            return seen;
        };
        let mut stack = vec![entry.id];
        seen.insert(entry.id);
        while let Some(id) = stack.pop() {
            for &n in self.neighbor_ids(id, layer) {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen
    }

    fn candidate(&self, id: u32, distance: f64) -> Candidate<u32, ()> {
        let node = &self.nodes[id as usize];
        assert!(!node.deleted, "cannot load deleted element {id}");
        Candidate {
            id,
            distance,
            level: node.level,
            live: !node.heap_tids.is_empty(),
            meta: (),
        }
    }

    fn capacity(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    fn layers_for(&self, level: u8, neighbors: &[Vec<u32>]) -> Vec<Vec<u32>> {
        (0..=level as usize)
            .map(|layer| {
                let mut list = neighbors.get(layer).cloned().unwrap_or_default();
                list.truncate(self.capacity(layer));
                list
            })
            .collect()
    }
}

impl GraphStore for InMemoryGraph {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.entry
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        self.counters.neighbor_reads += 1;
        let node = &self.nodes[element.id as usize];
        if node.deleted {
            return;
        }
        if let Some(list) = node.layers.get(layer as usize) {
            out.extend_from_slice(list);
        }
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        self.counters.load_calls += 1;
        self.counters.loaded += ids.len() as u64;
        for &id in ids {
            let distance = (self.distance)(query, &self.vectors[id as usize]);
            out.push(self.candidate(id, distance));
        }
    }

    fn lookahead_width(&self) -> usize {
        4
    }

    fn lookahead(
        &mut self,
        _layer: u8,
        upcoming: &[&Candidate<u32, ()>],
        _visited: &dyn Fn(&u32) -> bool,
    ) {
        self.counters.lookahead_calls += 1;
        self.counters.lookahead_items += upcoming.len() as u64;
    }
}

impl LinkBack for InMemoryGraph {}

impl GraphWrite for InMemoryGraph {
    type HeapTid = u64;

    fn value(&mut self, element: &Candidate<u32, ()>) -> Vec<f32> {
        self.vectors[element.id as usize].clone()
    }

    type ValueRef = u32;

    fn value_ref(&mut self, element: &Candidate<u32, ()>) -> u32 {
        element.id
    }

    fn ref_distance(&self, a: u32, b: u32) -> f64 {
        (self.distance)(&self.vectors[a as usize], &self.vectors[b as usize])
    }

    fn add_element(
        &mut self,
        element: &NewElement<Vec<f32>, u64>,
        neighbors: &[Vec<Candidate<u32, ()>>],
    ) -> Candidate<u32, ()> {
        let node = Node {
            level: element.level,
            heap_tids: vec![element.heap_tid],
            deleted: false,
            layers: self.layers_for(element.level, &crate::insert::layer_ids(neighbors)),
        };
        let id = match self.nodes.iter().position(|n| n.deleted) {
            Some(free) => {
                self.nodes[free] = node;
                self.vectors[free] = element.value.clone();
                free as u32
            }
            None => {
                self.nodes.push(node);
                self.vectors.push(element.value.clone());
                (self.nodes.len() - 1) as u32
            }
        };
        self.candidate(id, 0.0)
    }

    fn set_neighbor(
        &mut self,
        element: &Candidate<u32, ()>,
        layer: u8,
        new: u32,
        slot: Slot,
        check_existing: bool,
    ) {
        let capacity = self.capacity(layer as usize);
        let Some(list) = self.nodes[element.id as usize]
            .layers
            .get_mut(layer as usize)
        else {
            return;
        };
        if check_existing && list.contains(&new) {
            return;
        }
        match slot {
            Slot::FirstFree if list.len() < capacity => list.push(new),
            Slot::At(i) if i < list.len() => list[i] = new,
            _ => {}
        }
    }

    fn write_neighbors(&mut self, element: &Candidate<u32, ()>, neighbors: &[Vec<u32>]) {
        let level = self.nodes[element.id as usize].level;
        let layers = self.layers_for(level, neighbors);
        self.nodes[element.id as usize].layers = layers;
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<u32>>, update: EntryUpdate) {
        match entry {
            None => self.entry = None,
            Some(point) => {
                let higher = self.entry.is_none_or(|cur| point.level > cur.level);
                if update == EntryUpdate::Always || higher {
                    self.entry = Some(point);
                }
            }
        }
    }

    fn try_add_duplicate(
        &mut self,
        value: &Vec<f32>,
        heap_tid: u64,
        existing: &Candidate<u32, ()>,
    ) -> Duplicate {
        let same = self.vectors[existing.id as usize]
            .iter()
            .zip(value)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        if !same || self.vectors[existing.id as usize].len() != value.len() {
            return Duplicate::NotEqual;
        }
        let node = &mut self.nodes[existing.id as usize];
        if node.heap_tids.is_empty() || node.heap_tids.len() >= MAX_HEAP_TIDS {
            return Duplicate::NoRoom;
        }
        node.heap_tids.push(heap_tid);
        Duplicate::Added
    }
}

impl VacuumStore for InMemoryGraph {
    type Cursor = usize;

    fn prune_heap_tids(&mut self, cursor: &mut usize, out: &mut Vec<ElementHeader<u32>>) -> bool {
        let end = (*cursor + BATCH).min(self.nodes.len());
        for id in *cursor..end {
            let node = &mut self.nodes[id];
            if node.deleted {
                continue;
            }
            node.heap_tids.retain(|t| !self.dead.contains(t));
            out.push(ElementHeader {
                id: id as u32,
                level: node.level,
                live: !node.heap_tids.is_empty(),
            });
        }
        *cursor = end;
        end < self.nodes.len()
    }

    fn scan_elements(&mut self, cursor: &mut usize, out: &mut Vec<Candidate<u32, ()>>) -> bool {
        let end = (*cursor + BATCH).min(self.nodes.len());
        for id in *cursor..end {
            if !self.nodes[id].deleted {
                out.push(self.candidate(id as u32, 0.0));
            }
        }
        *cursor = end;
        end < self.nodes.len()
    }

    fn load_element(&mut self, id: u32) -> Candidate<u32, ()> {
        self.candidate(id, 0.0)
    }

    fn neighbor_slots(&mut self, element: &Candidate<u32, ()>, out: &mut Vec<Option<u32>>) {
        let node = &self.nodes[element.id as usize];
        for layer in (0..=node.level as usize).rev() {
            let list = node.layers.get(layer).map_or(&[][..], |l| l.as_slice());
            let capacity = self.capacity(layer);
            out.extend((0..capacity).map(|i| list.get(i).copied()));
        }
    }

    fn mark_deleted(&mut self, ids: &[u32]) {
        for &id in ids {
            let node = &mut self.nodes[id as usize];
            node.deleted = true;
            node.heap_tids.clear();
            node.layers.iter_mut().for_each(Vec::clear);
            self.vectors[id as usize].iter_mut().for_each(|x| *x = 0.0);
        }
    }
}
