//! Vacuum: deleting elements and repairing the graph around them.

mod common;

use std::collections::HashSet;

use common::{brute_force, recall, Clustered, Tweaks, Wrapped};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;
use vector_hnsw::{
    search, vacuum, vacuum_with, GraphParams, InMemoryGraph, InsertOutcome, RepairMode,
};

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

fn mean_recall(graph: &mut InMemoryGraph, vectors: &[Vec<f32>], queries: &[Vec<f32>]) -> f64 {
    let live = graph.live_ids();
    let mut total = 0.0;
    for q in queries {
        let truth = brute_force(vectors, &live, q, 10);
        let (found, _) = search(graph, q, 40);
        assert!(found.iter().all(|c| graph.is_live(c.id)));
        let ids: Vec<u32> = found.iter().take(10).map(|c| c.id).collect();
        total += recall(&ids, &truth);
    }
    total / queries.len() as f64
}

struct RepairComparison {
    recall_search: f64,
    recall_local: f64,
    loads_search: u64,
    loads_local: u64,
    unreachable_search: usize,
    unreachable_local: usize,
}

/// Deletes 10% of `graph`, vacuums one copy with each repair mode and measures both.
fn compare_repairs(
    graph: InMemoryGraph,
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    params: &GraphParams,
) -> RepairComparison {
    let n = vectors.len();
    let mut graph = graph;
    let mut rng = SplitMix64::new(5);
    let mut doomed = HashSet::new();
    while doomed.len() < n / 10 {
        doomed.insert((rng.next_u64() % n as u64) as u32);
    }
    for &id in &doomed {
        graph.kill_element(id);
    }
    let mut searched = graph.clone();
    let before = searched.counters;
    let report_search = vacuum(&mut searched, params).unwrap();
    let loads_search = searched.counters.loaded - before.loaded;
    let mut local = graph;
    let before = local.counters;
    let report_local = vacuum_with(&mut local, params, RepairMode::Local).unwrap();
    let loads_local = local.counters.loaded - before.loaded;
    for (g, report) in [(&searched, &report_search), (&local, &report_local)] {
        assert_eq!(report.deleted, doomed.len());
        assert_eq!(dangling_links(g), vec![]);
        // Many live elements named a deleted one (the counts differ a little between
        // modes: each repair's back-links change which lists name a deleted one later).
        assert!(report.repaired > (n - doomed.len()) / 3, "{report:?}");
    }
    let c = RepairComparison {
        recall_search: mean_recall(&mut searched, vectors, queries),
        recall_local: mean_recall(&mut local, vectors, queries),
        loads_search,
        loads_local,
        unreachable_search: unreachable_on(&searched, 0).len(),
        unreachable_local: unreachable_on(&local, 0).len(),
    };
    eprintln!(
        "recall@10 search repair {:.4} ({} loads, {} unreachable), local {:.4} ({} loads, {} \
         unreachable)",
        c.recall_search,
        c.loads_search,
        c.unreachable_search,
        c.recall_local,
        c.loads_local,
        c.unreachable_local
    );
    c
}

/// Local repair re-selects among the neighbors at hand instead of searching: no link to a
/// deleted element is left, recall stays within a point of pgvector's search repair, with less
/// distance work. Clustered data: nothing becomes unreachable.
#[test]
fn local_repair_keeps_recall_with_a_fraction_of_the_work() {
    let (graph, vectors, mut data) = build(3_000, 24, 21);
    let queries: Vec<Vec<f32>> = (0..100).map(|_| data.point()).collect();
    let c = compare_repairs(graph, &vectors, &queries, &params());
    assert_eq!((c.unreachable_search, c.unreachable_local), (0, 0));
    assert!(c.recall_local >= c.recall_search - 0.01);
    // Most of what is left is back-links (each costs a list's distances).
    assert!(c.loads_local * 3 < c.loads_search * 2);
}

/// The same on harder data (one Gaussian blob in 32 dimensions, m = 8), where pgvector's own
/// repair leaves a few elements unreachable: local repair may not leave many more.
#[test]
fn local_repair_on_hard_data() {
    let params = GraphParams {
        m: 8,
        ef_construction: 64,
    };
    let mut data = Clustered::new(21, 1, 32, 1.0);
    let vectors = data.points(3_000);
    let mut rng = SplitMix64::new(21);
    let (graph, _) = InMemoryGraph::build(&vectors, &params, l2_squared, &mut || rng.next_f64());
    let queries: Vec<Vec<f32>> = (0..100).map(|_| data.point()).collect();
    let c = compare_repairs(graph, &vectors, &queries, &params);
    assert!(c.recall_local >= c.recall_search - 0.01);
    assert!(c.unreachable_local <= c.unreachable_search + 3);
    assert!(c.loads_local * 3 < c.loads_search);
}

/// Uniform points (no structure to lean on), 32-d, m = 8, five graphs: on each, a copy
/// repaired each way after the same 10% deletes, 300 queries. Local repair is the default of
/// `hnsw.vacuum_repair`: over the five graphs its mean recall may be at most 0.005 below
/// pgvector's search repair (the goal maintenance is held to).
#[test]
fn local_repair_keeps_recall_on_uniform_data() {
    let params = GraphParams {
        m: 8,
        ef_construction: 64,
    };
    let uniform = |rng: &mut SplitMix64, n: usize| -> Vec<Vec<f32>> {
        (0..n)
            .map(|_| (0..32).map(|_| rng.next_f64() as f32 - 0.5).collect())
            .collect()
    };
    let (mut searched, mut local) = (0.0, 0.0);
    for seed in 1..=5u64 {
        let mut rng = SplitMix64::new(seed);
        let vectors = uniform(&mut rng, 3_000);
        let queries = uniform(&mut rng, 300);
        let (graph, _) =
            InMemoryGraph::build(&vectors, &params, l2_squared, &mut || rng.next_f64());
        let c = compare_repairs(graph, &vectors, &queries, &params);
        searched += c.recall_search / 5.0;
        local += c.recall_local / 5.0;
    }
    eprintln!("mean recall@10 over 5 graphs: search repair {searched:.4}, local {local:.4}");
    assert!(
        local >= searched - 0.005,
        "local {local} against search {searched}"
    );
}

/// Repair's back-links skip a list that already names the element before computing the
/// list's distances; pgvector computes them first and then skips the write. The graph must
/// come out the same, with fewer distances.
#[test]
fn back_links_checked_first_give_the_same_graph() {
    let (mut graph, _, _) = build(2_000, 16, 31);
    let mut rng = SplitMix64::new(9);
    for _ in 0..200 {
        graph.kill_element((rng.next_u64() % 2_000) as u32);
    }
    let mut eager = Wrapped::new(
        graph.clone(),
        Tweaks {
            eager_back_links: true,
            ..Tweaks::default()
        },
    );
    let mut checked = Wrapped::new(graph, Tweaks::default());
    let a = vacuum(&mut eager, &params()).unwrap();
    let b = vacuum(&mut checked, &params()).unwrap();
    assert_eq!((a.deleted, a.repaired), (b.deleted, b.repaired));
    let (eager, checked) = (eager.inner, checked.inner);
    assert_eq!(eager.live_ids(), checked.live_ids());
    assert_eq!(eager.entry(), checked.entry());
    for id in 0..eager.slots() as u32 {
        for layer in 0..=eager.level(id) {
            assert_eq!(
                eager.neighbor_ids(id, layer),
                checked.neighbor_ids(id, layer),
                "element {id} layer {layer}"
            );
        }
    }
    eprintln!(
        "loads: pgvector's order {}, checked first {}",
        eager.counters.loaded, checked.counters.loaded
    );
    assert!(checked.counters.loaded < eager.counters.loaded);
}
