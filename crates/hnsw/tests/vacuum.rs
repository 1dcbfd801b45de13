//! Vacuum: deleting elements and repairing the graph around them.

mod common;

use std::collections::HashSet;

use common::{brute_force, recall, Clustered, Tweaks, Wrapped};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;
use vector_hnsw::{search, vacuum, GraphParams, InMemoryGraph, InsertOutcome};

fn params() -> GraphParams {
    GraphParams {
        m: 16,
        ef_construction: 64,
    }
}

fn build(n: usize, dims: usize, seed: u64) -> (InMemoryGraph, Vec<Vec<f32>>, Clustered) {
    let mut data = Clustered::new(seed, 8, dims, 1.0);
    let vectors = data.points(n);
    let mut rng = SplitMix64::new(seed ^ 0xabcdef);
    let (graph, _) = InMemoryGraph::build(&vectors, &params(), l2_squared, &mut || rng.next_f64());
    (graph, vectors, data)
}

/// Live elements that are not reachable from the entry point on `layer`.
fn unreachable_on(graph: &InMemoryGraph, layer: u8) -> Vec<u32> {
    let seen = graph.reachable(layer);
    graph
        .live_ids()
        .into_iter()
        .filter(|&id| graph.level(id) >= layer && !seen.contains(&id))
        .collect()
}

/// Live elements whose lists still name a deleted element.
fn dangling_links(graph: &InMemoryGraph) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for id in graph.live_ids() {
        for layer in 0..=graph.level(id) {
            for &n in graph.neighbor_ids(id, layer) {
                if graph.is_deleted(n) {
                    out.push((id, n));
                }
            }
        }
    }
    out
}

#[test]
fn repair_after_deleting_30_percent_keeps_everything_reachable() {
    let n = 1_500;
    let (mut graph, vectors, mut data) = build(n, 16, 11);
    assert!(
        unreachable_on(&graph, 0).is_empty(),
        "unreachable before deleting"
    );

    // Delete 30% of the elements, the entry point among them.
    let entry = graph.entry().unwrap();
    let mut rng = SplitMix64::new(77);
    let mut doomed: HashSet<u32> = HashSet::from([entry.id]);
    while doomed.len() < n * 3 / 10 {
        doomed.insert((rng.next_u64() % n as u64) as u32);
    }
    for &id in &doomed {
        graph.kill_element(id);
    }

    let report = vacuum(&mut graph, &params()).expect("graph repaired");
    assert_eq!(report.deleted, doomed.len());
    assert!(report.entry_point_replaced);
    assert!(report.repaired > 0 && report.stats.distances > 0);

    for &id in &doomed {
        assert!(graph.is_deleted(id));
    }
    let live = graph.live_ids();
    assert_eq!(live.len(), n - doomed.len());

    // The new entry point is live and on the highest remaining level.
    let entry = graph.entry().unwrap();
    assert!(graph.is_live(entry.id));
    let top = live.iter().map(|&id| graph.level(id)).max().unwrap();
    assert_eq!(entry.level, top);

    assert_eq!(dangling_links(&graph), vec![]);
    assert_eq!(unreachable_on(&graph, 0), vec![], "unreachable on layer 0");
    for layer in 1..=top {
        let missing = unreachable_on(&graph, layer);
        eprintln!(
            "layer {layer}: {} unreachable of the live elements there",
            missing.len()
        );
    }

    // Search quality over what is left.
    let mut total = 0.0;
    for _ in 0..50 {
        let q = data.point();
        let truth = brute_force(&vectors, &live, &q, 10);
        let (found, _) = search(&mut graph, &q, 40);
        assert!(found.iter().all(|c| graph.is_live(c.id)));
        let ids: Vec<u32> = found.iter().take(10).map(|c| c.id).collect();
        total += recall(&ids, &truth);
    }
    let r = total / 50.0;
    eprintln!("recall@10 after deletes: {r:.4}");
    assert!(r >= 0.95, "recall after deletes {r}");

    // Deleted space is reused by new inserts.
    let slots = graph.slots();
    let mut level_rng = SplitMix64::new(8);
    for i in 0..100 {
        let (outcome, _) = graph.insert_vector(data.point(), 10_000 + i, &params(), &mut || {
            level_rng.next_f64()
        });
        let InsertOutcome::Added(id) = outcome else {
            panic!("unexpected duplicate");
        };
        assert!((id as usize) < slots, "slot not reused");
    }
    assert_eq!(graph.slots(), slots);
    assert_eq!(unreachable_on(&graph, 0), vec![]);

    // Nothing left to do for a second vacuum.
    let again = vacuum(&mut graph, &params()).unwrap();
    assert_eq!(again.deleted, 0);
    assert!(!again.entry_point_replaced);
}

/// A store that drops neighbor rewrites cannot be repaired: the confirm
/// pass must catch it (so the reachability checks above can fail).
#[test]
fn unrepaired_graph_is_reported() {
    let (graph, _, _) = build(300, 8, 5);
    let mut store = Wrapped::new(
        graph,
        Tweaks {
            drop_rewrites: true,
            ..Tweaks::default()
        },
    );
    for id in 0..100 {
        store.inner.kill_element(id);
    }
    let err = vacuum(&mut store, &params()).expect_err("links to deleted elements remain");
    assert!(err.neighbor < 100 && err.element >= 100);
    assert!(!store.inner.is_deleted(err.neighbor));
}

#[test]
fn deleting_everything_empties_the_graph() {
    let (mut graph, vectors, _) = build(200, 8, 9);
    for id in graph.live_ids() {
        graph.kill_element(id);
    }
    let report = vacuum(&mut graph, &params()).unwrap();
    assert_eq!(report.deleted, 200);
    assert_eq!(graph.entry(), None);
    assert!(search(&mut graph, &vectors[0], 10).0.is_empty());

    let mut rng = SplitMix64::new(1);
    for (i, v) in vectors.iter().take(50).enumerate() {
        graph.insert_vector(v.clone(), 500 + i as u64, &params(), &mut || rng.next_f64());
    }
    assert_eq!(graph.live_ids().len(), 50);
    assert_eq!(unreachable_on(&graph, 0), vec![]);
    let (found, _) = search(&mut graph, &vectors[3], 10);
    assert_eq!(found[0].id, graph.live_ids()[3]);
}

#[test]
fn dead_heap_tids_of_shared_elements() {
    let (mut graph, vectors, _) = build(100, 8, 2);
    let mut rng = SplitMix64::new(4);
    let (outcome, _) =
        graph.insert_vector(vectors[40].clone(), 900, &params(), &mut || rng.next_f64());
    assert_eq!(outcome, InsertOutcome::Duplicate(40));

    // One of two heap TIDs dies: the element stays.
    graph.kill_heap_tid(40);
    let report = vacuum(&mut graph, &params()).unwrap();
    assert_eq!(report.deleted, 0);
    assert_eq!(graph.heap_tids(40), &[900]);

    // Both dead: it goes.
    graph.kill_heap_tid(900);
    let report = vacuum(&mut graph, &params()).unwrap();
    assert_eq!(report.deleted, 1);
    assert!(graph.is_deleted(40));
    assert_eq!(dangling_links(&graph), vec![]);
}
