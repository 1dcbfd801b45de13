//! The exact rerank of estimated candidates: exact order over a search's candidates whatever the
//! batch size, no more reranked than the rows asked for need, strict scans never go back in
//! distance, vectors that are gone are dropped, and reranking recovers the recall that noisy
//! estimates lose.

use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::{l2_squared, InMemoryGraph};
use vector_hnsw::storage::{Candidate, EntryPoint, GraphStore};
use vector_hnsw::{GraphParams, IterativeScan, RerankStore, RerankedScan, Scan, ScanParams};

/// An in-memory graph whose distances carry a deterministic error per element, as code
/// estimates do; the exact distances are its vectors'.
struct Noisy {
    graph: InMemoryGraph,
    noise: f64,
    /// Elements whose vector is gone (the rerank drops them).
    gone: Vec<u32>,
    batches: Vec<usize>,
}

fn jitter(id: u32) -> f64 {
    let mut r = SplitMix64::new(u64::from(id) * 7919 + 1);
    r.next_f64() * 2.0 - 1.0
}

impl GraphStore for Noisy {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.graph.entry_point()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        self.graph.neighbors(element, layer, out);
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        let first = out.len();
        self.graph.load(query, ids, out);
        for c in &mut out[first..] {
            c.distance += self.noise * jitter(c.id);
        }
    }
}

impl RerankStore for Noisy {
    fn estimate_error(&self, _: &Candidate<u32, ()>) -> f64 {
        self.noise
    }

    fn exact_distances(
        &mut self,
        query: &Vec<f32>,
        candidates: &[Candidate<u32, ()>],
        out: &mut Vec<Option<f64>>,
    ) {
        self.batches.push(candidates.len());
        out.clear();
        out.extend(candidates.iter().map(|c| {
            (!self.gone.contains(&c.id)).then(|| l2_squared(query, self.graph.vector(c.id)))
        }));
    }
}

fn data(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| (0..16).map(|_| rng.next_f64() as f32).collect())
        .collect()
}

fn store(noise: f64) -> (Noisy, Vec<Vec<f32>>) {
    let rows = data(3000, 1);
    let params = GraphParams {
        m: 8,
        ef_construction: 40,
    };
    let mut levels = SplitMix64::new(2);
    let graph = InMemoryGraph::build(&rows, &params, l2_squared, &mut || levels.next_f64()).0;
    let store = Noisy {
        graph,
        noise,
        gone: Vec::new(),
        batches: Vec::new(),
    };
    (store, data(30, 3))
}

fn params(mode: IterativeScan) -> ScanParams {
    ScanParams {
        ef_search: 40,
        mode,
        max_scan_tuples: 2000,
        ..ScanParams::default()
    }
}

fn run(
    store: &mut Noisy,
    query: &[f32],
    mode: IterativeScan,
    breadth: usize,
    limit: usize,
) -> Vec<(u32, f64)> {
    run_counting(store, query, mode, breadth, limit).0
}

/// The rows, and how many candidates were reranked for them.
fn run_counting(
    store: &mut Noisy,
    query: &[f32],
    mode: IterativeScan,
    breadth: usize,
    limit: usize,
) -> (Vec<(u32, f64)>, u64) {
    let query = query.to_vec();
    let mut scan = RerankedScan::new(Scan::new(query.clone(), params(mode)), breadth);
    let mut out = Vec::new();
    while out.len() < limit {
        match scan.next(store) {
            Some(c) => out.push((c.id, c.distance)),
            None => break,
        }
    }
    (out, scan.rerank_stats().reranked)
}

#[test]
fn a_batch_comes_back_in_exact_order_with_exact_distances() {
    let (mut store, queries) = store(0.05);
    for query in &queries {
        let rows = run(&mut store, query, IterativeScan::Off, 0, usize::MAX);
        assert_eq!(rows.len(), 40, "one batch of ef_search");
        assert_eq!(store.batches.last(), Some(&40));
        for w in rows.windows(2) {
            assert!(w[0].1 <= w[1].1, "{w:?}");
        }
        for &(id, d) in &rows {
            assert_eq!(d, l2_squared(query, store.graph.vector(id)));
        }
    }
}

#[test]
fn small_batches_keep_the_order_and_read_only_what_the_rows_need() {
    let (mut store, queries) = store(0.02);
    for query in &queries {
        let all = run(&mut store, query, IterativeScan::Off, 0, usize::MAX);
        store.batches.clear();
        let (rows, reranked) = run_counting(&mut store, query, IterativeScan::Off, 5, usize::MAX);
        // The same rows in the same exact order as one batch of everything.
        assert_eq!(rows, all);
        assert!(store.batches.iter().all(|&b| b <= 5), "{:?}", store.batches);
        assert_eq!(reranked, 40);
        // Three rows need a batch or a few, not every candidate.
        let (first, reranked) = run_counting(&mut store, query, IterativeScan::Off, 5, 3);
        assert_eq!(first, all[..3]);
        assert!(reranked < 40, "{reranked} reranked for 3 rows");
    }
}

#[test]
fn batches_of_the_breadth_and_strict_scans_never_go_back() {
    let (mut store, queries) = store(0.05);
    for query in &queries {
        store.batches.clear();
        let rows = run(&mut store, query, IterativeScan::Relaxed, 10, 200);
        assert_eq!(rows.len(), 200);
        assert!(
            store.batches.iter().all(|&b| b <= 10),
            "{:?}",
            store.batches
        );
        // Each search's rows (40 here) come back in exact order.
        for search in rows.chunks(40) {
            for w in search.windows(2) {
                assert!(w[0].1 <= w[1].1);
            }
        }
        let strict = run(&mut store, query, IterativeScan::Strict, 10, 200);
        for w in strict.windows(2) {
            assert!(w[0].1 <= w[1].1, "strict went back: {w:?}");
        }
        assert!(strict.len() >= 100, "{}", strict.len());
    }
    // The relaxed scan does go back somewhere: the strict check has something to skip.
    let went_back = queries.iter().any(|q| {
        run(&mut store, q, IterativeScan::Relaxed, 10, 200)
            .windows(2)
            .any(|w| w[1].1 < w[0].1)
    });
    assert!(went_back);
}

#[test]
fn elements_without_a_vector_are_dropped() {
    let (mut store, queries) = store(0.0);
    let all = run(&mut store, &queries[0], IterativeScan::Off, 0, usize::MAX);
    store.gone = all.iter().step_by(3).map(|&(id, _)| id).collect();
    let left = run(&mut store, &queries[0], IterativeScan::Off, 0, usize::MAX);
    assert_eq!(left.len(), all.len() - store.gone.len());
    assert!(left.iter().all(|(id, _)| !store.gone.contains(id)));
}

#[test]
fn the_rerank_recovers_what_noise_loses() {
    let (mut noisy, queries) = store(0.15);
    let rows = data(3000, 1);
    let (mut with, mut without) = (0.0, 0.0);
    for query in &queries {
        let mut exact: Vec<(f64, u32)> = rows
            .iter()
            .enumerate()
            .map(|(i, v)| (l2_squared(query, v), i as u32))
            .collect();
        exact.sort_by(|a, b| a.0.total_cmp(&b.0));
        let truth: Vec<u32> = exact.iter().take(10).map(|e| e.1).collect();
        let reranked = run(&mut noisy, query, IterativeScan::Off, 0, 10);
        with += reranked.iter().filter(|(id, _)| truth.contains(id)).count() as f64;
        let mut plain = Scan::new(query.clone(), params(IterativeScan::Off));
        let estimated: Vec<u32> = (0..10)
            .filter_map(|_| plain.next(&mut noisy))
            .map(|c| c.id)
            .collect();
        without += estimated.iter().filter(|id| truth.contains(id)).count() as f64;
    }
    assert!(
        with > without * 1.1,
        "reranked {with} against estimated {without}"
    );
}
