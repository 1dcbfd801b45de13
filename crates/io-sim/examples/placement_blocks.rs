//! Index blocks a cold query reads under different placements of the same graph.
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example placement_blocks -- ROWS DIMS [F32_FILE]
//! ```
//!
//! Vectors: the first ROWS rows of F32_FILE (little-endian float32, DIMS a row) and 300
//! queries from the rows after them, or clustered random data without a file.

use vector_hnsw::memory::InMemoryGraph;
use vector_hnsw::placement::{PagePacker, MISSES_BEFORE_FULL};
use vector_hnsw::GraphParams;
use vector_io::{IoMethod, Settings};
use vector_io_sim::run::{run, Cache, RunConfig, TableModel, Walk};
use vector_io_sim::{build_graph, DiskModel, PageMap};

fn clustered(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let centers: Vec<Vec<f32>> = (0..64)
        .map(|_| (0..dims).map(|_| next() as f32 * 2.0 - 1.0).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centers[(next() * 64.0) as usize % 64];
            c.iter().map(|&x| x + (next() as f32 - 0.5) * 0.5).collect()
        })
        .collect()
}

fn read_f32(path: &str, dims: usize, rows: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("F32_FILE");
    bytes
        .chunks_exact(4 * dims)
        .take(rows)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect()
}

/// The fill the build used before 2026-12-05: the anchor's unplaced neighbors in list order,
/// then theirs (breadth-first), until the page is full.
fn breadth_first(graph: &InMemoryGraph, packer: &mut dyn PagePacker) {
    let count = graph.slots();
    let mut placed = vec![false; count];
    for anchor in (0..count as u32).rev() {
        if placed[anchor as usize] {
            continue;
        }
        placed[anchor as usize] = true;
        packer.place(anchor);
        let mut page = vec![anchor];
        let (mut at, mut misses) = (0, 0);
        'page: while at < page.len() {
            for &c in graph.neighbor_ids(page[at], 0) {
                if placed[c as usize] {
                    continue;
                }
                if !packer.fits(c) {
                    misses += 1;
                    if misses >= MISSES_BEFORE_FULL {
                        break 'page;
                    }
                    continue;
                }
                misses = 0;
                placed[c as usize] = true;
                packer.place(c);
                page.push(c);
            }
            at += 1;
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().map_or(20_000, |s| s.parse().unwrap());
    let dims: usize = args.next().map_or(384, |s| s.parse().unwrap());
    let file = args.next();
    let all = match &file {
        Some(path) => read_f32(path, dims, rows + 300),
        None => clustered(rows + 300, dims, 42),
    };
    let (vectors, queries) = all.split_at(rows);
    let params = GraphParams {
        m: 16,
        ef_construction: 64,
    };
    let t = std::time::Instant::now();
    let graph = build_graph(vectors, &params, 7);
    eprintln!("built {rows} x {dims} in {:.0?}", t.elapsed());
    let layouts: Vec<(&str, PageMap)> = vec![
        ("insertion (pgvector)", PageMap::new(&graph, dims)),
        (
            "breadth-first neighbors (before)",
            PageMap::placed_by(&graph, dims, |p| breadth_first(&graph, p)),
        ),
        ("shared lists (the build's)", PageMap::placed(&graph, dims)),
    ];
    let mut cfg = RunConfig::cold_py(DiskModel::THIS_MACHINE, rows, 16);
    cfg.table = TableModel::Inline { rows: 0 };
    let settings = Settings {
        method: IoMethod::Prefetch,
        lookahead: 0,
        heap_prefetch: false,
    };
    println!("| placement | blocks | index blocks read / cold query | sim ms / q | hops / q |");
    println!("|---|---:|---:|---:|---:|");
    let mut first = None;
    for (name, pages) in &layouts {
        let (mut reads, mut ms, mut hops) = (0.0, 0.0, 0.0);
        let mut results = Vec::new();
        for q in queries {
            let r = run(
                &graph,
                pages,
                std::slice::from_ref(q),
                Walk::Ours(settings),
                Cache::Cold,
                &cfg,
            );
            reads += r.index_reads;
            ms += r.mean_ms;
            hops += r.hops;
            results.extend(r.results);
        }
        let q = queries.len() as f64;
        if let Some(f) = &first {
            assert_eq!(f, &results, "placement moved results");
        } else {
            first = Some(results);
        }
        println!(
            "| {name} | {} | {:.1} | {:.2} | {:.1} |",
            pages.blocks,
            reads / q,
            ms / q,
            hops / q
        );
    }
}
