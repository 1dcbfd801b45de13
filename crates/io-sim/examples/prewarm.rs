//! Whether prewarming the navigation layers pays: cold runs with nothing cached against cold
//! runs whose metapage and upper-layer elements' blocks were read into shared buffers first
//! (what `pg_prewarm` of those blocks would do), for our walk and pgvector's, at both page
//! placements.
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example prewarm [-- ROWS [EIC]]   # default 20,000 x 768, eic 16
//! ```

use vector_io::{IoMethod, Settings};
use vector_io_sim::run::{run, upper_layer_blocks, Cache, RunConfig, Walk};
use vector_io_sim::{cache::example_graph, random_vectors, DiskModel, PageMap};

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().map_or(20_000, |s| s.parse().expect("ROWS"));
    let eic: usize = args.next().map_or(16, |s| s.parse().expect("EIC"));
    let (_, graph) = example_graph(rows);
    let queries = random_vectors(100, 768, 4242);
    let ours = Walk::Ours(Settings {
        method: IoMethod::Prefetch,
        lookahead: 0,
        heap_prefetch: true,
    });
    println!("{rows} x 768, eic {eic}, {} cold queries", queries.len());
    println!();
    println!("| placement | prewarmed blocks | of the index | disk | walk | cold ms | upper layers prewarmed ms | ÷ | index reads / q: cold, prewarmed |");
    println!("|---|---:|---:|---|---|---:|---:|---:|---:|");
    for (placement, pages) in [
        ("insertion", PageMap::new(&graph, 768)),
        ("neighbors", PageMap::placed(&graph, 768)),
    ] {
        let prewarmed = upper_layer_blocks(&graph, &pages).len();
        for disk in [
            DiskModel::THIS_MACHINE,
            DiskModel::NVME,
            DiskModel::CLOUD_16K,
        ] {
            let cfg = RunConfig::cold_py(disk, rows, eic);
            for (name, walk) in [("ours", ours), ("pgvector", Walk::Pgvector)] {
                let cold = run(&graph, &pages, &queries, walk, Cache::Cold, &cfg);
                let warm = run(&graph, &pages, &queries, walk, Cache::ColdUpperLayers, &cfg);
                assert_eq!(cold.results, warm.results, "prewarming moved results");
                println!(
                    "| {placement} | {prewarmed} | {:.1}% | {} | {name} | {:.2} | {:.2} | {:.3} | {:.1}, {:.1} |",
                    100.0 * prewarmed as f64 / pages.blocks as f64,
                    disk.name,
                    cold.mean_ms,
                    warm.mean_ms,
                    warm.mean_ms / cold.mean_ms,
                    cold.index_reads,
                    warm.index_reads
                );
            }
        }
    }
}
