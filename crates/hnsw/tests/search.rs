//! Search behaviour: batch loading and look-ahead hooks change nothing,
//! results match a naive per-neighbor implementation of pgvector's loop (with the
//! descent's queue of `descent_ef`), stats are counted, and index scans (incl. iterative) behave.

mod common;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use common::{brute_force, recall, Clustered, Tweaks, Wrapped};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;
use vector_hnsw::search::descent_ef;
use vector_hnsw::storage::GraphLock;
use vector_hnsw::{
    insert, search, GraphParams, InMemoryGraph, InsertOutcome, IterativeScan, Scan, ScanParams,
};

const N: usize = 1_000;
const DIMS: usize = 16;

fn params() -> GraphParams {
    GraphParams {
        m: 8,
        ef_construction: 32,
    }
}

fn dataset() -> (Vec<Vec<f32>>, Clustered) {
    let mut data = Clustered::new(7, 8, DIMS, 1.0);
    (data.points(N), data)
}

fn build(vectors: &[Vec<f32>]) -> InMemoryGraph {
    let mut rng = SplitMix64::new(99);
    InMemoryGraph::build(vectors, &params(), l2_squared, &mut || rng.next_f64()).0
}

/// Total order on (distance, id) for the reference heaps.
#[derive(Clone, Copy, PartialEq)]
struct Key(f64, u32);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Naive pgvector layer search: one element loaded at a time, compared with
/// the current furthest result right away. Returns W furthest first.
fn reference_layer(
    graph: &InMemoryGraph,
    query: &[f32],
    entries: Vec<Key>,
    ef_layer: (usize, u8),
    loaded: &mut Vec<u32>,
) -> Vec<Key> {
    let (ef, layer) = ef_layer;
    let mut visited: HashSet<u32> = entries.iter().map(|k| k.1).collect();
    let mut c: BinaryHeap<Reverse<Key>> = entries.iter().map(|&k| Reverse(k)).collect();
    let mut w: BinaryHeap<Key> = entries.into_iter().collect();
    while let Some(Reverse(current)) = c.pop() {
        if current.0 > w.peek().unwrap().0 {
            break;
        }
        for &n in graph.neighbor_ids(current.1, layer) {
            if !visited.insert(n) {
                continue;
            }
            loaded.push(n);
            let d = l2_squared(query, graph.vector(n));
            if d < w.peek().unwrap().0 || w.len() < ef {
                if graph.level(n) < layer {
                    continue;
                }
                c.push(Reverse(Key(d, n)));
                w.push(Key(d, n));
                if w.len() > ef {
                    w.pop();
                }
            }
        }
    }
    let mut out = w.into_sorted_vec();
    out.reverse();
    out
}

fn reference_search(graph: &InMemoryGraph, query: &[f32], ef: usize) -> (Vec<u32>, Vec<u32>) {
    let entry = graph.entry().unwrap();
    let mut loaded = vec![entry.id];
    let mut ep = vec![Key(l2_squared(query, graph.vector(entry.id)), entry.id)];
    for layer in (1..=graph.level(entry.id)).rev() {
        ep = reference_layer(graph, query, ep, (descent_ef(ef), layer), &mut loaded);
    }
    let w = reference_layer(graph, query, ep, (ef, 0), &mut loaded);
    (w.iter().rev().map(|k| k.1).collect(), loaded)
}

#[test]
fn batching_and_lookahead_do_not_change_the_search() {
    let (vectors, mut data) = dataset();
    let graph = build(&vectors);
    let variants = [
        Tweaks::default(),
        Tweaks {
            split_loads: true,
            ..Tweaks::default()
        },
        Tweaks {
            ignore_lookahead: true,
            ..Tweaks::default()
        },
    ];
    for _ in 0..30 {
        let q = data.point();
        let (expected, expected_loaded) = reference_search(&graph, &q, 40);
        let mut plain = graph.clone();
        let (found, _) = search(&mut plain, &q, 40);
        assert_eq!(found.iter().map(|c| c.id).collect::<Vec<_>>(), expected);
        for tweaks in variants {
            let mut store = Wrapped::new(graph.clone(), tweaks);
            let (found, stats) = search(&mut store, &q, 40);
            let ids: Vec<u32> = found.iter().map(|c| c.id).collect();
            assert_eq!(ids, expected, "{tweaks:?}");
            assert_eq!(store.loaded, expected_loaded, "{tweaks:?}");
            assert_eq!(stats.distances, store.loaded.len() as u64);
            if tweaks.split_loads {
                assert!(store.batches.iter().all(|&b| b == 1));
            } else {
                assert_eq!(stats.load_batches as usize, store.batches.len());
            }
            if tweaks.ignore_lookahead {
                assert!(store.hints.is_empty());
            } else {
                assert!(!store.hints.is_empty());
            }
        }
    }
}

#[test]
fn stats_are_counted() {
    let (vectors, mut data) = dataset();
    let mut graph = build(&vectors);
    graph.counters = Default::default();
    let q = data.point();
    let (found, stats) = search(&mut graph, &q, 40);
    assert_eq!(found.len(), 40);
    assert!(stats.hops > 0);
    assert_eq!(stats.hops, graph.counters.neighbor_reads);
    assert_eq!(stats.distances, graph.counters.loaded);
    assert_eq!(stats.load_batches, graph.counters.load_calls);
    // Batches hold several elements each: fewer calls than elements.
    assert!(stats.load_batches * 2 < stats.distances, "{stats:?}");
    // Every distance but the entry point's comes from a newly visited id.
    assert!(stats.visited >= stats.distances - 1);
    assert!(graph.counters.lookahead_calls > 0);
    // Larger ef does more work.
    let (_, more) = search(&mut graph, &q, 200);
    assert!(more.distances > stats.distances && more.hops > stats.hops);
}

/// The look-ahead hint, shown before a batch is loaded, names the candidate expanded after
/// that batch unless an element of the batch turns out nearer.
#[test]
fn lookahead_names_the_next_expansion_or_the_batch_beats_it() {
    let (vectors, mut data) = dataset();
    let graph = build(&vectors);
    let q = data.point();
    let mut logged = LoggedExpansions {
        inner: graph,
        events: Vec::new(),
    };
    let (found, _) = search(&mut logged, &q, 40);
    assert!(!found.is_empty());
    // Hint, then the batch's load, then the next expansion on the same layer (when the layer
    // search goes on).
    let (mut right, mut beaten) = (0, 0);
    for triple in logged.events.windows(3) {
        if let [Event::Hint(h, hl), Event::Load(batch), Event::Expand(e, el)] = triple {
            if hl == el {
                if h == e {
                    right += 1;
                } else {
                    assert!(
                        batch.contains(e),
                        "expanded {e}, hinted {h}, batch {batch:?}"
                    );
                    beaten += 1;
                }
            }
        }
    }
    assert!(right > 10 && beaten > 0, "{right} {beaten}");
}

#[derive(Debug)]
enum Event {
    Expand(u32, u8),
    Hint(u32, u8),
    Load(Vec<u32>),
}

struct LoggedExpansions {
    inner: InMemoryGraph,
    events: Vec<Event>,
}

impl vector_hnsw::GraphStore for LoggedExpansions {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<vector_hnsw::EntryPoint<u32>> {
        self.inner.entry_point()
    }

    fn neighbors(
        &mut self,
        element: &vector_hnsw::Candidate<u32, ()>,
        layer: u8,
        out: &mut Vec<u32>,
    ) {
        self.events.push(Event::Expand(element.id, layer));
        self.inner.neighbors(element, layer, out)
    }

    fn load(
        &mut self,
        query: &Vec<f32>,
        ids: &[u32],
        out: &mut Vec<vector_hnsw::Candidate<u32, ()>>,
    ) {
        self.events.push(Event::Load(ids.to_vec()));
        self.inner.load(query, ids, out)
    }

    fn lookahead_width(&self) -> usize {
        3
    }

    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&vector_hnsw::Candidate<u32, ()>],
        visited: &dyn Fn(&u32) -> bool,
    ) {
        assert!(upcoming.len() <= 3);
        // Nearest first after the first, and every candidate was visited.
        assert!(upcoming[1..]
            .windows(2)
            .all(|w| w[0].distance <= w[1].distance));
        assert!(upcoming.iter().all(|c| visited(&c.id)));
        if let Some(c) = upcoming.first() {
            self.events.push(Event::Hint(c.id, layer));
        }
    }
}

fn scan_all(graph: &mut InMemoryGraph, q: &[f32], params: ScanParams) -> (Vec<(u32, f64)>, u64) {
    let mut scan: Scan<InMemoryGraph> = Scan::new(q.to_vec(), params);
    let mut out = Vec::new();
    while let Some(c) = scan.next(graph) {
        out.push((c.id, c.distance));
    }
    (out, scan.tuples())
}

#[test]
fn scan_off_returns_one_search() {
    let (vectors, mut data) = dataset();
    let mut graph = build(&vectors);
    let q = data.point();
    let params = ScanParams {
        ef_search: 25,
        ..ScanParams::default()
    };
    let (scanned, _) = scan_all(&mut graph, &q, params);
    let (found, _) = search(&mut graph, &q, 25);
    assert_eq!(scanned.len(), 25);
    assert_eq!(
        scanned.iter().map(|x| x.0).collect::<Vec<_>>(),
        found.iter().map(|c| c.id).collect::<Vec<_>>()
    );
    for pair in scanned.windows(2) {
        assert!(pair[0].1 <= pair[1].1);
    }
}

#[test]
fn iterative_scans_go_past_ef_search() {
    let (vectors, mut data) = dataset();
    let mut graph = build(&vectors);
    let q = data.point();
    let ids: Vec<u32> = (0..N as u32).collect();
    for mode in [IterativeScan::Relaxed, IterativeScan::Strict] {
        let params = ScanParams {
            ef_search: 20,
            mode,
            max_scan_tuples: 1_000_000,
            max_memory: usize::MAX,
            beam_width: 1,
            descent_ef: vector_hnsw::search::descent_ef(20),
        };
        let (scanned, _) = scan_all(&mut graph, &q, params);
        let unique: HashSet<u32> = scanned.iter().map(|x| x.0).collect();
        assert_eq!(unique.len(), scanned.len(), "{mode:?}: duplicates");
        // The first batch is the plain search.
        let (first, _) = search(&mut graph, &q, 20);
        let head: Vec<u32> = scanned.iter().take(20).map(|x| x.0).collect();
        assert_eq!(head, first.iter().map(|c| c.id).collect::<Vec<_>>());
        match mode {
            IterativeScan::Relaxed => {
                // With no limits the whole (connected) graph comes out.
                assert_eq!(scanned.len(), N, "relaxed scan returned {}", scanned.len());
            }
            _ => {
                assert!(
                    scanned.len() > 100,
                    "strict scan returned {}",
                    scanned.len()
                );
                for pair in scanned.windows(2) {
                    assert!(pair[0].1 <= pair[1].1, "strict order broken");
                }
            }
        }
        // The first 100 results are close to the true first 100.
        let truth = brute_force(&vectors, &ids, &q, 100);
        let got: Vec<u32> = scanned.iter().take(100).map(|x| x.0).collect();
        assert!(recall(&got, &truth) > 0.9, "{mode:?}");
    }
}

#[test]
fn iterative_scan_respects_max_scan_tuples() {
    let (vectors, mut data) = dataset();
    let mut graph = build(&vectors);
    let q = data.point();
    let params = ScanParams {
        ef_search: 10,
        mode: IterativeScan::Relaxed,
        max_scan_tuples: 400,
        max_memory: usize::MAX,
        descent_ef: vector_hnsw::search::descent_ef(10),
        beam_width: 1,
    };
    let (limited, tuples) = scan_all(&mut graph, &q, params);
    assert!(tuples >= 400);
    assert!(tuples < N as u64, "limit ignored: {tuples}");
    assert!(limited.len() > 10 && limited.len() < N, "{}", limited.len());
    // A tiny memory budget stops resuming as well.
    let params = ScanParams {
        max_scan_tuples: u64::MAX,
        max_memory: 1,
        ..params
    };
    let (tiny, tuples_tiny) = scan_all(&mut graph, &q, params);
    assert!(tuples_tiny < 400, "{tuples_tiny}");
    // After the first search only the discarded elements are handed out:
    // everything that was seen, nothing more.
    assert_eq!(tiny.len() as u64, tuples_tiny);
}

#[test]
fn empty_graph_returns_nothing() {
    let mut graph = InMemoryGraph::new(8, l2_squared);
    let q = vec![0.0; 4];
    assert!(search(&mut graph, &q, 10).0.is_empty());
    let params = ScanParams {
        mode: IterativeScan::Relaxed,
        ..ScanParams::default()
    };
    assert!(scan_all(&mut graph, &q, params).0.is_empty());
}

#[test]
fn inserts_keep_the_highest_entry_point_and_take_locks() {
    let (vectors, _) = dataset();
    let mut store = Wrapped::new(InMemoryGraph::new(8, l2_squared), Tweaks::default());
    let mut rng = SplitMix64::new(5);
    for (i, v) in vectors.iter().take(300).enumerate() {
        let level = vector_hnsw::level::draw_level(&mut || rng.next_f64(), 8);
        let element = vector_hnsw::storage::NewElement {
            value: v.clone(),
            heap_tid: i as u64,
            level,
        };
        store.locks.clear();
        let entry_before = store.inner.entry();
        let (outcome, _) = insert(&mut store, element, &params());
        assert!(matches!(outcome, InsertOutcome::Added(_)));
        let raising = entry_before.is_none_or(|e| level > e.level);
        let expected = if raising {
            vec![
                (true, GraphLock::UpdateShare),
                (false, GraphLock::UpdateShare),
                (true, GraphLock::UpdateExclusive),
                (false, GraphLock::UpdateExclusive),
            ]
        } else {
            vec![
                (true, GraphLock::UpdateShare),
                (false, GraphLock::UpdateShare),
            ]
        };
        assert_eq!(store.locks, expected);
    }
    let graph = &store.inner;
    let entry = graph.entry().unwrap();
    let top = graph
        .live_ids()
        .iter()
        .map(|&id| graph.level(id))
        .max()
        .unwrap();
    assert_eq!(entry.level, top);
    assert_eq!(graph.level(entry.id), top);
}

#[test]
fn equal_values_share_an_element() {
    let (vectors, _) = dataset();
    let mut graph = build(&vectors[..200]);
    let mut rng = SplitMix64::new(3);
    let target = vectors[17].clone();
    // Nine more heap TIDs fit into element 17 (ten in total).
    for tid in 0..9 {
        let (outcome, _) = graph.insert_vector(target.clone(), 1_000 + tid, &params(), &mut || {
            rng.next_f64()
        });
        assert_eq!(outcome, InsertOutcome::Duplicate(17));
    }
    assert_eq!(graph.heap_tids(17).len(), 10);
    // The element is full: the next copy becomes an element of its own.
    let (outcome, _) =
        graph.insert_vector(target.clone(), 2_000, &params(), &mut || rng.next_f64());
    let InsertOutcome::Added(id) = outcome else {
        panic!("expected a new element, got {outcome:?}");
    };
    assert_ne!(id, 17);
    assert_eq!(graph.vector(id), target.as_slice());
}
