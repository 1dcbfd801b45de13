//! Where a cold query's time goes on the simulated disks: the walk alone, then with
//! `cold.py`'s table fetched without and with the scan's table hints.
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example table_phase [-- ROWS]   # default 20,000 x 768
//! ```

use vector_io::{IoMethod, Settings};
use vector_io_sim::run::{run, Cache, RunConfig, TableModel, Walk};
use vector_io_sim::{cache::example_graph, random_vectors, DiskModel, PageMap};

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("ROWS is a number"))
        .unwrap_or(20_000);
    let (_, graph) = example_graph(rows);
    let pages = PageMap::new(&graph, 768);
    let queries = random_vectors(100, 768, 4242);
    println!("| disk | walk only ms | table, hints off, ms | table, hints on, ms | table blocks hinted / q |");
    println!("|---|---:|---:|---:|---:|");
    for disk in [
        DiskModel::THIS_MACHINE,
        DiskModel::NVME,
        DiskModel::CLOUD_3K,
        DiskModel::CLOUD_16K,
    ] {
        let at = |table, heap_prefetch| {
            let mut cfg = RunConfig::cold_py(disk, rows, 16);
            cfg.table = table;
            let settings = Settings {
                method: IoMethod::Prefetch,
                lookahead: 0,
                heap_prefetch,
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
        let walk = at(TableModel::Inline { rows: 0 }, true);
        let off = at(TableModel::COLD_PY, false);
        let on = at(TableModel::COLD_PY, true);
        assert_eq!(on.results, off.results);
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.1} |",
            disk.name,
            walk.mean_ms,
            off.mean_ms - walk.mean_ms,
            on.mean_ms - walk.mean_ms,
            on.heap_prefetches
        );
    }
}
