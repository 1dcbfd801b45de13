//! Recall of an hnsw graph built and searched on codes alone (the index's design), with an
//! exact rerank of the candidates, against brute force and against the same graph algorithm
//! on exact distances.

mod common;

use common::{clustered, mean};
use vector_hnsw::level::{draw_level, SplitMix64};
use vector_hnsw::memory::{l2_squared, InMemoryGraph};
use vector_hnsw::storage::{
    Candidate, EntryPoint, EntryUpdate, GraphStore, GraphWrite, NewElement, Slot,
};
use vector_hnsw::{insert, search, search_with, GraphParams};
use vector_rabitq::{Factors, Metric, Quantizer, QueryCode};

/// A query: a vector being inserted or searched for, or a stored element.
#[derive(Clone)]
enum Value {
    New {
        query: QueryCode,
        code: Vec<u8>,
        factors: Factors,
    },
    Stored(u32),
}

/// A graph whose elements are codes only.
struct CodeGraph {
    q: Quantizer,
    codes: Vec<(Vec<u8>, Factors)>,
    levels: Vec<u8>,
    layers: Vec<Vec<Vec<u32>>>,
    entry: Option<EntryPoint<u32>>,
    m: usize,
}

impl CodeGraph {
    fn new(q: Quantizer, m: usize) -> Self {
        CodeGraph {
            q,
            codes: Vec::new(),
            levels: Vec::new(),
            layers: Vec::new(),
            entry: None,
            m,
        }
    }

    fn new_value(&self, v: &[f32]) -> Value {
        let mut code = vec![0u8; self.q.code_bytes()];
        let factors = self.q.encode(v, &mut code);
        Value::New {
            query: self.q.prepare(v),
            code,
            factors,
        }
    }

    fn capacity(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    fn stored(&self, id: u32) -> (&[u8], &Factors) {
        let (code, f) = &self.codes[id as usize];
        (code, f)
    }

    fn candidate(&self, id: u32, distance: f64) -> Candidate<u32, ()> {
        Candidate {
            id,
            distance,
            level: self.levels[id as usize],
            live: true,
            meta: (),
        }
    }
}

impl GraphStore for CodeGraph {
    type Id = u32;
    type Meta = ();
    type Value = Value;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.entry
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        if let Some(list) = self.layers[element.id as usize].get(usize::from(layer)) {
            out.extend_from_slice(list);
        }
    }

    fn load(&mut self, query: &Value, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        for &id in ids {
            let (code, f) = self.stored(id);
            let distance = match query {
                Value::New { query, .. } => self.q.distance(query, code, f),
                Value::Stored(a) => self.q.pair_distance(self.stored(*a), (code, f)),
            };
            out.push(self.candidate(id, distance));
        }
    }
}

impl vector_hnsw::LinkBack for CodeGraph {}

impl GraphWrite for CodeGraph {
    type HeapTid = u64;
    type ValueRef = u32;

    fn value(&mut self, element: &Candidate<u32, ()>) -> Value {
        Value::Stored(element.id)
    }

    fn value_ref(&mut self, element: &Candidate<u32, ()>) -> u32 {
        element.id
    }

    fn ref_distance(&self, a: u32, b: u32) -> f64 {
        self.q.pair_distance(self.stored(a), self.stored(b))
    }

    fn add_element(
        &mut self,
        element: &NewElement<Value, u64>,
        neighbors: &[Vec<Candidate<u32, ()>>],
    ) -> Candidate<u32, ()> {
        let Value::New { code, factors, .. } = &element.value else {
            panic!("only new vectors are added");
        };
        let id = self.codes.len() as u32;
        self.codes.push((code.clone(), *factors));
        self.levels.push(element.level);
        let layers = (0..=usize::from(element.level))
            .map(|layer| {
                let mut ids: Vec<u32> = neighbors
                    .get(layer)
                    .map(|l| l.iter().map(|c| c.id).collect())
                    .unwrap_or_default();
                ids.truncate(self.capacity(layer));
                ids
            })
            .collect();
        self.layers.push(layers);
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
        let capacity = self.capacity(usize::from(layer));
        let Some(list) = self.layers[element.id as usize].get_mut(usize::from(layer)) else {
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

    fn write_neighbors(&mut self, _: &Candidate<u32, ()>, _: &[Vec<u32>]) {
        unreachable!("no repair in these tests");
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
}

fn exact_top(data: &[Vec<f32>], query: &[f32], k: usize) -> Vec<u32> {
    let mut all: Vec<(f64, u32)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| (l2_squared(query, v), i as u32))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, i)| i).collect()
}

fn recall(found: &[u32], truth: &[u32]) -> f64 {
    found.iter().filter(|id| truth.contains(id)).count() as f64 / truth.len() as f64
}

const PARAMS: GraphParams = GraphParams {
    m: 16,
    ef_construction: 64,
};

/// Mean recall@10 of the code graph (every candidate of the search reranked exactly), and of
/// the exact graph, at `ef`.
fn recalls(bits: u32, n: usize, dims: usize, ef: usize) -> (f64, f64) {
    let data = clustered(n + 100, dims, 40, 0.6, 77);
    let (rows, queries) = data.split_at(n);
    let quantizer = Quantizer::new(dims, bits, Metric::L2Squared, mean(rows), 5);
    let mut graph = CodeGraph::new(quantizer, PARAMS.m);
    let mut levels = SplitMix64::new(6);
    for (i, v) in rows.iter().enumerate() {
        let level = draw_level(&mut || levels.next_f64(), PARAMS.m);
        let value = graph.new_value(v);
        let element = NewElement {
            value,
            heap_tid: i as u64,
            level,
        };
        insert(&mut graph, element, &PARAMS);
    }
    let owned: Vec<Vec<f32>> = rows.to_vec();
    let mut levels = SplitMix64::new(6);
    let mut exact = InMemoryGraph::build(&owned, &PARAMS, l2_squared, &mut || levels.next_f64()).0;

    let (mut quantized_recall, mut exact_recall) = (0.0, 0.0);
    for query in queries {
        let truth = exact_top(rows, query, 10);
        let value = graph.new_value(query);
        // pgvector's greedy descent: the codes' errors are what this compares, and a wider
        // descent finds all of these small clusters' neighbors with either distance.
        let (candidates, _) = search_with(&mut graph, &value, ef, 1, 1);
        let mut reranked: Vec<(f64, u32)> = candidates
            .iter()
            .map(|c| (l2_squared(query, &rows[c.id as usize]), c.id))
            .collect();
        reranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let found: Vec<u32> = reranked.iter().take(10).map(|&(_, id)| id).collect();
        quantized_recall += recall(&found, &truth);
        let (candidates, _) = search_with(&mut exact, &query.to_vec(), ef, 1, 1);
        let found: Vec<u32> = candidates.iter().take(10).map(|c| c.id).collect();
        exact_recall += recall(&found, &truth);
    }
    let q = queries.len() as f64;
    (quantized_recall / q, exact_recall / q)
}

/// Real embeddings for the analyses below: float32 rows of `RABITQ_DIMS` (384) dimensions from
/// the file `RABITQ_DATA`, without duplicates (so that every graph has one element per row), the
/// first `RABITQ_N` (20,000) and `queries` more. `None` without `RABITQ_DATA`.
fn real_rows(queries: usize) -> Option<(usize, usize, Vec<Vec<f32>>)> {
    let path = std::env::var("RABITQ_DATA").ok()?;
    let dims: usize = std::env::var("RABITQ_DIMS").map_or(384, |d| d.parse().unwrap());
    let n: usize = std::env::var("RABITQ_N").map_or(20000, |d| d.parse().unwrap());
    let bytes = std::fs::read(path).unwrap();
    let floats: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let rows = floats
        .chunks_exact(dims)
        .filter(|r| seen.insert(r.iter().map(|x| x.to_bits()).collect::<Vec<_>>()))
        .take(n + queries)
        .map(|r| r.to_vec())
        .collect();
    Some((dims, n, rows))
}

/// The exact graph's links over `quantizer`'s codes of `rows`: the exact graph walked on codes.
fn links_over_codes(exact: &InMemoryGraph, rows: &[Vec<f32>], quantizer: &Quantizer) -> CodeGraph {
    let mut walked = CodeGraph::new(quantizer.clone(), PARAMS.m);
    for (i, v) in rows.iter().enumerate() {
        let mut code = vec![0u8; quantizer.code_bytes()];
        let f = quantizer.encode(v, &mut code);
        walked.codes.push((code, f));
        walked.levels.push(exact.level(i as u32));
        walked.layers.push(exact.layers(i as u32).to_vec());
    }
    walked.entry = exact.entry();
    walked
}

/// Where recall goes, on real embeddings (`RABITQ_DATA`: float32 rows, `RABITQ_DIMS`): the graph
/// built on codes or on exact distances, walked on codes (then reranked) or exactly.
/// `cargo test --release -p vector-rabitq --test graph -- --ignored --nocapture where_recall_goes`
#[test]
#[ignore]
fn where_recall_goes() {
    let Some((dims, n, rows)) = real_rows(200) else {
        return;
    };
    let (rows, queries) = rows.split_at(n);
    let owned = rows.to_vec();
    let mut levels = SplitMix64::new(6);
    let mut exact = InMemoryGraph::build(&owned, &PARAMS, l2_squared, &mut || levels.next_f64()).0;
    for bits in [1u32, 2, 4] {
        let quantizer = Quantizer::new(dims, bits, Metric::L2Squared, mean(rows), 5);
        let mut coded = CodeGraph::new(quantizer.clone(), PARAMS.m);
        let mut levels = SplitMix64::new(6);
        for (i, v) in rows.iter().enumerate() {
            let level = draw_level(&mut || levels.next_f64(), PARAMS.m);
            let value = coded.new_value(v);
            insert(
                &mut coded,
                NewElement {
                    value,
                    heap_tid: i as u64,
                    level,
                },
                &PARAMS,
            );
        }
        // The exact graph's links walked on codes: a code graph with its lists.
        let mut walked = links_over_codes(&exact, rows, &quantizer);
        // The code graph's links walked exactly.
        let nodes = coded
            .levels
            .iter()
            .copied()
            .zip(coded.layers.iter().cloned())
            .collect();
        let mut exact_walk =
            InMemoryGraph::from_parts(PARAMS.m, l2_squared, owned.clone(), nodes, coded.entry);
        for ef in [40usize, 80] {
            let mut r = [0.0f64; 4];
            for query in queries {
                let truth = exact_top(rows, query, 10);
                let (c, _) = search(&mut exact, &query.to_vec(), ef);
                r[0] += recall(&c.iter().take(10).map(|c| c.id).collect::<Vec<_>>(), &truth);
                for (k, g) in [(1, &mut coded), (2, &mut walked)] {
                    let value = g.new_value(query);
                    let (c, _) = search(g, &value, ef);
                    let mut rr: Vec<(f64, u32)> = c
                        .iter()
                        .map(|c| (l2_squared(query, &rows[c.id as usize]), c.id))
                        .collect();
                    rr.sort_by(|a, b| a.0.total_cmp(&b.0));
                    r[k] += recall(&rr.iter().take(10).map(|x| x.1).collect::<Vec<_>>(), &truth);
                }
                let (c, _) = search(&mut exact_walk, &query.to_vec(), ef);
                r[3] += recall(&c.iter().take(10).map(|c| c.id).collect::<Vec<_>>(), &truth);
            }
            let q = queries.len() as f64;
            println!(
                "bits {bits} ef {ef}: exact graph+walk {:.4}, code graph+code walk {:.4}, exact graph+code walk {:.4}, code graph+exact walk {:.4}",
                r[0] / q, r[1] / q, r[2] / q, r[3] / q
            );
        }
    }
}

/// Clustered points are the hard case for codes: within a cluster every point is about as far
/// as any other, so small errors reorder them. Four bits find what exact distances find; one
/// and two bits find less at the same `ef`, and more with more bits or a larger `ef`.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "6,000 rows: the graphs a debug build can make in time are too easy to tell the widths apart"
)]
fn code_graphs_with_a_rerank_find_what_exact_graphs_find() {
    let n = 6000;
    let (four, exact) = recalls(4, n, 128, 40);
    assert!(
        four >= exact - 0.01,
        "4 bits: recall@10 {four} against exact {exact}"
    );
    let (one, _) = recalls(1, n, 128, 40);
    let (one_wider, _) = recalls(1, n, 128, 80);
    let (two, _) = recalls(2, n, 128, 40);
    assert!(one > 0.5, "1 bit: {one}");
    assert!(
        one_wider > one + 0.05,
        "1 bit: {one} at ef 40, {one_wider} at 80"
    );
    assert!(two > one + 0.05, "1 bit {one}, 2 bits {two}");
    assert!(four > two, "2 bits {two}, 4 bits {four}");
}

/// Whether candidates the walk dropped would raise recall if the rerank also took them, on real
/// embeddings (`RABITQ_DATA`, `RABITQ_DIMS`, `RABITQ_N`, `RABITQ_BITS`): the exact graph walked
/// on codes, its candidates W reranked lazily in lower-bound order (16 at a time, the scan's
/// rule, bounds at the index's 4 deviations) against a pool of W and every layer-0 neighbor of
/// W (nearly all the walk compared), reranked lazily and all of it exactly. Checks that the lazy
/// rerank finds what a full rerank of the same candidates finds.
/// `cargo test --release -p vector-rabitq --test graph -- --ignored --nocapture dropped_candidates`
#[test]
#[ignore]
fn dropped_candidates() {
    let Some((dims, n, rows)) = real_rows(300) else {
        return;
    };
    let bits: u32 = std::env::var("RABITQ_BITS").map_or(2, |d| d.parse().unwrap());
    let (rows, queries) = rows.split_at(n);
    let owned = rows.to_vec();
    let mut levels = SplitMix64::new(6);
    let mut exact = InMemoryGraph::build(&owned, &PARAMS, l2_squared, &mut || levels.next_f64()).0;
    let quantizer = Quantizer::new(dims, bits, Metric::L2Squared, mean(rows), 5);
    let mut walked = links_over_codes(&exact, rows, &quantizer);
    let top10 = |mut found: Vec<(f64, u32)>| -> Vec<u32> {
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.iter().take(10).map(|x| x.1).collect()
    };
    // The scan's lazy rerank of `(lower bound, id)`: the 10 found and the rows read.
    let lazy = |mut pool: Vec<(f64, u32)>, query: &[f32]| -> (Vec<u32>, usize) {
        pool.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut done: Vec<(f64, u32)> = Vec::new();
        let mut at = 0;
        while at < pool.len() {
            let end = (at + 16).min(pool.len());
            done.extend(
                pool[at..end]
                    .iter()
                    .map(|&(_, id)| (l2_squared(query, &rows[id as usize]), id)),
            );
            at = end;
            done.sort_by(|a, b| a.0.total_cmp(&b.0));
            if done.len() >= 10 && (at == pool.len() || done[9].0 <= pool[at].0) {
                break;
            }
        }
        (top10(done), at)
    };
    for ef in [20usize, 40, 60] {
        let mut r = [0.0f64; 4];
        let (mut reads_w, mut reads_pool, mut pool_size) = (0, 0, 0);
        let (mut batches_w, mut mismatches) = (0, 0);
        for query in queries {
            let truth = exact_top(rows, query, 10);
            let (c, _) = search(&mut exact, &query.to_vec(), ef);
            r[0] += recall(&c.iter().take(10).map(|c| c.id).collect::<Vec<_>>(), &truth);
            let value = walked.new_value(query);
            let Value::New {
                query: code_query, ..
            } = &value
            else {
                unreachable!("a new value")
            };
            let (w, _) = search(&mut walked, &value, ef);
            let lower = |id: u32| {
                let (code, f) = walked.stored(id);
                quantizer.distance(code_query, code, f) - quantizer.error_bound(code_query, f, 4.0)
            };
            let (found, reads) = lazy(w.iter().map(|c| (lower(c.id), c.id)).collect(), query);
            let everything = |ids: &mut dyn Iterator<Item = u32>| {
                top10(
                    ids.map(|id| (l2_squared(query, &rows[id as usize]), id))
                        .collect(),
                )
            };
            mismatches += usize::from(found != everything(&mut w.iter().map(|c| c.id)));
            r[1] += recall(&found, &truth);
            reads_w += reads;
            batches_w += reads.div_ceil(16);
            let mut pool: Vec<u32> = w.iter().map(|c| c.id).collect();
            for c in &w {
                pool.extend_from_slice(exact.layers(c.id).first().map_or(&[][..], |l| l));
            }
            pool.sort_unstable();
            pool.dedup();
            pool_size += pool.len();
            let (found, reads) = lazy(pool.iter().map(|&id| (lower(id), id)).collect(), query);
            r[2] += recall(&found, &truth);
            reads_pool += reads;
            let all = everything(&mut pool.iter().copied());
            mismatches += usize::from(found != all);
            r[3] += recall(&all, &truth);
        }
        let q = queries.len() as f64;
        println!(
            "{bits}-bit ef {ef}: exact walk {:.4}; W lazily {:.4} ({:.1} rows read in {:.2} batches); pool of {:.0} lazily {:.4} ({:.1} read), all {:.4}",
            r[0] / q, r[1] / q, reads_w as f64 / q, batches_w as f64 / q, pool_size as f64 / q, r[2] / q, reads_pool as f64 / q, r[3] / q
        );
        // The lazy rerank returns what reranking everything returns, but where a bound fails
        // (4 deviations: about 6 in 100,000 estimates).
        assert!(
            mismatches * 100 <= queries.len(),
            "{mismatches} of {} lazy reranks differ from a full one",
            2 * queries.len()
        );
    }
}
