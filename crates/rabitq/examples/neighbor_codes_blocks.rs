//! Design study: the index blocks a cold query would read if every graph node carried its
//! neighbors' codes beside its links, against the layouts the index has today.
//!
//! ```sh
//! cargo run --release -p vector-rabitq --example neighbor_codes_blocks -- ROWS DIMS F32_FILE
//! ```
//!
//! F32_FILE holds little-endian float32 rows of DIMS values: the first ROWS distinct rows are
//! the table, the 300 after them the queries (l2; unit rows make it cosine). One exact graph (m 16,
//! `ef_construction` 64) stands in for every layout's, since the quantized build links on 8-bit
//! codes; it is cached in `/tmp` between runs. Each layout packs the same graph into 8 kB pages
//! with the build's placement and tuple sizes from `vector_formats`, and each query's walk
//! counts the distinct pages it touches (a cold query with a cache larger than its reads):
//!
//! - `pgvector`: full vectors in the elements, pgvector's order (newest first);
//! - `ours`: full vectors, graph neighbors placed together;
//! - `rabitq4`: today's quantized format, each element holding its own 4-bit code record, the
//!   full vectors on vector pages for the rerank;
//! - `neighbor codes N`: each node's tuple holds its heap TIDs, its own code and, per link, the
//!   neighbor's TID, its N-bit code and factors; a hop reads the expanded node's tuple only.
//!
//! Quantized layouts rerank as the scan does: in order of lower bound, 16 at a time, until 10
//! rows are certain.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};
use std::io::{Read, Write};

use vector_formats::hnsw::{element_tuple_size, neighbor_tuple_size, MAX_ITEM_SIZE, OPAQUE_SIZE};
use vector_formats::hnsw_codes::CodeRecord;
use vector_formats::page::{maxalign, BLCKSZ, ITEM_ID_SIZE, PAGE_HEADER_SIZE};
use vector_hnsw::memory::{l2_squared, InMemoryGraph};
use vector_hnsw::placement::{shared_lists_first, PagePacker};
use vector_hnsw::{EntryPoint, GraphParams};
use vector_rabitq::{Factors, Metric, Quantizer, QueryCode};

const K: usize = 10;
const QUERIES: usize = 300;
const RERANK_BATCH: usize = 16;
/// The error bound's multiple of the estimator's deviation (the index's `CONFIDENCE`).
const CONFIDENCE: f64 = 4.0;
/// Per link of a node with neighbor codes: the TID and the factors (norm, scale, error,
/// centroid dot, level sum).
const LINK_OVERHEAD: usize = 6 + 20;
/// A node's tuple besides its links: pgvector's element header and its vector's TID.
const NODE_HEADER: usize = 72 + 8;
const PAGE_SPACE: usize = BLCKSZ - PAGE_HEADER_SIZE - OPAQUE_SIZE;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn read_rows(path: &str, dims: usize, rows: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("F32_FILE");
    // Without duplicates, so that the graph has one element per row.
    let mut seen = HashSet::new();
    let all: Vec<Vec<f32>> = bytes
        .chunks_exact(4 * dims)
        .filter(|row| seen.insert(row.to_vec()))
        .take(rows)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect();
    assert_eq!(all.len(), rows, "{path} has fewer than {rows} rows");
    all
}

/// The exact graph, from the cache when an earlier run built it.
fn graph(vectors: &[Vec<f32>], cache: &str) -> InMemoryGraph {
    let params = GraphParams {
        m: 16,
        ef_construction: 64,
    };
    if let Ok(mut f) = std::fs::File::open(cache) {
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).unwrap();
        let mut words = bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()));
        let mut next = || words.next().unwrap();
        let entry = EntryPoint {
            id: next(),
            level: next() as u8,
        };
        let nodes = (0..vectors.len())
            .map(|_| {
                let level = next() as u8;
                let layers = (0..=level)
                    .map(|_| {
                        let n = next();
                        (0..n).map(|_| next()).collect()
                    })
                    .collect();
                (level, layers)
            })
            .collect();
        return InMemoryGraph::from_parts(16, l2_squared, vectors.to_vec(), nodes, Some(entry));
    }
    let t = std::time::Instant::now();
    let mut rng = SplitMix64(7);
    let graph = InMemoryGraph::build(vectors, &params, l2_squared, &mut || rng.next_f64()).0;
    eprintln!("built the graph in {:.0?}", t.elapsed());
    let entry = graph.entry().unwrap();
    let mut words = vec![entry.id, u32::from(entry.level)];
    for id in 0..vectors.len() as u32 {
        words.push(u32::from(graph.level(id)));
        for list in graph.layers(id) {
            words.push(list.len() as u32);
            words.extend_from_slice(list);
        }
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::File::create(cache)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    graph
}

/// Where each element's tuples are: the same packing rules as the build's write-out.
struct Pages {
    /// Tuple sizes of each element: (element or node, neighbor tuple or 0).
    sizes: Vec<(usize, usize)>,
    exact_free: usize,
    block: u32,
    element: Vec<u32>,
    neighbors: Vec<u32>,
    /// Pages a node's tuple spans when it is larger than a page (the study's assumption: the
    /// rest of such a node goes on pages of its own that a hop reads with it).
    span: Vec<u32>,
}

impl Pages {
    fn new(sizes: Vec<(usize, usize)>) -> Self {
        let n = sizes.len();
        Pages {
            sizes,
            exact_free: PAGE_SPACE,
            block: 1,
            element: vec![0; n],
            neighbors: vec![0; n],
            span: vec![1; n],
        }
    }

    fn free(&self) -> usize {
        self.exact_free.saturating_sub(ITEM_ID_SIZE)
    }

    fn new_page(&mut self) {
        self.block += 1;
        self.exact_free = PAGE_SPACE;
    }
}

impl PagePacker for Pages {
    fn fits(&self, i: u32) -> bool {
        let (e, n) = self.sizes[i as usize];
        if e > MAX_ITEM_SIZE {
            return false;
        }
        let together = e + n + ITEM_ID_SIZE <= MAX_ITEM_SIZE;
        self.free() >= e && !(together && self.free() < e + n + ITEM_ID_SIZE)
    }

    fn place(&mut self, i: u32) {
        let (e, n) = self.sizes[i as usize];
        if e > MAX_ITEM_SIZE {
            self.new_page();
            self.element[i as usize] = self.block;
            self.neighbors[i as usize] = self.block;
            let pages = e.div_ceil(PAGE_SPACE - ITEM_ID_SIZE);
            self.span[i as usize] = pages as u32;
            self.block += pages as u32 - 1;
            self.new_page();
            return;
        }
        if !self.fits(i) {
            self.new_page();
        }
        self.element[i as usize] = self.block;
        self.exact_free -= e + ITEM_ID_SIZE;
        if n > 0 {
            if self.free() < n {
                self.new_page();
            }
            self.neighbors[i as usize] = self.block;
            self.exact_free -= n + ITEM_ID_SIZE;
        } else {
            self.neighbors[i as usize] = self.block;
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Full,
    OwnCodes,
    NeighborCodes,
}

struct Layout {
    name: String,
    kind: Kind,
    pages: Pages,
    /// Vector page of each element (quantized layouts), in placement order.
    vector_page: Vec<u32>,
    vector_blocks: u32,
    quantizer: Option<Quantizer>,
    codes: Vec<(Vec<u8>, Factors)>,
}

fn layout(
    name: &str,
    kind: Kind,
    graph: &InMemoryGraph,
    vectors: &[Vec<f32>],
    bits: u32,
    centroid: &[f32],
    neighbors_placed: bool,
) -> Layout {
    let dims = vectors[0].len();
    let m = graph.m();
    let n = vectors.len() as u32;
    let quantizer = match kind {
        Kind::Full => None,
        _ => Some(Quantizer::new(
            dims,
            bits,
            Metric::L2Squared,
            centroid.to_vec(),
            11,
        )),
    };
    let code_len = quantizer.as_ref().map_or(0, |q| q.code_bytes());
    let sizes = (0..n)
        .map(|i| {
            let level = graph.level(i);
            match kind {
                Kind::Full => (
                    element_tuple_size(8 + 4 * dims),
                    neighbor_tuple_size(level, m),
                ),
                Kind::OwnCodes => (
                    element_tuple_size(CodeRecord::size(code_len)),
                    neighbor_tuple_size(level, m),
                ),
                Kind::NeighborCodes => {
                    let links = (usize::from(level) + 2) * m;
                    let own = 20 + code_len;
                    (
                        maxalign(NODE_HEADER + own + links * (LINK_OVERHEAD + code_len)),
                        0,
                    )
                }
            }
        })
        .collect();
    let mut pages = Pages::new(sizes);
    let order: Vec<u32> = if neighbors_placed {
        shared_lists_first(
            n,
            |i, out| out.extend_from_slice(graph.neighbor_ids(i, 0)),
            &mut pages,
        )
        .unwrap()
    } else {
        let order: Vec<u32> = (0..n).rev().collect();
        for &i in &order {
            pages.place(i);
        }
        order
    };
    let mut vector_page = vec![0; n as usize];
    let mut vector_blocks = 0;
    let mut codes = Vec::new();
    if let Some(q) = &quantizer {
        let per_page = PAGE_SPACE / (maxalign(8 + 8 + 4 * dims) + ITEM_ID_SIZE);
        for (k, &i) in order.iter().enumerate() {
            vector_page[i as usize] = (k / per_page) as u32;
        }
        vector_blocks = (order.len().div_ceil(per_page)) as u32;
        codes = vectors
            .iter()
            .map(|v| {
                let mut code = vec![0u8; q.code_bytes()];
                let f = q.encode(v, &mut code);
                (code, f)
            })
            .collect();
    }
    Layout {
        name: name.to_string(),
        kind,
        pages,
        vector_page,
        vector_blocks,
        quantizer,
        codes,
    }
}

#[derive(Clone, Copy, PartialEq)]
struct Near(f64, u32);

impl Eq for Near {}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// What one query read and found.
#[derive(Default)]
struct Outcome {
    graph_blocks: usize,
    vector_blocks: usize,
    found: Vec<u32>,
}

struct Walk<'a> {
    layout: &'a Layout,
    graph: &'a InMemoryGraph,
    vectors: &'a [Vec<f32>],
    query: &'a [f32],
    prepared: Option<QueryCode>,
    read: HashSet<u32>,
}

impl Walk<'_> {
    fn read_element(&mut self, id: u32) {
        self.read.insert(self.layout.pages.element[id as usize]);
    }

    fn read_node(&mut self, id: u32) {
        let first = self.layout.pages.neighbors[id as usize];
        for b in first..first + self.layout.pages.span[id as usize] {
            self.read.insert(b);
        }
    }

    /// The walk's distance to `id` (exact, or the estimate from a code).
    fn distance(&self, id: u32) -> f64 {
        match (&self.layout.quantizer, &self.prepared) {
            (Some(q), Some(p)) => {
                let (code, f) = &self.layout.codes[id as usize];
                q.distance(p, code, f)
            }
            _ => l2_squared(self.query, &self.vectors[id as usize]),
        }
    }

    fn lower_bound(&self, id: u32, estimate: f64) -> f64 {
        let q = self.layout.quantizer.as_ref().unwrap();
        let (_, f) = &self.layout.codes[id as usize];
        estimate - q.error_bound(self.prepared.as_ref().unwrap(), f, CONFIDENCE)
    }

    /// Distances of the neighbors a hop finds: each one's element is read, unless the expanded
    /// node holds their codes.
    fn reach(&mut self, id: u32) -> f64 {
        if !matches!(self.layout.kind, Kind::NeighborCodes) {
            self.read_element(id);
        }
        self.distance(id)
    }

    fn expand(&mut self, id: u32) {
        match self.layout.kind {
            Kind::NeighborCodes => self.read_node(id),
            _ => {
                self.read.insert(self.layout.pages.neighbors[id as usize]);
            }
        }
    }

    fn search_layer(&mut self, entry: Near, ef: usize, layer: u8) -> Vec<Near> {
        let mut visited = HashSet::new();
        visited.insert(entry.1);
        let mut candidates = BinaryHeap::new();
        candidates.push(std::cmp::Reverse(entry));
        let mut results = BinaryHeap::new();
        results.push(entry);
        while let Some(std::cmp::Reverse(c)) = candidates.pop() {
            if results.len() >= ef && c.0 > results.peek().map_or(f64::INFINITY, |f: &Near| f.0) {
                break;
            }
            self.expand(c.1);
            let graph = self.graph;
            for &next in graph.neighbor_ids(c.1, layer) {
                if !visited.insert(next) {
                    continue;
                }
                let d = self.reach(next);
                let furthest = results.peek().map_or(f64::INFINITY, |f: &Near| f.0);
                if results.len() < ef || d < furthest {
                    candidates.push(std::cmp::Reverse(Near(d, next)));
                    results.push(Near(d, next));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
        results.into_sorted_vec()
    }

    fn run(mut self, ef: usize) -> Outcome {
        let entry = self.graph.entry().unwrap();
        if let Some(q) = &self.layout.quantizer {
            self.prepared = Some(q.prepare(self.query));
        }
        self.read_node(entry.id);
        self.read_element(entry.id);
        let mut at = Near(self.distance(entry.id), entry.id);
        for layer in (1..=entry.level).rev() {
            at = self.search_layer(at, 1, layer)[0];
        }
        let found = self.search_layer(at, ef, 0);
        let graph_blocks = self.read.len();
        if self.layout.quantizer.is_none() {
            return Outcome {
                graph_blocks,
                vector_blocks: 0,
                found: found.iter().take(K).map(|n| n.1).collect(),
            };
        }
        // The lazy rerank: smallest lower bound first, a batch at a time, until K are certain.
        let mut waiting: Vec<Near> = found
            .iter()
            .map(|n| Near(self.lower_bound(n.1, n.0), n.1))
            .collect();
        waiting.sort_by(|a, b| b.cmp(a));
        let mut ready: Vec<Near> = Vec::new();
        let mut out = Vec::new();
        let mut vector_reads = HashSet::new();
        while out.len() < K {
            let bound = waiting.last().map_or(f64::INFINITY, |w| w.0);
            ready.sort_by(|a, b| b.cmp(a));
            if ready.last().is_some_and(|r| r.0 <= bound) {
                out.push(ready.pop().unwrap().1);
                continue;
            }
            if waiting.is_empty() {
                break;
            }
            for _ in 0..RERANK_BATCH {
                let Some(w) = waiting.pop() else { break };
                vector_reads.insert(self.layout.vector_page[w.1 as usize]);
                ready.push(Near(
                    l2_squared(self.query, &self.vectors[w.1 as usize]),
                    w.1,
                ));
            }
        }
        // The rows returned need their heap TIDs, in their elements.
        for &id in &out {
            self.read_element(id);
        }
        Outcome {
            graph_blocks: self.read.len(),
            vector_blocks: vector_reads.len(),
            found: out,
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().expect("ROWS").parse().unwrap();
    let dims: usize = args.next().expect("DIMS").parse().unwrap();
    let file = args.next().expect("F32_FILE");
    let efs: Vec<usize> = args.next().map_or(vec![20, 40, 80, 160], |s| {
        s.split(',').map(|x| x.parse().unwrap()).collect()
    });
    let all = read_rows(&file, dims, rows + QUERIES);
    let (vectors, queries) = all.split_at(rows);
    let cache = format!(
        "/tmp/neighbor-codes-graph-{rows}x{dims}-{}.bin",
        std::path::Path::new(&file)
            .file_name()
            .unwrap()
            .to_string_lossy()
    );
    let graph = graph(vectors, &cache);
    let mut centroid = vec![0f64; dims];
    for v in vectors {
        for (c, x) in centroid.iter_mut().zip(v) {
            *c += f64::from(*x);
        }
    }
    let centroid: Vec<f32> = centroid.iter().map(|c| (c / rows as f64) as f32).collect();
    let truth: Vec<Vec<u32>> = queries
        .iter()
        .map(|q| {
            let mut all: Vec<Near> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| Near(l2_squared(q, v), i as u32))
                .collect();
            all.sort();
            all.iter().take(K).map(|n| n.1).collect()
        })
        .collect();
    let mut layouts = vec![
        layout("pgvector", Kind::Full, &graph, vectors, 0, &centroid, false),
        layout("ours", Kind::Full, &graph, vectors, 0, &centroid, true),
        layout(
            "rabitq4",
            Kind::OwnCodes,
            &graph,
            vectors,
            4,
            &centroid,
            true,
        ),
    ];
    for bits in [1, 2, 4] {
        let name = format!("neighbor codes {bits}");
        let kind = Kind::NeighborCodes;
        layouts.push(layout(&name, kind, &graph, vectors, bits, &centroid, true));
    }
    println!("{rows} rows x {dims} dimensions of {file}, {QUERIES} queries, m 16\n");
    println!(
        "| layout | graph MB | vectors MB | ef_search | recall@10 | graph blocks / q | rerank blocks / q | ÷ pgvector at 40 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut reference = None;
    for l in &layouts {
        for &ef in &efs {
            let (mut graph_blocks, mut vector_blocks, mut hits) = (0, 0, 0);
            for (q, t) in queries.iter().zip(&truth) {
                let o = Walk {
                    layout: l,
                    graph: &graph,
                    vectors,
                    query: q,
                    prepared: None,
                    read: HashSet::new(),
                }
                .run(ef);
                graph_blocks += o.graph_blocks;
                vector_blocks += o.vector_blocks;
                hits += o.found.iter().filter(|id| t.contains(id)).count();
            }
            let nq = queries.len() as f64;
            let total = (graph_blocks + vector_blocks) as f64 / nq;
            if l.name == "pgvector" && ef == 40 {
                reference = Some(total);
            }
            println!(
                "| {} | {:.1} | {:.1} | {ef} | {:.4} | {:.1} | {:.1} | {} |",
                l.name,
                f64::from(l.pages.block) * 8192.0 / 1e6,
                f64::from(l.vector_blocks) * 8192.0 / 1e6,
                hits as f64 / (nq * K as f64),
                graph_blocks as f64 / nq,
                vector_blocks as f64 / nq,
                reference.map_or("—".to_string(), |r| format!("{:.2}", total / r)),
            );
        }
    }
}
