//! Property tests for neighbor selection and for the neighbor lists that
//! inserts and repairs produce.

mod common;

use proptest::prelude::*;
use vector_hnsw::insert::{find_element_neighbors, NeighborTarget};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;
use vector_hnsw::storage::{GraphWrite, NewElement};
use vector_hnsw::{select_neighbors, Candidate, GraphParams, InMemoryGraph, VacuumStore};

/// A store holding `points` (ids 0..n) plus candidates for `base`, ordered
/// furthest first like a layer search returns them.
fn setup(base: &[f32], points: &[Vec<f32>]) -> (InMemoryGraph, Vec<Candidate<u32, ()>>) {
    let mut graph = InMemoryGraph::new(4, l2_squared);
    let mut candidates = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let element = NewElement {
            value: p.clone(),
            heap_tid: i as u64,
            level: 0,
        };
        let mut c = graph.add_element(&element, &[]);
        c.distance = l2_squared(base, p);
        candidates.push(c);
    }
    candidates.sort_by(|a, b| {
        (b.distance as f32)
            .total_cmp(&(a.distance as f32))
            .then(b.id.cmp(&a.id))
    });
    (graph, candidates)
}

fn point(dims: usize) -> impl Strategy<Value = Vec<f32>> {
    // Small integer grid: many exact ties in distances.
    prop::collection::vec((-4i8..=4).prop_map(f32::from), dims)
}

fn case() -> impl Strategy<Value = (Vec<f32>, Vec<Vec<f32>>, usize)> {
    (2usize..5).prop_flat_map(|dims| {
        (
            point(dims),
            prop::collection::vec(point(dims), 0..40),
            1usize..12,
        )
    })
}

fn ids(cs: &[Candidate<u32, ()>]) -> Vec<u32> {
    cs.iter().map(|c| c.id).collect()
}

/// Selection written the plain way, moving the candidates themselves: what
/// `select_neighbors` must return, whatever it moves to get there.
fn reference_selection(
    points: &[Vec<f32>],
    mut pending: Vec<Candidate<u32, ()>>,
    lm: usize,
    sort: bool,
) -> (Vec<u32>, usize, Option<u32>) {
    if pending.len() <= lm {
        return (ids(&pending), pending.len(), None);
    }
    if sort {
        pending.sort_by(|a, b| {
            (b.distance as f32)
                .total_cmp(&(a.distance as f32))
                .then(b.id.cmp(&a.id))
        });
    }
    let mut selected: Vec<Candidate<u32, ()>> = Vec::new();
    let mut rejected = Vec::new();
    while selected.len() < lm {
        let Some(e) = pending.pop() else { break };
        let closer = selected.iter().all(|r| {
            let between = l2_squared(&points[e.id as usize], &points[r.id as usize]) as f32;
            // Rejected only when `between <= own` (NaN keeps it), as pgvector.
            !matches!(
                between.partial_cmp(&(e.distance as f32)),
                Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
            )
        });
        if closer {
            selected.push(e);
        } else {
            rejected.push(e);
        }
    }
    let accepted = selected.len();
    let mut rejected = rejected.into_iter();
    while selected.len() < lm {
        match rejected.next() {
            Some(e) => selected.push(e),
            None => break,
        }
    }
    let pruned = rejected
        .next()
        .or_else(|| (!pending.is_empty()).then(|| pending.swap_remove(0)));
    (ids(&selected), accepted, pruned.map(|c| c.id))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn selection_properties((base, points, lm) in case()) {
        let (mut graph, candidates) = setup(&base, &points);
        let n = candidates.len();
        let sel = select_neighbors(&mut graph, candidates.clone(), lm, false);

        // Never more than lm; keepPrunedConnections fills up to lm.
        prop_assert!(sel.neighbors.len() <= lm);
        prop_assert_eq!(sel.neighbors.len(), n.min(lm));
        // Only input candidates, each at most once.
        let mut seen = std::collections::HashSet::new();
        for c in &sel.neighbors {
            prop_assert!(seen.insert(c.id));
        }

        if n > lm {
            // Heuristic part: each accepted neighbor is strictly closer to
            // the base than to every neighbor accepted before it.
            for i in 0..sel.accepted {
                let e = &sel.neighbors[i];
                for r in &sel.neighbors[..i] {
                    let between = l2_squared(&points[e.id as usize], &points[r.id as usize]) as f32;
                    prop_assert!(between > e.distance as f32);
                }
            }
            // The first candidate (nearest) is always accepted.
            prop_assert!(sel.accepted >= 1);
            prop_assert_eq!(sel.neighbors[0].id, candidates[n - 1].id);
            // Filled part: rejected candidates, nearest first.
            let fill = &sel.neighbors[sel.accepted..];
            for pair in fill.windows(2) {
                prop_assert!((pair[0].distance as f32) <= (pair[1].distance as f32));
            }
            // Exactly one of lm + 1 is pruned, and it is reported.
            if n == lm + 1 {
                let pruned = sel.pruned.clone().expect("one candidate left out");
                prop_assert!(!ids(&sel.neighbors).contains(&pruned.id));
            }
        } else {
            // At most lm: returned unchanged, in input order.
            prop_assert_eq!(ids(&sel.neighbors), ids(&candidates));
        }

        // Deterministic for equal input.
        let again = select_neighbors(&mut graph, candidates.clone(), lm, false);
        prop_assert_eq!(ids(&again.neighbors), ids(&sel.neighbors));
    }

    #[test]
    fn selection_matches_the_plain_reference(
        (base, points, lm) in case(),
        seed in any::<u64>(),
        sort in any::<bool>(),
    ) {
        let (mut graph, mut candidates) = setup(&base, &points);
        if sort {
            let mut rng = SplitMix64::new(seed);
            for i in (1..candidates.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                candidates.swap(i, j);
            }
        }
        let sel = select_neighbors(&mut graph, candidates.clone(), lm, sort);
        let (want, accepted, pruned) = reference_selection(&points, candidates, lm, sort);
        prop_assert_eq!(ids(&sel.neighbors), want);
        prop_assert_eq!(sel.accepted, accepted);
        prop_assert_eq!(sel.pruned.map(|c| c.id), pruned);
    }

    #[test]
    fn sorted_selection_ignores_input_order((base, points, lm) in case(), seed in any::<u64>()) {
        let (mut graph, candidates) = setup(&base, &points);
        prop_assume!(candidates.len() > lm);
        let mut shuffled = candidates.clone();
        let mut rng = SplitMix64::new(seed);
        for i in (1..shuffled.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let a = select_neighbors(&mut graph, candidates, lm, true);
        let b = select_neighbors(&mut graph, shuffled, lm, true);
        prop_assert_eq!(ids(&a.neighbors), ids(&b.neighbors));
        prop_assert_eq!(a.pruned.map(|c| c.id), b.pruned.map(|c| c.id));
    }

    /// Lists built by inserts and re-selected by repair never contain the
    /// element itself and never exceed the layer capacity.
    #[test]
    fn graph_lists_are_bounded_and_irreflexive(
        points in prop::collection::vec(point(3), 1..60),
        m in 2usize..6,
        seed in any::<u64>(),
    ) {
        let params = GraphParams { m, ef_construction: 8 };
        let mut rng = SplitMix64::new(seed);
        let (mut graph, _) = InMemoryGraph::build(&points, &params, l2_squared, &mut || rng.next_f64());
        for id in graph.live_ids() {
            for layer in 0..=graph.level(id) {
                let list = graph.neighbor_ids(id, layer);
                prop_assert!(list.len() <= params.layer_capacity(layer));
                prop_assert!(!list.contains(&id));
            }
            let element = graph.load_element(id);
            let value = graph.value(&element);
            let target = NeighborTarget { level: element.level, entry: graph.entry(), existing: Some(id) };
            let (layers, _) = find_element_neighbors(&mut graph, &value, &target, &params);
            prop_assert_eq!(layers.len(), element.level as usize + 1);
            for (layer, list) in layers.iter().enumerate() {
                prop_assert!(list.len() <= params.layer_capacity(layer as u8));
                prop_assert!(list.iter().all(|c| c.id != id && c.live));
            }
        }
    }
}
