//! Runs of queries over the simulated index: a cold run (caches dropped once, then queries one
//! after the other, as `benches/hnsw/cold.py` measures), with our walk or pgvector's.

use super::disk::{DiskModel, HostModel, SimConfig, SimDisk};
use super::graph::{CpuModel, PageMap, PagedStore, SerialStore};
use vector_hnsw::memory::InMemoryGraph;
use vector_hnsw::{search, search_with_beam};
use vector_io::counters::IoCounters;
use vector_io::heap::forget_table_watch;
use vector_io::heap::{HeapRowHints, TableRow};
use vector_io::reader::forget_last_walk;
use vector_io::settings::Settings;
use vector_io::source::{BlockSource, Prefetched};

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
    /// The table blocks each query reads after its walk.
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
    /// and of the page cache as `predict` models them, its table ([`TableModel::COLD_PY`]),
    /// ef_search 40.
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
            table: TableModel::COLD_PY,
            resident_table_blocks: 0,
            per_query_us: 0.0,
            beam: 1,
        }
    }
}

/// Where a query's table reads go. The executor fetches its [`ROWS`] rows one after the
/// other after the walk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TableModel {
    /// Rows stored in the heap (384 dimensions): each of `rows` rows a cold heap block, which
    /// ours hints.
    Inline { rows: usize },
    /// Vectors in TOAST (768 dimensions), with the reads per query of each kind: a row's heap
    /// block (a miss in `heap` of every 10 rows), then its TOAST index leaf (`toast_index`),
    /// then its TOAST blocks (`toast` per 10 rows). Ours hints the heap block of a row whose
    /// block is cold, and from the second row handed out on looks its value up one call
    /// later; of a row whose heap block is in shared buffers it looks the value up at once:
    /// the look-up reads the TOAST index leaf (a read, if that leaf is cold, that the executor
    /// then finds in shared buffers) and hints the value's TOAST blocks.
    Toast {
        heap: f64,
        toast_index: f64,
        toast: f64,
    },
}

impl TableModel {
    /// `cold.py`'s 100k × 768 table: 22.1 blocks read per query, measured by `cold.py` on
    /// 2026-12-04 (pgvector's side, which no hint changes): 6.7 heap + 9.0 TOAST + 6.4 TOAST
    /// index.
    pub const COLD_PY: TableModel = TableModel::Toast {
        heap: 6.7,
        toast_index: 6.4,
        toast: 9.0,
    };

    /// Table blocks a query touches (each a buffer hit when the table is resident).
    fn blocks(&self) -> usize {
        match *self {
            TableModel::Inline { rows } => rows,
            TableModel::Toast { .. } => 3 * ROWS,
        }
    }
}

/// Rows each query returns (`LIMIT 10`).
pub const ROWS: usize = 10;

/// The table's relations in the simulation (the index is 0).
const HEAP: u32 = 1;
const TOAST: u32 = 2;
const TOAST_INDEX: u32 = 3;

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
    forget_table_watch();
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
    let mut table = TableCursor::default();
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
            out.heap_prefetches += fetch_rows(&mut disk, &mut table, cfg, row_hints) as f64;
        } else {
            // The table is in shared buffers.
            disk.cpu(cfg.table.blocks() as f64 * cfg.sim.host.buffer_hit_us);
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

/// Where the rows of the queries so far left the table: rows fetched, next new block.
#[derive(Default)]
struct TableCursor {
    rows: u64,
    next_block: u32,
}

/// What one row reads: a new block of each relation where it misses.
#[derive(Clone, Copy)]
struct RowBlocks {
    heap: Option<u32>,
    toast_index: Option<u32>,
    toast: Option<u32>,
}

/// Whether the `row`th row overall is one of `per_10` in every 10 (spread evenly).
fn one_of(row: u64, per_10: f64) -> bool {
    let at = |r: u64| (r as f64 * per_10 / ROWS as f64).floor();
    at(row + 1) > at(row)
}

/// The executor fetches a query's rows after its walk, one after the other ([`TableModel`]).
/// Ours hints what its scan hints. Returns the hints issued.
fn fetch_rows(
    disk: &mut SimDisk,
    table: &mut TableCursor,
    cfg: &RunConfig,
    hints: RowHints,
) -> u64 {
    let blocks: Vec<RowBlocks> = match cfg.table {
        TableModel::Inline { rows } => (0..rows)
            .map(|_| {
                table.next_block += 1;
                RowBlocks {
                    heap: Some(table.next_block),
                    toast_index: None,
                    toast: None,
                }
            })
            .collect(),
        TableModel::Toast {
            heap,
            toast_index,
            toast,
        } => (0..ROWS)
            .map(|_| {
                let row = table.rows;
                table.rows += 1;
                let mut new = |misses: bool| {
                    misses.then(|| {
                        table.next_block += 1;
                        table.next_block
                    })
                };
                RowBlocks {
                    heap: new(one_of(row, heap)),
                    toast_index: new(one_of(row, toast_index)),
                    toast: new(one_of(row, toast)),
                }
            })
            .collect(),
    };
    // Block 0 of the heap stands for its resident blocks.
    disk.prewarm(HEAP, 0..1);
    let read_row = |disk: &mut SimDisk, row: &RowBlocks| {
        disk.read_block(HEAP, row.heap.unwrap_or(0));
        if let Some(block) = row.toast_index {
            disk.read_block(TOAST_INDEX, block);
        } else if matches!(cfg.table, TableModel::Toast { .. }) {
            disk.cpu(cfg.sim.host.buffer_hit_us);
        }
        if let Some(block) = row.toast {
            disk.read_block(TOAST, block);
        }
    };
    let RowHints::Ours(walk_cold) = hints else {
        for row in &blocks {
            read_row(disk, row);
        }
        return 0;
    };
    disk.set_relation(HEAP);
    let mut hints = HeapRowHints::new(&mut *disk);
    let mut looked_up = 0;
    for returned in 1..=blocks.len() {
        // The executor asks for the next row; the scan hands it out; the executor fetches
        // it.
        let slow = hints.table_is_slow();
        if walk_cold || slow {
            let next = (returned..blocks.len()).map(|row| TableRow {
                block: blocks[row].heap.unwrap_or(0),
                offset: row as u16,
            });
            // A table without out-of-line values has nothing to look up.
            let out_of_line = matches!(cfg.table, TableModel::Toast { .. });
            let mut lookup_rows = Vec::new();
            hints.ahead_rows(returned, next, |row| {
                if out_of_line {
                    lookup_rows.push(usize::from(row.offset));
                }
                0
            });
            // The scan's TOAST lookups: it reads the row's heap block (resident, or hinted a
            // call earlier), then the TOAST index leaf, and hints the TOAST blocks.
            let disk = hints.source();
            for row in lookup_rows {
                disk.read_block(HEAP, blocks[row].heap.unwrap_or(0));
                if let Some(block) = blocks[row].toast_index {
                    disk.read_block(TOAST_INDEX, block);
                }
                if let Some(block) = blocks[row].toast {
                    disk.set_relation(TOAST);
                    if disk.prefetch(block) == Prefetched::Started {
                        looked_up += 1;
                    }
                    disk.set_relation(HEAP);
                }
            }
        }
        hints.row_returned(returned);
        read_row(hints.source(), &blocks[returned - 1]);
    }
    let issued = hints.issued + looked_up;
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
