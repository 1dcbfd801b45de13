//! Design study: the index blocks a cold query reads under the layouts the quantized index has
//! today, with its neighbor tuples on pages apart from its element tuples, or with every node
//! carrying its neighbors' codes beside its links.
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example neighbor_codes_blocks -- \
//!     ROWS DIMS F32_FILE [EF,EF,...] [CACHE_MB] [BEAM,BEAM,...]
//! ```
//!
//! F32_FILE holds little-endian float32 rows of DIMS values: the first ROWS distinct rows are
//! the table, the 300 after them the queries (l2; unit rows make it cosine). One exact graph (m
//! 16, `ef_construction` 64) stands in for every layout's, since the quantized build links on
//! 8-bit codes; it is cached in `/tmp` between runs. Each layout packs the same graph into 8 kB
//! pages with the build's placement and tuple sizes from `vector_formats`:
//!
//! - `pgvector`: full vectors in the elements, pgvector's order (newest first);
//! - `ours`: full vectors, graph neighbors placed together;
//! - `rabitqN`: today's quantized format, each element holding its own N-bit code record, the
//!   full vectors on vector pages for the rerank;
//! - `rabitqN, links apart`: the same tuples, but the element tuples (the codes) packed on
//!   pages of their own and the neighbor tuples on others, in the same order;
//! - `neighbor codes N`: each node's tuple holds its heap TIDs, its own code and, per link, the
//!   neighbor's TID, its N-bit code and factors; a hop reads the expanded node's tuple only.
//!
//! A page cache of CACHE_MB (least recently used out) is shared by the queries, empty at the
//! first, as shared buffers are in `peers.py`'s cold runs; with 0 every query starts cold.
//! Reads are the cache's misses. Round trips count the reads a query waits for one after the
//! other: the expanded nodes' pages, then their neighbors' pages requested together, and each
//! rerank batch. With a BEAM wider than 1, a round expands that many candidates, as
//! `hnsw.beam_width` does (layer 0 only; pgvector's layout is walked one at a time).
//! Quantized layouts rerank as the scan does: in order of lower bound, 16 at a time, until 10
//! rows are certain.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::io::{Read, Write};

use vector_formats::hnsw::{
    element_tuple_size, neighbor_tuple_size, ELEMENT_HEADER_SIZE, MAX_ITEM_SIZE, OPAQUE_SIZE,
};
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
const NODE_HEADER: usize = ELEMENT_HEADER_SIZE + 8;
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
    /// Neighbor tuples on pages of their own (numbered from [`LINK_PAGES`]), so that the
    /// element pages hold codes only.
    split: bool,
    link_free: usize,
    link_block: u32,
}

/// First page number of a split layout's link pages.
const LINK_PAGES: u32 = 1 << 30;

impl Pages {
    fn new(sizes: Vec<(usize, usize)>, split: bool) -> Self {
        let n = sizes.len();
        Pages {
            sizes,
            exact_free: PAGE_SPACE,
            block: 1,
            element: vec![0; n],
            neighbors: vec![0; n],
            span: vec![1; n],
            split,
            link_free: 0,
            link_block: LINK_PAGES - 1,
        }
    }

    /// Pages of the graph.
    fn blocks(&self) -> u32 {
        self.block
            + if self.split {
                self.link_block + 1 - LINK_PAGES
            } else {
                0
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
        self.free() >= e && (self.split || !(together && self.free() < e + n + ITEM_ID_SIZE))
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
        if self.split {
            if self.link_free < n + 2 * ITEM_ID_SIZE {
                self.link_block += 1;
                self.link_free = PAGE_SPACE;
            }
            self.neighbors[i as usize] = self.link_block;
            self.link_free -= n + ITEM_ID_SIZE;
        } else if n > 0 {
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

#[allow(clippy::too_many_arguments)]
fn layout(
    name: &str,
    kind: Kind,
    graph: &InMemoryGraph,
    vectors: &[Vec<f32>],
    bits: u32,
    centroid: &[f32],
    neighbors_placed: bool,
    split: bool,
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
    let mut pages = Pages::new(sizes, split);
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

/// Shared buffers across queries, least recently used out; with no capacity, each query
/// starts with nothing cached and keeps every page it reads.
struct PageCache {
    capacity: usize,
    tick: u64,
    last_use: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
}

impl PageCache {
    fn new(capacity: usize) -> Self {
        PageCache {
            capacity,
            tick: 0,
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    fn start_query(&mut self) {
        if self.capacity == 0 {
            self.last_use.clear();
            self.by_age.clear();
        }
    }

    /// Uses `page`; true when it had to be read.
    fn read(&mut self, page: u64) -> bool {
        self.tick += 1;
        let miss = match self.last_use.insert(page, self.tick) {
            Some(old) => {
                self.by_age.remove(&old);
                false
            }
            None => true,
        };
        self.by_age.insert(self.tick, page);
        if self.capacity > 0 && self.last_use.len() > self.capacity {
            let (_, oldest) = self.by_age.pop_first().expect("not empty");
            self.last_use.remove(&oldest);
        }
        miss
    }
}

/// Vector pages' numbers in the cache.
const VECTOR_PAGES: u64 = 1 << 32;

/// What one query read and found.
#[derive(Default)]
struct Outcome {
    graph_blocks: usize,
    vector_blocks: usize,
    round_trips: usize,
    found: Vec<u32>,
}

struct Walk<'a> {
    layout: &'a Layout,
    graph: &'a InMemoryGraph,
    vectors: &'a [Vec<f32>],
    query: &'a [f32],
    prepared: Option<QueryCode>,
    cache: &'a mut PageCache,
    graph_reads: usize,
    /// Candidates expanded at a time on layer 0 (`hnsw.beam_width`).
    beam: usize,
    /// Reads the walk waits for one after the other: a hop whose expansion misses is one, and
    /// its neighbors' misses, requested together, another; a rerank batch with a miss one.
    round_trips: usize,
}

impl Walk<'_> {
    /// Reads `block`; true when it missed.
    fn read(&mut self, block: u32) -> bool {
        let miss = self.cache.read(u64::from(block));
        self.graph_reads += usize::from(miss);
        miss
    }

    fn read_element(&mut self, id: u32) -> bool {
        self.read(self.layout.pages.element[id as usize])
    }

    fn read_node(&mut self, id: u32) -> bool {
        let first = self.layout.pages.neighbors[id as usize];
        let mut miss = false;
        for b in first..first + self.layout.pages.span[id as usize] {
            miss |= self.read(b);
        }
        miss
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
    fn reach(&mut self, id: u32) -> (f64, bool) {
        let miss = !matches!(self.layout.kind, Kind::NeighborCodes) && self.read_element(id);
        (self.distance(id), miss)
    }

    fn expand(&mut self, id: u32) -> bool {
        match self.layout.kind {
            Kind::NeighborCodes => self.read_node(id),
            _ => self.read(self.layout.pages.neighbors[id as usize]),
        }
    }

    fn search_layer(&mut self, entry: Near, ef: usize, layer: u8) -> Vec<Near> {
        let mut visited = HashSet::new();
        visited.insert(entry.1);
        let mut candidates = BinaryHeap::new();
        candidates.push(std::cmp::Reverse(entry));
        let mut results = BinaryHeap::new();
        results.push(entry);
        let width = if layer == 0 { self.beam } else { 1 };
        let mut round = Vec::new();
        loop {
            // A round expands the `width` nearest candidates that pass the stop test, reads all
            // their unvisited neighbors together, then compares them in list order.
            round.clear();
            while round.len() < width {
                let Some(std::cmp::Reverse(c)) = candidates.pop() else {
                    break;
                };
                let furthest = results.peek().map_or(f64::INFINITY, |f: &Near| f.0);
                if results.len() >= ef && c.0 > furthest {
                    candidates.clear();
                    break;
                }
                round.push(c.1);
            }
            if round.is_empty() {
                break;
            }
            let mut missed = false;
            for &c in &round {
                missed |= self.expand(c);
            }
            self.round_trips += usize::from(missed);
            let graph = self.graph;
            let mut loaded = Vec::new();
            missed = false;
            for &c in &round {
                for &next in graph.neighbor_ids(c, layer) {
                    if visited.insert(next) {
                        let (d, miss) = self.reach(next);
                        missed |= miss;
                        loaded.push(Near(d, next));
                    }
                }
            }
            self.round_trips += usize::from(missed);
            for n in loaded {
                let furthest = results.peek().map_or(f64::INFINITY, |f: &Near| f.0);
                if results.len() < ef || n.0 < furthest {
                    candidates.push(std::cmp::Reverse(n));
                    results.push(n);
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
        results.into_sorted_vec()
    }

    fn run(mut self, ef: usize) -> Outcome {
        self.cache.start_query();
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
        if self.layout.quantizer.is_none() {
            return Outcome {
                graph_blocks: self.graph_reads,
                vector_blocks: 0,
                round_trips: self.round_trips,
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
        let mut vector_reads = 0;
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
            let before = vector_reads;
            for _ in 0..RERANK_BATCH {
                let Some(w) = waiting.pop() else { break };
                let page = VECTOR_PAGES + u64::from(self.layout.vector_page[w.1 as usize]);
                vector_reads += usize::from(self.cache.read(page));
                ready.push(Near(
                    l2_squared(self.query, &self.vectors[w.1 as usize]),
                    w.1,
                ));
            }
            self.round_trips += usize::from(vector_reads > before);
        }
        // The rows returned need their heap TIDs, in their elements.
        let mut missed = false;
        for &id in &out {
            missed |= self.read_element(id);
        }
        Outcome {
            graph_blocks: self.graph_reads,
            vector_blocks: vector_reads,
            round_trips: self.round_trips + usize::from(missed),
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
    let cache_mb: usize = args.next().map_or(0, |s| s.parse().unwrap());
    let beams: Vec<usize> = args.next().map_or(vec![1], |s| {
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
        layout(
            "pgvector",
            Kind::Full,
            &graph,
            vectors,
            0,
            &centroid,
            false,
            false,
        ),
        layout(
            "ours",
            Kind::Full,
            &graph,
            vectors,
            0,
            &centroid,
            true,
            false,
        ),
    ];
    for bits in [1, 2, 4] {
        for split in [false, true] {
            let name = format!("rabitq{bits}{}", if split { ", links apart" } else { "" });
            let kind = Kind::OwnCodes;
            layouts.push(layout(
                &name, kind, &graph, vectors, bits, &centroid, true, split,
            ));
        }
    }
    for bits in [1, 2, 4] {
        let name = format!("neighbor codes {bits}");
        let kind = Kind::NeighborCodes;
        layouts.push(layout(
            &name, kind, &graph, vectors, bits, &centroid, true, false,
        ));
    }
    let cached = match cache_mb {
        0 => "each query cold".to_string(),
        mb => format!("{mb} MB of shared buffers across the queries, cold at the first"),
    };
    println!("{rows} rows x {dims} dimensions of {file}, {QUERIES} queries, m 16, {cached}\n");
    println!(
        "| layout | graph MB | vectors MB | ef_search | recall@10 | graph blocks / q | rerank blocks / q | ÷ pgvector at 40 | round trips / q |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut reference = None;
    for (l, beam) in layouts.iter().flat_map(|l| {
        // pgvector has no beam search.
        let widths = if l.name == "pgvector" {
            &beams[..1]
        } else {
            &beams[..]
        };
        widths.iter().map(move |&w| (l, w))
    }) {
        for &ef in &efs {
            let (mut graph_blocks, mut vector_blocks, mut hits, mut trips) = (0, 0, 0, 0);
            let mut cache = PageCache::new(cache_mb * 128);
            for (q, t) in queries.iter().zip(&truth) {
                let o = Walk {
                    layout: l,
                    graph: &graph,
                    vectors,
                    query: q,
                    prepared: None,
                    cache: &mut cache,
                    graph_reads: 0,
                    beam,
                    round_trips: 0,
                }
                .run(ef);
                trips += o.round_trips;
                graph_blocks += o.graph_blocks;
                vector_blocks += o.vector_blocks;
                hits += o.found.iter().filter(|id| t.contains(id)).count();
            }
            let nq = queries.len() as f64;
            let total = (graph_blocks + vector_blocks) as f64 / nq;
            if l.name == "pgvector" && ef == 40 {
                reference = Some(total);
            }
            let width = match beam {
                1 => String::new(),
                w => format!(", beam {w}"),
            };
            println!(
                "| {}{width} | {:.1} | {:.1} | {ef} | {:.4} | {:.1} | {:.1} | {} | {:.1} |",
                l.name,
                f64::from(l.pages.blocks()) * 8192.0 / 1e6,
                f64::from(l.vector_blocks) * 8192.0 / 1e6,
                hits as f64 / (nq * K as f64),
                graph_blocks as f64 / nq,
                vector_blocks as f64 / nq,
                reference.map_or("—".to_string(), |r| format!("{:.2}", total / r)),
                trips as f64 / nq,
            );
        }
    }
}
