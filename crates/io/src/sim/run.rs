//! Runs of queries over the simulated index: a cold run (caches dropped once, then queries one
//! after the other, as `benches/hnsw/cold.py` measures), with our walk or pgvector's.

use super::disk::{DiskModel, HostModel, SimConfig, SimDisk};
use super::graph::{CpuModel, PageMap, PagedStore, SerialStore};
use crate::counters::IoCounters;
use crate::heap::{HeapRowHints, TableRow};
use crate::reader::forget_last_walk;
use crate::settings::Settings;
use crate::source::{BlockSource, Prefetched};
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
    /// Table blocks each query reads after its walk, one at a time, each a new block.
    pub table_reads: usize,
    /// Where those blocks are.
    pub table: TableModel,
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
            table: TableModel::Toast,
            resident_table_blocks: 0,
            per_query_us: 0.0,
            beam: 1,
        }
    }
}

/// Where a query's table reads go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableModel {
    /// The vectors are in TOAST (768 dimensions, `cold.py`'s table): the small heap stays in
    /// shared buffers and the reads are TOAST blocks. Ours finds a row's TOAST blocks from its
    /// resident heap tuple and hints them (`ToastedColumn` in the extension).
    Toast,
    /// Rows inline (384 dimensions): each of the `table_reads` rows one cold heap block,
    /// which the scan hints.
    Inline,
}

/// Rows each query returns (`LIMIT 10`).
pub const ROWS: usize = 10;

/// The table's relations in the simulation (the index is 0).
const HEAP: u32 = 1;
const TOAST: u32 = 2;

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
    /// Table blocks ours hinted ahead of its rows, per query.
    pub heap_prefetches: f64,
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
        let (results, stats, row_hints) = match walk {
            Walk::Ours(settings) => {
                let mut store = PagedStore::new(graph, pages, &mut disk, settings, cfg.cpu);
                let (results, stats) = search_with_beam(&mut store, query, cfg.ef_search, cfg.beam);
                let io = store.reader().counters();
                add(&mut out.io, &io);
                // The scan hints rows' heap blocks when the table is on; the walk's state
                // is one of the two reasons (the other is the table's own fetches).
                let row_hints = settings
                    .heap_prefetch
                    .then(|| RowHints::Ours(store.reader().is_cold()));
                (results, stats, row_hints.unwrap_or(RowHints::None))
            }
            Walk::Pgvector => {
                let mut store = SerialStore::new(graph, pages, &mut disk, cfg.cpu);
                let (results, stats) = search(&mut store, query, cfg.ef_search);
                (results, stats, RowHints::None)
            }
        };
        if matches!(cache, Cache::Cold | Cache::ColdUpperLayers) {
            out.heap_prefetches += fetch_rows(&mut disk, &mut table_block, cfg, row_hints) as f64;
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
    out.heap_prefetches /= n;
    out
}

/// Whether the scan hints its rows' heap blocks.
#[derive(Clone, Copy)]
enum RowHints {
    None,
    /// As ours does ([`HeapRowHints`]); `true` if the walk ended cold.
    Ours(bool),
}

/// The executor fetches a query's rows after its walk, one after the other ([`TableModel`]).
/// Ours hints what its scan hints: the next rows' heap blocks, and the TOAST blocks of rows
/// whose heap block is resident. Returns the hints issued.
fn fetch_rows(disk: &mut SimDisk, next: &mut u32, cfg: &RunConfig, hints: RowHints) -> u64 {
    let rows = match cfg.table {
        TableModel::Inline => cfg.table_reads,
        TableModel::Toast => ROWS,
    };
    let first = *next;
    *next += cfg.table_reads as u32;
    // Row `row`'s heap block (for TOAST rows one resident block stands for the small heap),
    // and its share of the query's TOAST blocks.
    let heap_block = |row: usize| match cfg.table {
        TableModel::Inline => first + row as u32,
        TableModel::Toast => 0,
    };
    let toast_blocks = |row: usize| match cfg.table {
        TableModel::Inline => 0..0,
        TableModel::Toast => {
            let n = cfg.table_reads as u32;
            let rows = rows as u32;
            let row = row as u32;
            first + n * row / rows..first + n * (row + 1) / rows
        }
    };
    if cfg.table == TableModel::Toast {
        // Every query's rows hit the small heap: it stays in shared buffers.
        disk.prewarm(HEAP, 0..1);
    }
    let read_row = |disk: &mut SimDisk, row: usize| {
        disk.read_block(HEAP, heap_block(row));
        for block in toast_blocks(row) {
            disk.read_block(TOAST, block);
        }
    };
    let RowHints::Ours(walk_cold) = hints else {
        for row in 0..rows {
            read_row(disk, row);
        }
        return 0;
    };
    disk.set_relation(HEAP);
    let mut hints = HeapRowHints::new(&mut *disk);
    let mut toast_issued = 0;
    for returned in 1..=rows {
        // The executor asks for the next row; the scan hands it out; the executor fetches
        // it.
        let slow = hints.table_is_slow();
        if walk_cold || slow {
            let next = (returned..rows).map(|row| TableRow {
                block: heap_block(row),
                offset: row as u16,
            });
            let mut resident = Vec::new();
            hints.ahead_rows(returned, next, |row| {
                resident.push(usize::from(row.offset));
                0
            });
            // What the scan's TOAST lookup hints for those rows.
            let disk = hints.source();
            disk.set_relation(TOAST);
            for row in resident {
                for block in toast_blocks(row) {
                    if disk.prefetch(block) == Prefetched::Started {
                        toast_issued += 1;
                    }
                }
            }
            disk.set_relation(HEAP);
        }
        hints.row_returned(returned);
        read_row(hints.source(), returned - 1);
    }
    let issued = hints.issued + toast_issued;
    drop(hints);
    disk.set_relation(0);
    issued
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
