//! Filtered search on the in-memory graph against brute force over the passing rows, at
//! selectivities from 50% to 0.1%, with the filter uniform over the rows or covering one
//! region of the space away from the queries (the hard case for a graph walk).
//!
//! `filter_walks_compared` (ignored; `cargo test --release -p vector-hnsw --test filter --
//! --ignored --nocapture`) prints the comparison of the walks that chose the default.

mod common;

use common::{brute_force, recall, Clustered};
use std::collections::HashSet;
use vector_hnsw::filter::{filtered_search, Expansion, FilterParams, FilterStats, FilterStore};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::l2_squared;
use vector_hnsw::placement::{shared_lists_first, PagePacker};
use vector_hnsw::storage::{Candidate, EntryPoint, GraphLock, GraphStore};
use vector_hnsw::{GraphParams, InMemoryGraph, IterativeScan, Scan, ScanParams};

const K: usize = 10;
const EF: usize = 40;

struct Data {
    graph: InMemoryGraph,
    vectors: Vec<Vec<f32>>,
    queries: Vec<Vec<f32>>,
}

fn data(n: usize, dims: usize, queries: usize) -> Data {
    let mut points = Clustered::new(7, 20, dims, 1.0);
    let vectors = points.points(n);
    let queries = points.points(queries);
    let params = GraphParams {
        m: 16,
        ef_construction: 64,
    };
    let mut rng = SplitMix64::new(99);
    let (graph, _) = InMemoryGraph::build(&vectors, &params, l2_squared, &mut || rng.next_f64());
    Data {
        graph,
        vectors,
        queries,
    }
}

/// Pages of `per_page` elements, filled in the order a build's placement writes them.
struct Pages {
    page_of: Vec<u32>,
}

struct CountPacker {
    per_page: usize,
    on_page: usize,
}

impl PagePacker for CountPacker {
    fn fits(&self, _i: u32) -> bool {
        self.on_page < self.per_page
    }
    fn place(&mut self, _i: u32) {
        if self.on_page == self.per_page {
            self.on_page = 0;
        }
        self.on_page += 1;
    }
}

impl Pages {
    fn placed(graph: &InMemoryGraph, per_page: usize) -> Pages {
        let mut packer = CountPacker {
            per_page,
            on_page: 0,
        };
        let count = graph.slots() as u32;
        let order = shared_lists_first(
            count,
            |i, out| out.extend_from_slice(graph.neighbor_ids(i, 0)),
            &mut packer,
        )
        .expect("placement memory");
        let mut page_of = vec![0; count as usize];
        for (position, &id) in order.iter().enumerate() {
            page_of[id as usize] = (position / per_page) as u32;
        }
        Pages { page_of }
    }
}

/// The graph with a filter, as a page store would serve it: each neighbor tested from beside
/// its link (`may`: the passing rows, and any chance matches on top), each loaded element's
/// exact attribute checked (it loads as not live if it fails). It records the elements whose
/// tuples a walk reads (loaded ones, and those whose neighbor list it reads: a neighbor tuple is
/// taken to share its element's page) and those it tests.
struct Filtered<'g> {
    graph: &'g mut InMemoryGraph,
    pass: &'g [bool],
    may: fn(&[bool], u32) -> bool,
    exact_on_load: bool,
    read: Vec<u32>,
    tested: Vec<u32>,
    /// Scan lock and unlock calls; `locked` while held.
    locks: usize,
    locked: bool,
}

fn exactly(pass: &[bool], id: u32) -> bool {
    pass[id as usize]
}

impl<'g> Filtered<'g> {
    fn new(graph: &'g mut InMemoryGraph, pass: &'g [bool]) -> Self {
        Filtered {
            graph,
            pass,
            may: exactly,
            exact_on_load: true,
            read: Vec::new(),
            tested: Vec::new(),
            locks: 0,
            locked: false,
        }
    }

    fn test(&mut self, ids: &[u32], out: &mut Vec<(u32, bool)>) {
        self.tested.extend_from_slice(ids);
        out.extend(ids.iter().map(|&id| (id, (self.may)(self.pass, id))));
    }
}

impl GraphStore for Filtered<'_> {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.graph.entry_point()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        self.read.push(element.id);
        self.graph.neighbors(element, layer, out);
    }

    fn lock(&mut self, lock: GraphLock) {
        assert_eq!(lock, GraphLock::ScanShare);
        assert!(!self.locked, "locked twice");
        self.locked = true;
        self.locks += 1;
    }

    fn unlock(&mut self, lock: GraphLock) {
        assert_eq!(lock, GraphLock::ScanShare);
        assert!(self.locked, "unlocked without a lock");
        self.locked = false;
        self.locks += 1;
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        self.read.extend_from_slice(ids);
        let first = out.len();
        self.graph.load(query, ids, out);
        if self.exact_on_load {
            for c in &mut out[first..] {
                c.live &= self.pass[c.id as usize];
            }
        }
    }
}

impl FilterStore for Filtered<'_> {
    fn tested_neighbors(&mut self, element: &Candidate<u32, ()>, out: &mut Vec<(u32, bool)>) {
        let mut ids = Vec::new();
        self.neighbors(element, 0, &mut ids);
        self.test(&ids, out);
    }

    fn tested_neighbors_of(&mut self, id: &u32, out: &mut Vec<(u32, bool)>) {
        self.read.push(*id);
        let mut ids = Vec::new();
        self.graph.read_neighbors_of(*id, &mut ids);
        self.test(&ids, out);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Spread {
    /// Each row passes with the selectivity's probability.
    Uniform,
    /// The rows nearest one point pass; queries come from the half of the data furthest from it.
    Region,
}

/// Which rows pass, and the queries of this filter.
fn filter(data: &Data, selectivity: f64, spread: Spread, seed: u64) -> (Vec<bool>, Vec<usize>) {
    let n = data.vectors.len();
    let want = ((n as f64 * selectivity).round() as usize).max(K);
    let mut rng = SplitMix64::new(seed);
    match spread {
        Spread::Uniform => {
            let mut pass = vec![false; n];
            let mut ids: Vec<usize> = (0..n).collect();
            for i in 0..want {
                let j = i + (rng.next_u64() % (n - i) as u64) as usize;
                ids.swap(i, j);
                pass[ids[i]] = true;
            }
            (pass, (0..data.queries.len()).collect())
        }
        Spread::Region => {
            let anchor = &data.vectors[(rng.next_u64() % n as u64) as usize];
            let mut by_distance: Vec<(f64, usize)> = data
                .vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (l2_squared(anchor, v), i))
                .collect();
            by_distance.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut pass = vec![false; n];
            for &(_, i) in &by_distance[..want] {
                pass[i] = true;
            }
            let median = by_distance[n / 2].0;
            let far = (0..data.queries.len())
                .filter(|&q| l2_squared(anchor, &data.queries[q]) > median)
                .collect();
            (pass, far)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Walk {
    /// An unfiltered relaxed iterative scan (pgvector's), rows filtered as they come.
    PostFilter,
    Filtered(Expansion, bool),
    /// Two-hop reads only where a hop found fewer passing neighbors than this.
    TwoHopBelow(usize),
}

#[derive(Default)]
struct Totals {
    recall: f64,
    short: usize,
    queries: usize,
    distances: u64,
    tested: u64,
    lists: u64,
    /// Distinct pages read, for each page size asked: with the attribute beside the links
    /// (tests read nothing), and in the element (a test reads the element's page).
    pages: Vec<(u64, u64)>,
}

fn run(data: &mut Data, pass: &[bool], queries: &[usize], walk: Walk) -> Totals {
    run_paged(data, pass, queries, walk, &[])
}

fn run_paged(
    data: &mut Data,
    pass: &[bool],
    queries: &[usize],
    walk: Walk,
    pages: &[Pages],
) -> Totals {
    let passing: Vec<u32> = (0..pass.len() as u32)
        .filter(|&i| pass[i as usize])
        .collect();
    let seed = passing[0];
    let mut totals = Totals {
        pages: vec![(0, 0); pages.len()],
        ..Totals::default()
    };
    for &q in queries {
        let query = data.queries[q].clone();
        let truth = brute_force(&data.vectors, &passing, &query, K);
        let lists_before = data.graph.counters.neighbor_reads;
        let mut store = Filtered::new(&mut data.graph, pass);
        let found: Vec<u32> = match walk {
            Walk::PostFilter => {
                let params = ScanParams {
                    ef_search: EF,
                    mode: IterativeScan::Relaxed,
                    ..ScanParams::default()
                };
                store.exact_on_load = false;
                let mut scan = Scan::new(query, params);
                let mut found = Vec::new();
                while found.len() < K {
                    let Some(c) = scan.next(&mut store) else {
                        break;
                    };
                    if pass[c.id as usize] {
                        found.push(c.id);
                    }
                }
                totals.distances += scan.stats().distances;
                found
            }
            Walk::Filtered(..) | Walk::TwoHopBelow(_) => {
                let mut params = match walk {
                    Walk::Filtered(expansion, _) => FilterParams::new(expansion),
                    Walk::TwoHopBelow(enough) => FilterParams {
                        enough_passing: enough,
                        ..FilterParams::new(Expansion::TwoHop)
                    },
                    Walk::PostFilter => unreachable!(),
                };
                if walk == Walk::Filtered(Expansion::TwoHop, true)
                    || walk == Walk::Filtered(Expansion::Steer, true)
                {
                    params.seeds = vec![seed];
                }
                let (results, stats): (_, FilterStats) =
                    filtered_search(&mut store, &query, EF, &params);
                totals.distances += stats.search.distances;
                totals.tested += stats.tested;
                results.iter().take(K).map(|c| c.id).collect()
            }
        };
        let read = std::mem::take(&mut store.read);
        let tested_ids = std::mem::take(&mut store.tested);
        for (i, p) in pages.iter().enumerate() {
            let mut seen: HashSet<u32> = read.iter().map(|&id| p.page_of[id as usize]).collect();
            totals.pages[i].0 += seen.len() as u64;
            seen.extend(tested_ids.iter().map(|&id| p.page_of[id as usize]));
            totals.pages[i].1 += seen.len() as u64;
        }
        totals.lists += data.graph.counters.neighbor_reads - lists_before;
        assert!(
            found.iter().all(|&id| pass[id as usize]),
            "{walk:?} returned a failing row"
        );
        totals.recall += recall(&found, &truth);
        totals.short += usize::from(found.len() < K);
        totals.queries += 1;
    }
    totals
}

const SELECTIVITIES: [f64; 4] = [0.5, 0.1, 0.01, 0.001];

#[test]
#[cfg_attr(debug_assertions, ignore = "builds a 20k-row graph: run in release")]
fn two_hop_with_a_seed_finds_the_passing_rows() {
    let mut data = data(20_000, 16, 100);
    for spread in [Spread::Uniform, Spread::Region] {
        for (i, &selectivity) in SELECTIVITIES.iter().enumerate() {
            let (pass, queries) = filter(&data, selectivity, spread, i as u64 + 1);
            let t = run(
                &mut data,
                &pass,
                &queries,
                Walk::Filtered(Expansion::TwoHop, true),
            );
            let mean = t.recall / t.queries as f64;
            eprintln!(
                "{spread:?} {selectivity}: recall {mean:.4}, short {}",
                t.short
            );
            assert!(t.queries >= 30, "{spread:?}: {} queries", t.queries);
            assert_eq!(t.short, 0, "{spread:?} {selectivity}: rows missing");
            assert!(mean >= 0.95, "{spread:?} {selectivity}: recall {mean:.4}");
        }
    }
}

#[test]
#[ignore = "prints benches/results/filter-walks-in-memory-2026-12-08.md; run in release with --nocapture"]
fn filter_walks_compared() {
    let n: usize = std::env::var("FILTER_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut data = data(n, 32, 200);
    let walks = [
        Walk::PostFilter,
        Walk::Filtered(Expansion::Steer, false),
        Walk::Filtered(Expansion::Steer, true),
        Walk::Filtered(Expansion::TwoHop, false),
        Walk::Filtered(Expansion::TwoHop, true),
        Walk::TwoHopBelow(16),
        Walk::TwoHopBelow(8),
    ];
    let per_page = [4, 18];
    let pages: Vec<Pages> = per_page
        .iter()
        .map(|&p| Pages::placed(&data.graph, p))
        .collect();
    println!("rows {n}, 32-d, 20 clusters, k {K}, ef {EF}; pages of {per_page:?} elements");
    println!("| filter | selectivity | walk | recall@10 | short | distances | tested | lists | pages (4/page): link, element | pages (18/page): link, element |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for spread in [Spread::Uniform, Spread::Region] {
        for (i, &selectivity) in SELECTIVITIES.iter().enumerate() {
            let (pass, queries) = filter(&data, selectivity, spread, i as u64 + 1);
            let passing = pass.iter().filter(|&&p| p).count();
            for walk in walks {
                let t = run_paged(&mut data, &pass, &queries, walk, &pages);
                let q = t.queries as f64;
                println!(
                    "| {spread:?} | {selectivity} | {walk:?} | {:.4} | {} | {:.0} | {:.0} | {:.0} | {:.0}, {:.0} | {:.0}, {:.0} |",
                    t.recall / q,
                    t.short,
                    t.distances as f64 / q,
                    t.tested as f64 / q,
                    t.lists as f64 / q,
                    t.pages[0].0 as f64 / q,
                    t.pages[0].1 as f64 / q,
                    t.pages[1].0 as f64 / q,
                    t.pages[1].1 as f64 / q,
                );
            }
            let exact: Vec<String> = pages
                .iter()
                .map(|p| {
                    let set: HashSet<u32> =
                        (0..n).filter(|&i| pass[i]).map(|i| p.page_of[i]).collect();
                    format!("{}", set.len())
                })
                .collect();
            println!(
                "| {spread:?} | {selectivity} | exact | 1.0000 | 0 | {passing} | | | {} | {} |",
                exact[0], exact[1]
            );
        }
    }
}

/// Rows of iterative filtered scans: past `ef_search`, each row once, all passing, in order
/// for a strict scan, and most of the exact top 100.
#[test]
#[cfg_attr(debug_assertions, ignore = "builds a 20k-row graph: run in release")]
fn iterative_filtered_scans_go_past_ef() {
    use std::collections::HashSet;
    use vector_hnsw::filter::FilteredScan;
    let mut data = data(20_000, 16, 40);
    let (pass, queries) = filter(&data, 0.05, Spread::Region, 3);
    let passing: Vec<u32> = (0..pass.len() as u32)
        .filter(|&i| pass[i as usize])
        .collect();
    for (mode, expansion) in [
        (IterativeScan::Off, Expansion::TwoHop),
        (IterativeScan::Relaxed, Expansion::TwoHop),
        (IterativeScan::Strict, Expansion::TwoHop),
        (IterativeScan::Relaxed, Expansion::Steer),
        (IterativeScan::Strict, Expansion::Steer),
    ] {
        let mut total_recall = 0.0;
        for &q in &queries {
            let query = data.queries[q].clone();
            let params = ScanParams {
                ef_search: EF,
                mode,
                ..ScanParams::default()
            };
            let mut scan: FilteredScan<Filtered<'_>> =
                FilteredScan::new(query.clone(), params, FilterParams::new(expansion));
            let mut store = Filtered::new(&mut data.graph, &pass);
            let mut rows = Vec::new();
            let mut previous = f64::NEG_INFINITY;
            while rows.len() < 100 {
                let Some(c) = scan.next(&mut store) else {
                    break;
                };
                assert!(pass[c.id as usize], "{mode:?}: a failing row");
                if mode == IterativeScan::Strict {
                    assert!(c.distance >= previous, "{mode:?}: out of order");
                }
                previous = c.distance;
                rows.push(c.id);
            }
            let unique: HashSet<u32> = rows.iter().copied().collect();
            assert_eq!(unique.len(), rows.len(), "{mode:?}: a row twice");
            if mode == IterativeScan::Off {
                assert_eq!(rows.len(), EF, "one round gives ef rows");
                continue;
            }
            assert_eq!(rows.len(), 100, "{mode:?}: rows missing");
            total_recall += recall(&rows, &brute_force(&data.vectors, &passing, &query, 100));
        }
        if mode != IterativeScan::Off {
            let mean = total_recall / queries.len() as f64;
            eprintln!("{mode:?} {expansion:?}: recall@100 {mean:.4}");
            assert!(mean >= 0.9, "{mode:?} {expansion:?}: recall@100 {mean:.4}");
        }
    }
}

/// A test before the load that also accepts a fifth of the failing rows (fingerprints that
/// match by chance, far more often than 16 bits do) costs loads, never a wrong row or recall.
#[test]
#[cfg_attr(debug_assertions, ignore = "builds a 20k-row graph: run in release")]
fn false_matches_before_the_load_return_no_failing_row() {
    let mut data = data(20_000, 16, 60);
    for spread in [Spread::Uniform, Spread::Region] {
        let (pass, queries) = filter(&data, 0.01, spread, 5);
        let passing: Vec<u32> = (0..pass.len() as u32)
            .filter(|&i| pass[i as usize])
            .collect();
        let mut total = 0.0;
        let mut false_loads = 0;
        for &q in &queries {
            let query = data.queries[q].clone();
            let mut store = Filtered::new(&mut data.graph, &pass);
            store.may = |pass, id| pass[id as usize] || id.is_multiple_of(5);
            let params = FilterParams::new(Expansion::TwoHop);
            let (results, stats) = filtered_search(&mut store, &query, EF, &params);
            false_loads += stats.failing_loaded;
            let found: Vec<u32> = results.iter().take(K).map(|c| c.id).collect();
            assert!(
                found.iter().all(|&id| pass[id as usize]),
                "{spread:?}: a failing row"
            );
            assert_eq!(found.len(), K, "{spread:?}: rows missing");
            total += recall(&found, &brute_force(&data.vectors, &passing, &query, K));
        }
        let mean = total / queries.len() as f64;
        eprintln!("{spread:?}: recall {mean:.4}, false matches loaded {false_loads}");
        assert!(false_loads > 0, "{spread:?}: the false matches were loaded");
        assert!(mean >= 0.95, "{spread:?}: recall {mean:.4}");
    }
}

/// `max_scan_tuples` and the memory budget end an iterative filtered scan as they end pgvector's
/// iterative scan: the passing rows it loaded are handed out, nearest first, and no more; the
/// scan takes the scan lock around each round; settings changed between rows apply.
#[test]
#[cfg_attr(debug_assertions, ignore = "builds a 20k-row graph: run in release")]
fn filtered_scans_keep_their_budgets() {
    use vector_hnsw::filter::FilteredScan;
    let mut data = data(20_000, 16, 10);
    let (pass, queries) = filter(&data, 0.01, Spread::Uniform, 9);
    let query = data.queries[queries[0]].clone();
    let mut rows = |params: ScanParams, change: Option<ScanParams>| {
        let mut store = Filtered::new(&mut data.graph, &pass);
        let mut scan: FilteredScan<Filtered<'_>> =
            FilteredScan::new(query.clone(), params, FilterParams::new(Expansion::TwoHop));
        let mut n = 0;
        while let Some(c) = scan.next(&mut store) {
            assert!(pass[c.id as usize]);
            n += 1;
            if n == 5 {
                if let Some(p) = change {
                    scan.set_params(p);
                }
            }
        }
        assert_eq!(scan.out_of_memory(), None);
        (n, scan.tuples(), scan.memory_allocated())
    };
    let relaxed = ScanParams {
        ef_search: EF,
        mode: IterativeScan::Relaxed,
        ..ScanParams::default()
    };
    let (all, tuples, memory) = rows(relaxed, None);
    assert_eq!(all, 200, "an unbounded scan returns every passing row");
    assert!(
        tuples > 2_000 && memory > 0,
        "{tuples} tuples, {memory} bytes"
    );
    let (few, few_tuples, _) = rows(
        ScanParams {
            max_scan_tuples: 2_000,
            ..relaxed
        },
        None,
    );
    assert!(few < all && few >= EF, "{few} rows within 2,000 tuples");
    assert!(few_tuples < tuples);
    let (tight, _, _) = rows(
        ScanParams {
            max_memory: 1,
            ..relaxed
        },
        None,
    );
    assert!(tight >= EF && tight < all, "{tight} rows within 1 byte");
    let (off, _, _) = rows(
        ScanParams {
            ef_search: EF,
            ..ScanParams::default()
        },
        None,
    );
    assert_eq!(off, EF, "one round");
    let (switched, _, _) = rows(
        ScanParams {
            ef_search: EF,
            ..ScanParams::default()
        },
        Some(relaxed),
    );
    assert_eq!(
        switched, EF,
        "a scan started as one search kept nothing to resume"
    );
    let (stopped, _, _) = rows(
        relaxed,
        Some(ScanParams {
            ef_search: EF,
            ..ScanParams::default()
        }),
    );
    assert_eq!(stopped, EF, "iterative no more from the sixth row on");
    let locks = {
        let mut store = Filtered::new(&mut data.graph, &pass);
        let mut scan: FilteredScan<Filtered<'_>> =
            FilteredScan::new(query.clone(), relaxed, FilterParams::new(Expansion::TwoHop));
        while scan.next(&mut store).is_some() {}
        store.locks
    };
    assert!(locks > 1 && locks % 2 == 0, "{locks} lock calls, paired");
}
