//! The opt-in beam (`hnsw.beam_width`) on the simulated disks: recall@10 against brute force,
//! cold latency, and round trips for beam widths 1 to 16, each width also at the smallest
//! `ef_search` whose recall is not below the defaults' (width 1, ef_search 40).
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example beam [-- ROWS [EIC]]   # default 20,000 x 768, eic 16
//! ```
//!
//! Shared buffers and the page cache hold the shares of the index that `cold.py`'s servers
//! give it (as `predict` models them), scaled to ROWS.

use vector_hnsw::memory::l2_squared;
use vector_io::{IoMethod, Settings};
use vector_io_sim::run::{run, Cache, RunConfig, RunResult, Walk};
use vector_io_sim::{cache::example_graph, random_vectors, DiskModel, PageMap};

const WIDTHS: [usize; 5] = [1, 2, 4, 8, 16];
const EFS: [usize; 6] = [15, 20, 25, 30, 35, 40];

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().map_or(20_000, |s| s.parse().expect("ROWS"));
    let eic: usize = args.next().map_or(16, |s| s.parse().expect("EIC"));
    let (vectors, graph) = example_graph(rows);
    // Ours placed as our builds place them by default (graph neighbors together), pgvector's
    // in its insertion order.
    let pages = PageMap::placed(&graph, 768);
    let pgvector_pages = PageMap::new(&graph, 768);
    let queries = random_vectors(100, 768, 4242);
    let truth: Vec<Vec<u32>> = queries.iter().map(|q| nearest(&vectors, q, 10)).collect();
    let recall = |r: &RunResult| {
        let hits: usize = r
            .results
            .iter()
            .zip(&truth)
            .map(|(found, want)| found.iter().filter(|id| want.contains(id)).count())
            .sum();
        hits as f64 / (10 * truth.len()) as f64
    };

    println!("{rows} x 768, eic {eic}, {} cold queries", queries.len());
    println!();
    println!("| disk | width | ef_search | recall@10 | ms | ÷ pgvector | rounds / q | hops / q | index reads / q |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for disk in [
        DiskModel::THIS_MACHINE,
        DiskModel::NVME,
        DiskModel::CLOUD_16K,
        DiskModel::CLOUD_3K,
    ] {
        let cfg = |ef_search, beam| RunConfig {
            ef_search,
            beam,
            ..RunConfig::cold_py(disk, rows, eic)
        };
        let ours = |ef_search, beam| {
            let settings = Settings {
                method: IoMethod::Prefetch,
                lookahead: 0,
                heap_prefetch: true,
            };
            let walk = Walk::Ours(settings);
            run(
                &graph,
                &pages,
                &queries,
                walk,
                Cache::Cold,
                &cfg(ef_search, beam),
            )
        };
        let pgvector = run(
            &graph,
            &pgvector_pages,
            &queries,
            Walk::Pgvector,
            Cache::Cold,
            &cfg(40, 1),
        );
        let defaults = ours(40, 1);
        let target = recall(&defaults);
        let row = |width: &str, ef: usize, r: &RunResult| {
            println!(
                "| {} | {width} | {ef} | {:.3} | {:.2} | {:.3} | {:.1} | {:.1} | {:.1} |",
                disk.name,
                recall(r),
                r.mean_ms,
                r.mean_ms / pgvector.mean_ms,
                r.rounds,
                r.hops,
                r.index_reads
            );
        };
        row("pgvector", 40, &pgvector);
        for width in WIDTHS {
            let same_ef = if width == 1 {
                defaults.clone()
            } else {
                ours(40, width)
            };
            row(&width.to_string(), 40, &same_ef);
            if width == 1 {
                continue;
            }
            // The smallest ef_search that keeps the defaults' recall.
            if let Some((ef, r)) = EFS
                .iter()
                .filter(|&&ef| ef < 40)
                .map(|&ef| (ef, ours(ef, width)))
                .find(|(_, r)| recall(r) >= target)
            {
                row(&width.to_string(), ef, &r);
            }
        }
    }
}

/// Ids of the `k` vectors nearest to `q`.
fn nearest(vectors: &[Vec<f32>], q: &[f32], k: usize) -> Vec<u32> {
    let mut all: Vec<(f64, u32)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (l2_squared(v, q), i as u32))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, id)| id).collect()
}
