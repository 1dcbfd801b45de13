//! Predicts the cold latency of our walk and of pgvector's one-read-at-a-time walk on simulated
//! disks, after checking the simulation against this machine's measurements
//! (`benches/results/disk-limit-2026-12-01.md`, `benches/results/cold-100k-768-2026-12-01.md`).
//!
//! ```sh
//! cargo run --release -p vector-io-sim --example predict            # calibration + predictions
//! cargo run --release -p vector-io-sim --example predict -- --quick # 20k rows, 100 queries
//! ```
//!
//! The 100k × 768 graph takes minutes to build; it is kept in
//! `$CARGO_TARGET_DIR/vector-io-sim/` (default `target/`) and reused.

use std::path::PathBuf;
use vector_hnsw::GraphParams;
use vector_io::{BlockSource, IoMethod, Settings};
use vector_io_sim::disk::{key, Key};
use vector_io_sim::run::{run, Cache, RunConfig, RunResult, TableModel, Walk};
use vector_io_sim::{
    cache::cached_graph, random_vectors, CpuModel, DiskModel, HostModel, PageMap, SimConfig,
    SimDisk,
};

const EICS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// cold.py's recorded means (ms), eic 1..64.
const MEASURED_PGVECTOR: [f64; 7] = [23.387, 28.773, 26.910, 24.060, 25.122, 25.915, 25.710];
const MEASURED_PREFETCH: [f64; 7] = [19.096, 16.639, 12.499, 11.199, 10.408, 11.540, 10.686];
const MEASURED_STREAM: [f64; 7] = [32.953, 20.248, 17.032, 13.993, 13.470, 14.356, 13.652];
const MEASURED_OFF: [f64; 7] = [25.489, 24.963, 24.650, 24.442, 27.032, 26.513, 24.933];
/// Resident and warm means (ms) at eic 16: ours prefetch, pgvector.
const MEASURED_RESIDENT: (f64, f64) = (1.202, 1.512);
const MEASURED_WARM: (f64, f64) = (4.445, 4.263);
/// disk_limit.py: µs per read with a WILLNEED window of 1..32, and per hop of 8.
const MEASURED_WINDOW: [(usize, f64); 6] = [
    (1, 49.9),
    (2, 30.6),
    (4, 20.0),
    (8, 15.5),
    (16, 13.5),
    (32, 12.6),
];
const MEASURED_HOP8: f64 = 141.0;

struct Args {
    n: usize,
    queries: usize,
    host: HostModel,
    shared_buffers: usize,
    page_cache: usize,
    resident_table: usize,
    predict: bool,
}

fn args() -> Args {
    let mut a = Args {
        n: 100_000,
        queries: 300,
        host: HostModel::THIS_MACHINE,
        shared_buffers: SHARED_BUFFERS,
        page_cache: PAGE_CACHE,
        resident_table: RESIDENT_TABLE,
        predict: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> f64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{flag} takes a number"))
        };
        match flag.as_str() {
            "--quick" => {
                a.n = 20_000;
                a.queries = 100;
            }
            "--n" => a.n = value() as usize,
            "--shared-buffers" => a.shared_buffers = value() as usize,
            "--page-cache-pages" => a.page_cache = value() as usize,
            "--resident-table" => a.resident_table = value() as usize,
            "--no-predictions" => a.predict = false,
            "--queries" => a.queries = value() as usize,
            "--extra" => a.host.device_read_extra_us = value(),
            "--hint" => a.host.hint_us = value(),
            "--page-cache" => a.host.page_cache_read_us = value(),
            "--submit" | "--dispatch" | "--complete" | "--wake" => {
                let v = value();
                let w = a.host.workers.as_mut().expect("this host has I/O workers");
                match flag.as_str() {
                    "--submit" => w.submit_us = v,
                    "--dispatch" => w.dispatch_us = v,
                    "--complete" => w.complete_us = v,
                    _ => w.wake_us = v,
                }
            }
            _ => {
                eprintln!("usage: predict [--quick] [--n N] [--queries Q] [--extra US] [--hint US] [--page-cache US] [--submit US] [--dispatch US] [--complete US] [--wake US] [--shared-buffers N] [--page-cache-pages N] [--resident-table N] [--no-predictions]");
                std::process::exit(2);
            }
        }
    }
    a
}

/// Random blocks of a 512 MB file, as disk_limit.py reads them.
fn random_blocks(n: usize, seed: u64) -> Vec<Key> {
    let mut rng = vector_hnsw::level::SplitMix64::new(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while out.len() < n {
        let b = (rng.next_u64() % 65_536) as u32;
        if seen.insert(b) {
            out.push(key(0, b));
        }
    }
    out
}

/// A Python process reading a file: `pread` and `posix_fadvise` costs, no buffer manager.
const PYTHON: HostModel = HostModel {
    page_cache_read_us: 1.5,
    device_read_extra_us: 0.0,
    hint_us: 1.5,
    buffer_hit_us: 0.0,
    stream_us: 0.0,
    workers: None,
};

fn file_disk(disk: DiskModel) -> SimDisk {
    SimDisk::new(SimConfig {
        disk,
        host: PYTHON,
        shared_buffers: 1,
        page_cache: 1 << 20,
        io_concurrency: 1,
        read_streams: false,
    })
}

/// disk_limit.py's window of `w` reads requested ahead: µs per read.
fn window(disk: DiskModel, w: usize) -> f64 {
    let blocks = random_blocks(2000, w as u64);
    let mut sim = file_disk(disk);
    let mut requested = 0;
    for (i, &k) in blocks.iter().enumerate() {
        while requested < blocks.len() && requested < i + w && w > 1 {
            sim.prefetch(k_block(blocks[requested]));
            requested += 1;
        }
        sim.read(k_block(k), false);
    }
    sim.now() / blocks.len() as f64
}

/// disk_limit.py's hops of `h` reads requested together: µs per hop.
fn hops(disk: DiskModel, h: usize) -> f64 {
    let blocks = random_blocks(2000, 77);
    let mut sim = file_disk(disk);
    for hop in blocks.chunks(h) {
        for &k in &hop[1..] {
            sim.prefetch(k_block(k));
        }
        for &k in hop {
            sim.read(k_block(k), false);
        }
    }
    sim.now() / blocks.len() as f64 * h as f64
}

fn k_block(k: Key) -> u32 {
    k as u32
}

fn pct(predicted: f64, measured: f64) -> String {
    format!("{:+.0}%", (predicted / measured - 1.0) * 100.0)
}

fn settings(method: IoMethod) -> Settings {
    Settings {
        method,
        lookahead: 0,
        heap_prefetch: true,
    }
}

/// The product as the calibration runs measured it (2026-12-02): its table hints then asked
/// only for heap blocks, which were resident, and nothing for TOAST, as with them off now.
fn measured_settings(method: IoMethod) -> Settings {
    Settings {
        heap_prefetch: false,
        ..settings(method)
    }
}

/// cold.py's servers have shared_buffers = 128MB (16,384 buffers). The buffers the index gets
/// in this model are fitted to the measured index reads per query (409.5 for ours): 16,880.
/// (PostgreSQL's clock sweep keeps the upper layers and the hubs a little better than this
/// model's over a run, or its page cache answers a few reads.)
const SHARED_BUFFERS: usize = 16_880;
const RESIDENT_TABLE: usize = 0;
/// The 200 MB cgroup kept 50–52 MB of page cache.
const PAGE_CACHE: usize = 6_400;

/// The memory of cold.py's servers; io_method = worker; 22 table blocks read one by one per
/// query.
#[derive(Clone, Copy)]
struct Memory {
    shared_buffers: usize,
    page_cache: usize,
    resident_table: usize,
}

fn bench_config(
    disk: DiskModel,
    host: HostModel,
    eic: usize,
    cpu: CpuModel,
    mem: Memory,
) -> RunConfig {
    RunConfig {
        sim: SimConfig {
            disk,
            host,
            shared_buffers: mem.shared_buffers,
            page_cache: mem.page_cache,
            io_concurrency: eic,
            read_streams: true,
        },
        cpu,
        ef_search: 40,
        table: TableModel::COLD_PY,
        resident_table_blocks: mem.resident_table,
        per_query_us: 0.0,
        beam: 1,
    }
}

struct Bench<'a> {
    graph: &'a vector_hnsw::InMemoryGraph,
    pages: &'a PageMap,
    queries: &'a [Vec<f32>],
    host: HostModel,
    mem: Memory,
    cpu_ours: CpuModel,
    cpu_pgvector: CpuModel,
    table: TableModel,
}

impl Bench<'_> {
    fn run(&self, disk: DiskModel, eic: usize, walk: Walk, cache: Cache) -> RunResult {
        let cpu = match walk {
            Walk::Ours(_) => self.cpu_ours,
            Walk::Pgvector => self.cpu_pgvector,
        };
        run(
            self.graph,
            self.pages,
            self.queries,
            walk,
            cache,
            &RunConfig {
                table: self.table,
                ..bench_config(disk, self.host, eic, cpu, self.mem)
            },
        )
    }
}

/// The CPU per element that makes the resident mean `target_ms`.
fn fit_cpu(
    graph: &vector_hnsw::InMemoryGraph,
    pages: &PageMap,
    queries: &[Vec<f32>],
    host: HostModel,
    mem: Memory,
    walk: Walk,
    target_ms: f64,
) -> CpuModel {
    let at = |per_element_us| {
        let cpu = CpuModel {
            per_element_us,
            per_hop_us: 2.0,
        };
        let cfg = bench_config(DiskModel::THIS_MACHINE, host, 16, cpu, mem);
        run(graph, pages, queries, walk, Cache::Resident, &cfg).mean_ms
    };
    let (t0, t1) = (at(0.0), at(1.0));
    CpuModel {
        per_element_us: ((target_ms - t0) / (t1 - t0)).max(0.0),
        per_hop_us: 2.0,
    }
}

fn main() {
    let a = args();
    println!("# Simulated cold reads: calibration and predictions\n");

    // 1. The disk alone.
    println!("## This machine's disk (disk_limit.py) \n");
    println!("| pattern | measured µs | simulated µs | error |\n|---|---:|---:|---:|");
    for (w, measured) in MEASURED_WINDOW {
        let p = window(DiskModel::THIS_MACHINE, w);
        println!(
            "| window {w}, per read | {measured:.1} | {p:.1} | {} |",
            pct(p, measured)
        );
    }
    let p = hops(DiskModel::THIS_MACHINE, 8);
    println!(
        "| hops of 8, per hop | {MEASURED_HOP8:.0} | {p:.0} | {} |\n",
        pct(p, MEASURED_HOP8)
    );

    // 2. The benchmark's index.
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let path = PathBuf::from(target).join(format!(
        "vector-io-sim/graph-{}x768-m16-ef64-seed42.bin",
        a.n
    ));
    let params = GraphParams {
        m: 16,
        ef_construction: 64,
    };
    let started = std::time::Instant::now();
    let (_, graph) = cached_graph(&path, a.n, 768, &params, 42).expect("graph cache");
    eprintln!("graph of {} elements ready in {:?}", a.n, started.elapsed());
    let pages = PageMap::new(&graph, 768);
    let queries = random_vectors(a.queries, 768, 4242);
    let mem = Memory {
        shared_buffers: a.shared_buffers,
        page_cache: a.page_cache,
        resident_table: a.resident_table,
    };
    let cpu_ours = fit_cpu(
        &graph,
        &pages,
        &queries,
        a.host,
        mem,
        Walk::Ours(measured_settings(IoMethod::Prefetch)),
        MEASURED_RESIDENT.0,
    );
    let cpu_pgvector = fit_cpu(
        &graph,
        &pages,
        &queries,
        a.host,
        mem,
        Walk::Pgvector,
        MEASURED_RESIDENT.1,
    );
    let bench = Bench {
        graph: &graph,
        pages: &pages,
        queries: &queries,
        host: a.host,
        mem,
        cpu_ours,
        cpu_pgvector,
        table: TableModel::COLD_PY,
    };
    println!(
        "## cold.py: {} × 768, m 16, ef_construction 64, ef_search 40, {} queries\n",
        a.n, a.queries
    );
    println!(
        "Index {} blocks ({:.2} elements a page). CPU per element fitted to the resident means: \
         ours {:.3} µs, pgvector {:.3} µs. Host: page-cache read {} µs, device-read extra {} µs, \
         hint {} µs, I/O workers {:?}.\n",
        pages.blocks,
        pages.elements_per_page(),
        cpu_ours.per_element_us,
        cpu_pgvector.per_element_us,
        a.host.page_cache_read_us,
        a.host.device_read_extra_us,
        a.host.hint_us,
        a.host.workers
    );
    let d = DiskModel::THIS_MACHINE;
    let warm_ours = bench.run(
        d,
        16,
        Walk::Ours(measured_settings(IoMethod::Prefetch)),
        Cache::Warm,
    );
    let warm_pgv = bench.run(d, 16, Walk::Pgvector, Cache::Warm);
    println!(
        "| warm (page cache), eic 16 | measured ms | simulated ms | error |\n|---|---:|---:|---:|"
    );
    println!(
        "| ours prefetch | {:.2} | {:.2} | {} |",
        MEASURED_WARM.0,
        warm_ours.mean_ms,
        pct(warm_ours.mean_ms, MEASURED_WARM.0)
    );
    println!(
        "| pgvector | {:.2} | {:.2} | {} |\n",
        MEASURED_WARM.1,
        warm_pgv.mean_ms,
        pct(warm_pgv.mean_ms, MEASURED_WARM.1)
    );

    println!("| cold mean (ms) | eic | measured | simulated | error | index reads / hits per query (sim) | hops |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut worst: f64 = 0.0;
    let configs: [(&str, Walk, [f64; 7]); 4] = [
        ("pgvector", Walk::Pgvector, MEASURED_PGVECTOR),
        (
            "ours prefetch",
            Walk::Ours(measured_settings(IoMethod::Prefetch)),
            MEASURED_PREFETCH,
        ),
        (
            "ours read_stream",
            Walk::Ours(measured_settings(IoMethod::ReadStream)),
            MEASURED_STREAM,
        ),
        (
            "ours off",
            Walk::Ours(measured_settings(IoMethod::Off)),
            MEASURED_OFF,
        ),
    ];
    for (name, walk, measured) in configs {
        for (i, eic) in EICS.into_iter().enumerate() {
            let r = bench.run(d, eic, walk, Cache::Cold);
            let err = r.mean_ms / measured[i] - 1.0;
            worst = worst.max(err.abs());
            println!(
                "| {name} | {eic} | {:.2} | {:.2} | {} | {:.1} / {:.1} | {:.1} |",
                measured[i],
                r.mean_ms,
                pct(r.mean_ms, measured[i]),
                r.index_reads,
                r.index_hits,
                r.hops
            );
        }
    }
    println!(
        "\nLargest error of the cold means: {:.1}%.\n",
        worst * 100.0
    );

    // 3. Other disks, and graph neighbors placed together (the build's default).
    if !a.predict {
        return;
    }
    let placed_pages = PageMap::placed(&graph, 768);
    let placed = Bench {
        pages: &placed_pages,
        ..bench
    };
    println!(
        "Placed as the build places them by default (graph neighbors together): {} blocks.\n",
        placed_pages.blocks
    );
    for disk in [
        DiskModel::THIS_MACHINE,
        DiskModel::NVME,
        DiskModel::CLOUD_3K,
        DiskModel::CLOUD_16K,
    ] {
        println!(
            "## Predicted: {} ({} µs a read, queue depth {}, {})\n",
            disk.name,
            disk.latency_us,
            disk.queue_depth,
            disk.iops
                .map_or("no IOPS cap".to_string(), |i| format!("{i:.0} IOPS"))
        );
        println!("| eic | pgvector ms | ours prefetch ms | ÷ pgvector | ours read_stream ms | ÷ pgvector | blocks read / q | hops / q | ours prefetch, placed ms | ÷ pgvector | blocks read / q |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for eic in EICS {
            let pgv = bench.run(disk, eic, Walk::Pgvector, Cache::Cold);
            let pre = bench.run(
                disk,
                eic,
                Walk::Ours(settings(IoMethod::Prefetch)),
                Cache::Cold,
            );
            let st = bench.run(
                disk,
                eic,
                Walk::Ours(settings(IoMethod::ReadStream)),
                Cache::Cold,
            );
            let pl = placed.run(
                disk,
                eic,
                Walk::Ours(settings(IoMethod::Prefetch)),
                Cache::Cold,
            );
            println!(
                "| {eic} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} |",
                pgv.mean_ms,
                pre.mean_ms,
                pre.mean_ms / pgv.mean_ms,
                st.mean_ms,
                st.mean_ms / pgv.mean_ms,
                pre.index_reads,
                pre.hops,
                pl.mean_ms,
                pl.mean_ms / pgv.mean_ms,
                pl.index_reads
            );
        }
        println!();
    }

    // 4. The table hints alone.
    println!("## Table hints (blocks of the rows returned next: cold heap blocks, else TOAST)\n");
    println!("Placed index, eic 16, ours prefetch with table hints on (the default) and off.\n");
    println!("| disk | pgvector ms | ours, hints off, ms | ÷ pgvector | ours ms | ÷ pgvector | table blocks hinted / q |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for disk in [
        DiskModel::THIS_MACHINE,
        DiskModel::NVME,
        DiskModel::CLOUD_3K,
        DiskModel::CLOUD_16K,
    ] {
        let pgv = bench.run(disk, 16, Walk::Pgvector, Cache::Cold);
        let off = placed.run(
            disk,
            16,
            Walk::Ours(measured_settings(IoMethod::Prefetch)),
            Cache::Cold,
        );
        let on = placed.run(
            disk,
            16,
            Walk::Ours(settings(IoMethod::Prefetch)),
            Cache::Cold,
        );
        assert_eq!(on.results, off.results, "hints never change results");
        println!(
            "| {} | {:.2} | {:.2} | {:.3} | {:.2} | {:.3} | {:.1} |",
            disk.name,
            pgv.mean_ms,
            off.mean_ms,
            off.mean_ms / pgv.mean_ms,
            on.mean_ms,
            on.mean_ms / pgv.mean_ms,
            on.heap_prefetches
        );
    }
}
