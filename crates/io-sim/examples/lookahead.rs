//! Adaptive look-ahead against none, on the simulated disks: cold runs of the same queries
//! with `prefetch` and `hnsw.prefetch_lookahead` 0 and 1, at eic 16 and 32.
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example lookahead [-- ROWS]   # default 20,000 x 768
//! ```
//!
//! Shared buffers and the page cache hold the shares of the index that `cold.py`'s servers
//! give it (as `predict` models them), scaled to ROWS.

use vector_io::{IoMethod, Settings};
use vector_io_sim::run::{run, Cache, RunConfig, Walk};
use vector_io_sim::{cache::example_graph, random_vectors, DiskModel, PageMap};

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("ROWS is a number"))
        .unwrap_or(20_000);
    let (_, graph) = example_graph(rows);
    let pages = PageMap::new(&graph, 768);
    let queries = random_vectors(100, 768, 4242);
    println!("| disk | eic | look-ahead 0 ms | look-ahead 1 ms | ÷ | look-ahead hints / q | unused / q |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for disk in [
        DiskModel::THIS_MACHINE,
        DiskModel::NVME,
        DiskModel::CLOUD_3K,
        DiskModel::CLOUD_16K,
    ] {
        for eic in [16, 32] {
            let cfg = RunConfig::cold_py(disk, rows, eic);
            let at = |lookahead| {
                let settings = Settings {
                    method: IoMethod::Prefetch,
                    lookahead,
                    heap_prefetch: true,
                };
                run(
                    &graph,
                    &pages,
                    &queries,
                    Walk::Ours(settings),
                    Cache::Cold,
                    &cfg,
                )
            };
            let (without, with) = (at(0), at(1));
            assert_eq!(with.results, without.results, "look-ahead moved results");
            let q = queries.len() as f64;
            println!(
                "| {} | {eic} | {:.2} | {:.2} | {:.3} | {:.1} | {:.1} |",
                disk.name,
                without.mean_ms,
                with.mean_ms,
                with.mean_ms / without.mean_ms,
                with.io.speculated as f64 / q,
                with.io.unused as f64 / q
            );
        }
    }
}
