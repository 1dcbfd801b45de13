//! Runs of queries over the simulated index: a cold run (caches dropped once, then queries one
//! after the other, as `benches/hnsw/cold.py` measures), with our walk or pgvector's.

use super::disk::{DiskModel, HostModel, SimConfig, SimDisk};
use super::graph::{CpuModel, PageMap, PagedStore, SerialStore};
use crate::counters::IoCounters;
use crate::reader::forget_last_walk;
use crate::settings::Settings;
use vector_hnsw::memory::InMemoryGraph;
use vector_hnsw::{search, search_with_beam};

/// Which walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Ours, through the policy with these settings.
    Ours(Settings),
    /// pgvector's: one read after the other.
    Pgvector,
}

/// How a run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// Caches dropped before the first query.
    Cold,
    /// The index in the page cache, evicted from shared buffers before every query.
    Warm,
    /// The index in shared buffers.
    Resident,
    /// Caches dropped, then the metapage and the blocks of the elements linked above layer 0
    /// (their element and neighbor tuples) read into shared buffers: the navigation layers
    /// prewarmed.
    ColdUpperLayers,
}

/// What a run is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunConfig {
    pub sim: SimConfig,
    pub cpu: CpuModel,
    /// `hnsw.ef_search`.
    pub ef_search: usize,
    /// Table blocks each query reads after its walk, one at a time (rows and TOAST).
    pub table_reads: usize,
    /// Table blocks that stay in shared buffers (taken from the index's share).
    pub resident_table_blocks: usize,
    /// Fixed CPU per query (planning, executor), µs.
    pub per_query_us: f64,
    /// `hnsw.beam_width` of our walk (pgvector's walk has no beam).
    pub beam: usize,
}

impl RunConfig {
    /// `cold.py`'s 100k x 768 servers scaled to `rows`: the index's shares of shared buffers
    /// and of the page cache as `predict` models them, 22 table blocks per query, ef_search 40.
    pub fn cold_py(disk: DiskModel, rows: usize, eic: usize) -> RunConfig {
        RunConfig {
            sim: SimConfig {
                disk,
                host: HostModel::THIS_MACHINE,
                shared_buffers: 16_880 * rows / 100_000,
                page_cache: 6_400 * rows / 100_000,
                io_concurrency: eic,
                read_streams: true,
            },
            cpu: CpuModel {
                per_element_us: 0.5,
                per_hop_us: 2.0,
            },
            ef_search: 40,
            table_reads: 22,
            resident_table_blocks: 0,
            per_query_us: 0.0,
            beam: 1,
        }
    }
}

/// What a run did, per query on average.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    pub queries: usize,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// Index blocks read into shared buffers, per query (neighbor pages and metapage
    /// included, like `pg_statio`).
    pub index_reads: f64,
    /// Index blocks found in shared buffers, per query.
    pub index_hits: f64,
    /// Hops per query.
    pub hops: f64,
    /// Batches loaded per query: the walk's round trips to the disk.
    pub rounds: f64,
    /// Elements visited per query.
    pub visited: f64,
    /// Our walk's counters, summed.
    pub io: IoCounters,
    /// Ids of the first results of every query (to compare walks).
    pub results: Vec<Vec<u32>>,
}

/// Runs `queries` one after the other on a new backend.
pub fn run(
    graph: &InMemoryGraph,
    pages: &PageMap,
    queries: &[Vec<f32>],
    walk: Walk,
    cache: Cache,
    cfg: &RunConfig,
) -> RunResult {
    let mut sim = cfg.sim;
    sim.shared_buffers = sim
        .shared_buffers
        .saturating_sub(cfg.resident_table_blocks)
        .max(16);
    if cache == Cache::Resident {
        sim.shared_buffers = sim.shared_buffers.max(pages.blocks as usize + 16);
    }
    if cache == Cache::Warm {
        sim.page_cache = sim.page_cache.max(pages.blocks as usize + 16);
    }
    let mut disk = SimDisk::new(sim);
    forget_last_walk();
    match cache {
        Cache::Cold => disk.drop_caches(),
        Cache::ColdUpperLayers => {
            disk.drop_caches();
            for block in upper_layer_blocks(graph, pages) {
                disk.prewarm(0, block..block + 1);
            }
        }
        Cache::Resident => disk.prewarm(0, 0..pages.blocks),
        Cache::Warm => disk.warm_page_cache(0, 0..pages.blocks),
    }
    let mut out = RunResult {
        queries: queries.len(),
        ..RunResult::default()
    };
    let mut table_block = 0u32;
    let mut total_us = 0.0;
    for query in queries {
        if cache == Cache::Warm {
            disk.evict_relation(0);
        }
        let started = disk.now();
        let before = disk.usage_of(0);
        disk.cpu(cfg.per_query_us);
        let (results, stats) = match walk {
            Walk::Ours(settings) => {
                let mut store = PagedStore::new(graph, pages, &mut disk, settings, cfg.cpu);
                let (results, stats) = search_with_beam(&mut store, query, cfg.ef_search, cfg.beam);
                let io = store.reader().counters();
                add(&mut out.io, &io);
                (results, stats)
            }
            Walk::Pgvector => {
                let mut store = SerialStore::new(graph, pages, &mut disk, cfg.cpu);
                search(&mut store, query, cfg.ef_search)
            }
        };
        if matches!(cache, Cache::Cold | Cache::ColdUpperLayers) {
            // The rows' table (TOAST) blocks, one after the other, each a new block.
            for _ in 0..cfg.table_reads {
                disk.read_block(1, table_block);
                table_block += 1;
            }
        } else {
            // The table is in shared buffers.
            disk.cpu(cfg.table_reads as f64 * cfg.sim.host.buffer_hit_us);
        }
        total_us += disk.now() - started;
        let after = disk.usage_of(0);
        out.index_reads += (after.reads - before.reads) as f64;
        out.index_hits += (after.hits - before.hits) as f64;
        out.hops += stats.hops as f64;
        out.rounds += stats.load_batches as f64;
        out.visited += stats.visited as f64;
        out.results
            .push(results.iter().take(10).map(|c| c.id).collect());
    }
    let n = queries.len().max(1) as f64;
    out.mean_ms = total_us / n / 1000.0;
    out.index_reads /= n;
    out.index_hits /= n;
    out.hops /= n;
    out.rounds /= n;
    out.visited /= n;
    out
}

/// The metapage and the blocks holding the element and neighbor tuples of every element
/// linked above layer 0, in block order.
pub fn upper_layer_blocks(graph: &InMemoryGraph, pages: &PageMap) -> Vec<u32> {
    let mut blocks = vec![0];
    for id in 0..graph.slots() as u32 {
        if graph.level(id) > 0 {
            blocks.push(pages.block(id));
            blocks.push(pages.neighbor_block(id));
        }
    }
    blocks.sort_unstable();
    blocks.dedup();
    blocks
}

fn add(sum: &mut IoCounters, c: &IoCounters) {
    sum.blocks += c.blocks;
    sum.hits += c.hits;
    sum.reads += c.reads;
    sum.prefetched += c.prefetched;
    sum.unused += c.unused;
    sum.speculated += c.speculated;
    sum.in_flight_sum += c.in_flight_sum;
    sum.in_flight_samples += c.in_flight_samples;
}
