//! `ambuild` and `ambuildempty`: building an index, as pgvector 0.8.6 does.
//!
//! 1. Checks (type, dimensions, options) and the memory the build will hold, against
//!    `maintenance_work_mem`, counted as pgvector counts it ([`vector_ivf::memory`]).
//! 2. "performing k-means": a sample of the table's rows, chosen as ANALYZE chooses them
//!    (Postgres's block sampler, then reservoir sampling), normalized for spherical k-means;
//!    then the centers ([`vector_ivf::kmeans`]). An empty sample (an empty table, the INIT fork
//!    of an unlogged table) gives random centers; fewer samples than lists give pgvector's
//!    NOTICE.
//! 3. The metapage and the list pages, in list order.
//! 4. "assigning tuples": every row's value (normalized for cosine operator classes, which do
//!    not index values of norm 0) goes into Postgres's tuplesort keyed by its nearest list.
//! 5. "loading tuples": each list's entries, in sort order, fill a chain of new pages; the
//!    list then records its first and last page.
//!
//! Every page goes through generic WAL as it is written (as in pgvector); the INIT fork of an
//! unlogged index is logged once at the end. When the planner gives the table parallel
//! workers, the assignment runs in parallel (the leader takes part): each participant sorts
//! its share of the table, the leader merges the sorts (k-means and the loading stay in the
//! leader, as in pgvector).

use crate::am::ivfflat::insert::index_value;
use crate::am::ivfflat::options;
use crate::am::shared::build::{maintenance_work_mem_kb, report_progress, TableScan};
use crate::am::shared::parallel::{Coordinate, MethodChunks, ParallelBuild, Plan, WorkerSegment};
use crate::am::shared::sort::Tuplesort;
use crate::opclass::{self, Method, Support, TypeInfo, Value, ValueKind};
use crate::out_of_memory;
use crate::storage::page::{self, BLCKSZ};
use crate::storage::{
    item_pointer_data, item_pointer_from, ExtendedPages, Fork, Image, ItemPointer, PageReadGuard,
    PageRef, PageWriteGuard, Relation, WriteMode,
};
use crate::stores::ivfflat::format::{
    encode_list_tuple, list_tuple_size, new_opaque, MetaPage, META_PD_LOWER, OPAQUE_SIZE,
};
use crate::stores::ivfflat::lists;
use pgrx::{pg_guard, pg_sys};
use std::collections::VecDeque;
use vector_formats::page::{maxalign, ChainOpaque, INVALID_BLOCK_NUMBER};
use vector_formats::varlena::{
    bit_size, dense_size, header_4b, read_bit, read_halfvec, read_vector, BIT_HEADER,
    BIT_LEN_OFFSET, DENSE_DIM_OFFSET, DENSE_HEADER,
};
use vector_ivf::layout::PagePlanner;
use vector_ivf::{kmeans, memory, Random, Space};

/// pgvector's `PROGRESS_IVFFLAT_PHASE_KMEANS`.
pub const PHASE_KMEANS: i64 = 2;
/// pgvector's `PROGRESS_IVFFLAT_PHASE_ASSIGN`.
pub const PHASE_ASSIGN: i64 = 3;
/// pgvector's `PROGRESS_IVFFLAT_PHASE_LOAD`.
pub const PHASE_LOAD: i64 = 4;

/// Raises pgvector's error when `total` bytes exceed `maintenance_work_mem`.
fn check_memory(total: Result<usize, memory::Overflow>) -> usize {
    let total =
        total.unwrap_or_else(|_| pgrx::error!("requested shared memory size overflows size_t"));
    if let Some((required, limit)) = memory::exceeds(total, maintenance_work_mem_kb()) {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("memory required is {required} MB, maintenance_work_mem is {limit} MB")
        );
    }
    total
}

/// The backend's random numbers (its global generator, as pgvector uses).
struct BackendRandom;

impl Random for BackendRandom {
    fn double(&mut self) -> f64 {
        // SAFETY: the backend's generator, used only from this thread.
        unsafe { pg_sys::pg_prng_double(&raw mut pg_sys::pg_global_prng_state) }
    }
    fn uint32(&mut self) -> u32 {
        // SAFETY: as above.
        unsafe { pg_sys::pg_prng_uint32(&raw mut pg_sys::pg_global_prng_state) }
    }
}

/// The operator class's values as k-means sees them: its k-means distance and norm (support
/// functions 3 and 4) and the type's center helpers.
struct KmeansSpace<'a> {
    kind: ValueKind,
    dimensions: usize,
    kmeans: &'a Support,
    /// Support function 2 (cosine): centers must not have norm 0.
    search: &'a Support,
}

impl Space for KmeansSpace<'_> {
    type Point = Value;

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn distance(&self, a: &Value, b: &Value) -> f64 {
        self.kmeans.value_distance(a, b)
    }

    fn distances(&self, pairs: &[(&Value, &Value)], out: &mut [f64]) {
        let mut bytes: [(&[u8], &[u8]); 4] = [(&[], &[]); 4];
        for (chunk, out) in pairs.chunks(4).zip(out.chunks_mut(4)) {
            for (b, (x, y)) in bytes.iter_mut().zip(chunk) {
                *b = (
                    x.bytes().expect("a sample or center is not NULL"),
                    y.bytes().expect("a sample or center is not NULL"),
                );
            }
            self.kmeans.pair_distances(&bytes[..chunk.len()], out);
        }
    }

    fn batch(&self) -> usize {
        self.kmeans.pair_batch()
    }

    fn spherical(&self) -> bool {
        self.kmeans.normalizes()
    }

    fn normalize(&self, point: &Value) -> Value {
        self.kmeans.normalized(point)
    }

    fn add_to(&self, point: &Value, sums: &mut [f32]) {
        let bytes = point.bytes().expect("a sample or center is not NULL");
        match self.kind {
            ValueKind::Vector => {
                let v = read_vector(bytes).expect("a checked vector");
                for (s, x) in sums.iter_mut().zip(v.x) {
                    *s += *x;
                }
            }
            ValueKind::Halfvec => {
                let v = read_halfvec(bytes).expect("a checked halfvec");
                for (s, x) in sums.iter_mut().zip(v.x) {
                    *s += x.to_f32();
                }
            }
            ValueKind::Bit => {
                let v = read_bit(bytes).expect("a checked bit string");
                for (i, s) in sums.iter_mut().enumerate().take(v.bit_len as usize) {
                    if v.bytes[i / 8] & (0x80 >> (i % 8)) != 0 {
                        *s += 1.0;
                    }
                }
            }
            ValueKind::Sparsevec => unreachable!("ivfflat has no sparsevec operator class"),
        }
    }

    fn point_from(&self, x: &[f32]) -> Value {
        let d = self.dimensions;
        let mut bytes;
        match self.kind {
            ValueKind::Vector => {
                bytes = vec![0u8; dense_size::<f32>(d)];
                bytes[DENSE_DIM_OFFSET..DENSE_DIM_OFFSET + 2]
                    .copy_from_slice(&(d as i16).to_ne_bytes());
                for (out, v) in bytes[DENSE_HEADER..].chunks_exact_mut(4).zip(x) {
                    out.copy_from_slice(&v.to_ne_bytes());
                }
            }
            ValueKind::Halfvec => {
                bytes = vec![0u8; dense_size::<half::f16>(d)];
                bytes[DENSE_DIM_OFFSET..DENSE_DIM_OFFSET + 2]
                    .copy_from_slice(&(d as i16).to_ne_bytes());
                for (out, v) in bytes[DENSE_HEADER..].chunks_exact_mut(2).zip(x) {
                    out.copy_from_slice(&half::f16::from_f32(*v).to_bits().to_ne_bytes());
                }
            }
            ValueKind::Bit => {
                bytes = vec![0u8; bit_size(d)];
                bytes[BIT_LEN_OFFSET..BIT_LEN_OFFSET + 4]
                    .copy_from_slice(&(d as i32).to_ne_bytes());
                for (i, v) in x.iter().enumerate() {
                    if *v > 0.5 {
                        bytes[BIT_HEADER + i / 8] |= 0x80 >> (i % 8);
                    }
                }
            }
            ValueKind::Sparsevec => unreachable!("ivfflat has no sparsevec operator class"),
        }
        let len = bytes.len();
        bytes[..4].copy_from_slice(&header_4b(len));
        Value::from_bytes(&bytes)
    }

    fn center_norm(&self, point: &Value) -> Option<f64> {
        self.search.norm_of(point)
    }
}

/// Bytes of one value of `dimensions` (pgvector's `itemSize`, before alignment).
fn item_size(kind: ValueKind, dimensions: usize) -> usize {
    match kind {
        ValueKind::Vector => dense_size::<f32>(dimensions),
        ValueKind::Halfvec => dense_size::<half::f16>(dimensions),
        ValueKind::Bit => bit_size(dimensions),
        ValueKind::Sparsevec => unreachable!("ivfflat has no sparsevec operator class"),
    }
}

/// The sampling scan's state.
struct Sampler<'a> {
    kmeans: &'a Support,
    samples: Vec<Value>,
    target_samples: usize,
    sample_rows: f64,
    rows_to_skip: f64,
    reservoir: pg_sys::ReservoirStateData,
}

/// The assignment scan's state, in the leader or a parallel worker.
struct Assigner<'a> {
    search: &'a Support,
    centers: Vec<Value>,
    /// One per center, for the tuple at hand.
    distances: Vec<f64>,
    sort: Tuplesort,
    indexed: i64,
}

/// `ambuild`.
#[pg_guard]
pub unsafe extern "C-unwind" fn build(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> *mut pg_sys::IndexBuildResult {
    // SAFETY: Postgres hands ambuild the open, locked heap and index for the whole call.
    let (reltuples, indtuples) = unsafe { build_index(Some(heap), index, index_info, Fork::Main) };
    // SAFETY: a zeroed IndexBuildResult in the current memory context, returned to Postgres.
    unsafe {
        let result = pg_sys::palloc0(std::mem::size_of::<pg_sys::IndexBuildResult>())
            .cast::<pg_sys::IndexBuildResult>();
        (*result).heap_tuples = reltuples;
        (*result).index_tuples = indtuples as f64;
        result
    }
}

/// `ambuildempty`: the INIT fork of an unlogged index, with random centers and empty lists.
#[pg_guard]
pub unsafe extern "C-unwind" fn build_empty(index: pg_sys::Relation) {
    // SAFETY: Postgres hands ambuildempty the open, locked index; BuildIndexInfo describes it.
    unsafe {
        let info = pg_sys::BuildIndexInfo(index);
        build_index(None, index, info, Fork::Init);
    }
}

/// The build of the index into `fork`; with no heap (the INIT fork), an empty index.
///
/// # Safety
///
/// `heap` (if any) and `index` are open and locked for the call; `index_info` describes the
/// index.
unsafe fn build_index(
    heap: Option<pg_sys::Relation>,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
    fork: Fork,
) -> (f64, i64) {
    // SAFETY: per the contract.
    let rel = unsafe { Relation::from_raw(index, fork) };
    let search = Support::for_index(rel, Method::Ivfflat);
    let kmeans = Support::with_procs(rel, Method::Ivfflat, 3, 4);
    let type_info: &TypeInfo = search.type_info();
    let dimensions = opclass::check_build_column(rel, type_info, Method::Ivfflat) as usize;
    let lists = options::lists(rel);
    if kmeans.normalizes() && dimensions == 1 {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "dimensions must be greater than one for this opclass"
        );
    }
    let item = item_size(type_info.kind, dimensions);
    let centers_size = check_memory(memory::vector_array_size(lists, item));

    // Sampling and k-means.
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_KMEANS);
    // SAFETY: the heap is open (contract).
    let heap_blocks = heap.map_or(0, |h| unsafe {
        Relation::from_raw(h, Fork::Main).nblocks() as usize
    });
    let target_samples = if heap.is_some() {
        memory::sample_count(lists, heap_blocks)
    } else {
        1
    };
    let samples_size = check_memory(
        memory::vector_array_size(target_samples, item)
            .and_then(|s| s.checked_add(centers_size).ok_or(memory::Overflow)),
    );
    let mut samples = Vec::new();
    out_of_memory::reserve(&mut samples, target_samples, "ivfflat build samples");
    let mut state = Sampler {
        kmeans: &kmeans,
        samples,
        target_samples,
        sample_rows: 0.0,
        rows_to_skip: -1.0,
        // SAFETY: a plain C struct, initialized by reservoir_init_selection_state before use.
        reservoir: unsafe { std::mem::zeroed() },
    };
    if let Some(heap) = heap {
        // SAFETY: per the contract.
        unsafe { sample_rows(&mut state, heap, index, index_info, heap_blocks) };
        // Fresh copies, made one after another, lie next to each other in memory: k-means
        // reads them many times over, and the sampling left them scattered.
        state.samples = if kmeans.normalizes() {
            state.samples.iter().map(|s| kmeans.normalized(s)).collect()
        } else {
            state.samples.to_vec()
        };
        if state.samples.len() < lists {
            pg_sys::panic::ErrorReport::new(
                pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                "ivfflat index created with little data",
                "build",
            )
            .set_detail("This will cause low recall.")
            .set_hint("Drop the index until the table has more data.")
            .report(pgrx::PgLogLevel::NOTICE);
        }
    }
    if !state.samples.is_empty() {
        let n = state.samples.len();
        check_memory(
            memory::kmeans_size(lists, n, dimensions, item)
                .and_then(|k| k.checked_add(samples_size).ok_or(memory::Overflow)),
        );
    }
    let space = KmeansSpace {
        kind: type_info.kind,
        dimensions,
        kmeans: &kmeans,
        search: &search,
    };
    let centers = kmeans::centers(&space, &state.samples, lists, &mut BackendRandom, || {
        pgrx::check_for_interrupts!();
    })
    .unwrap_or_else(|e| match e {
        kmeans::CenterError::OutOfMemory(bytes) => out_of_memory::raise(bytes, "k-means bounds"),
        e => pgrx::error!("{}", e.message()),
    });
    drop(state);

    // The metapage and the list pages.
    let locations = write_lists(rel, dimensions, &centers, item);

    // Assignment, in parallel when the planner gives the table workers.
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_ASSIGN);
    let (value_type, _) = opclass::column_type(rel);
    let mwm = maintenance_work_mem_kb() as i32;
    let mut parallel = match heap {
        // SAFETY: per the contract.
        Some(heap) => unsafe { begin_parallel(heap, index, index_info, &centers, item) },
        None => None,
    };
    let (reltuples, indexed, mut sort) = match (&mut parallel, heap) {
        (Some(build), Some(heap)) => {
            // The leader takes its share of the table, then merges every participant's sort.
            let mut share = build.worker_coordinate();
            let mut assigner = Assigner::new(
                &search,
                centers,
                Tuplesort::by_list(value_type, mwm / build.sorts, Some(&mut share)),
            );
            // SAFETY: per the contract; the scan is the build's parallel scan of this heap.
            let reltuples = unsafe {
                assign_scan(
                    heap,
                    index,
                    index_info,
                    &mut assigner,
                    build.table_scan(heap),
                    true,
                )
            };
            assigner.sort.perform();
            build.shared().finish_share(reltuples, assigner.indexed);
            pgrx::debug1!("leader processed {} tuples", reltuples as i64);
            drop(assigner);
            build.wait_for_shares();
            let (reltuples, indexed) = build.shared().totals();
            let mut merge = build.leader_coordinate();
            let sort = Tuplesort::by_list(value_type, mwm, Some(&mut merge));
            (
                reltuples,
                indexed,
                SortWithCoordinate {
                    sort,
                    _coordinate: Some(merge),
                },
            )
        }
        (_, heap) => {
            let mut assigner =
                Assigner::new(&search, centers, Tuplesort::by_list(value_type, mwm, None));
            let reltuples = match heap {
                // SAFETY: per the contract.
                Some(heap) => unsafe {
                    assign_scan(
                        heap,
                        index,
                        index_info,
                        &mut assigner,
                        std::ptr::null_mut(),
                        true,
                    )
                },
                None => 0.0,
            };
            let indexed = assigner.indexed;
            (
                reltuples,
                indexed,
                SortWithCoordinate {
                    sort: assigner.sort,
                    _coordinate: None,
                },
            )
        }
    };

    // Loading.
    report_progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, indexed);
    sort.sort.perform();
    load_lists(rel, &mut sort.sort, &locations);
    drop(sort);
    drop(parallel);
    if fork == Fork::Init {
        rel.log_newpage_range();
    }
    (reltuples, indexed)
}

/// A sort and the coordinate it was begun with (which must outlive it).
struct SortWithCoordinate {
    sort: Tuplesort,
    _coordinate: Option<Coordinate>,
}

impl<'a> Assigner<'a> {
    fn new(search: &'a Support, centers: Vec<Value>, sort: Tuplesort) -> Self {
        Assigner {
            search,
            distances: vec![0.0; centers.len()],
            centers,
            sort,
            indexed: 0,
        }
    }
}

/// Scans the table (all of it, or a parallel scan's share) into the assigner's sort; returns
/// the table tuples seen.
///
/// # Safety
///
/// As for [`build_index`]; `scan` is null or a parallel scan of `heap`.
unsafe fn assign_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
    assigner: &mut Assigner<'_>,
    scan: pg_sys::TableScanDesc,
    progress: bool,
) -> f64 {
    let mut row = |datum: pg_sys::Datum, tid: ItemPointer| assigner.assign(datum, tid);
    let mut table = TableScan::new("Ivfflat build temporary context", &mut row);
    // SAFETY: per the contract.
    unsafe { table.run(heap, index, index_info, progress, scan) }
}

/// The entry point pgvector names for parallel workers.
const WORKER_ENTRY: &std::ffi::CStr = c"IvfflatParallelBuildMain";

/// Starts the parallel assignment when the planner gives the table workers (the table's
/// `parallel_workers`, `max_parallel_maintenance_workers`); the centers go to the workers in
/// one chunk of `MAXALIGN(item)`-byte slots.
///
/// # Safety
///
/// As for [`build_index`].
unsafe fn begin_parallel(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
    centers: &[Value],
    item: usize,
) -> Option<ParallelBuild> {
    // SAFETY: per the contract.
    let workers = unsafe { pg_sys::plan_create_index_workers((*heap).rd_id, (*index).rd_id) };
    if workers <= 0 {
        return None;
    }
    let slot = maxalign(item);
    let size = slot * centers.len();
    // SAFETY: per the contract; the chunk is `size` bytes, filled before workers start.
    unsafe {
        ParallelBuild::begin(
            Plan {
                entry: WORKER_ENTRY,
                workers,
                concurrent: (*index_info).ii_Concurrent,
                sort: true,
                // The merge counts on the leader's sort, as pgvector's does.
                leader_participates: true,
            },
            heap,
            index,
            MethodChunks { sizes: &[size] },
            |chunks| {
                let out = std::slice::from_raw_parts_mut(chunks[0], size);
                out.fill(0);
                for (i, center) in centers.iter().enumerate() {
                    let bytes = center.bytes().expect("a center");
                    out[i * slot..i * slot + bytes.len()].copy_from_slice(bytes);
                }
            },
        )
    }
}

/// A parallel worker of an ivfflat build: its share of the assignment scan, into its part of
/// the shared sort.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn IvfflatParallelBuildMain(
    seg: *mut pg_sys::dsm_segment,
    toc: *mut pg_sys::shm_toc,
) {
    // SAFETY: Postgres calls this with the leader's segment and table of contents; the
    // relations are opened with the locks index.c holds for the build and closed here.
    unsafe {
        let segment = WorkerSegment::attach(seg, toc);
        let shared = segment.shared();
        let (heap_lock, index_lock) = segment.lock_modes();
        let heap = pg_sys::table_open(shared.heap_oid, heap_lock);
        let index = pg_sys::index_open(shared.index_oid, index_lock);
        let index_info = pg_sys::BuildIndexInfo(index);
        (*index_info).ii_Concurrent = shared.concurrent;
        let rel = Relation::from_raw(index, Fork::Main);
        let search = Support::for_index(rel, Method::Ivfflat);
        let type_info = search.type_info();
        let (value_type, dimensions) = opclass::column_type(rel);
        let lists = options::lists(rel);
        let item = item_size(type_info.kind, dimensions.max(0) as usize);
        check_memory(memory::vector_array_size(lists, item));
        let slot = maxalign(item);
        let chunk = std::slice::from_raw_parts(segment.chunk(0), slot * lists);
        let centers = (0..lists)
            .map(|i| {
                let bytes = &chunk[i * slot..(i + 1) * slot];
                let len = vector_formats::varlena::varsize_4b(bytes).expect("a center");
                Value::from_bytes(&bytes[..len])
            })
            .collect();
        let mwm = maintenance_work_mem_kb() as i32 / shared.participants;
        let mut share = segment.worker_coordinate();
        let mut assigner = Assigner::new(
            &search,
            centers,
            Tuplesort::by_list(value_type, mwm, Some(&mut share)),
        );
        let reltuples = assign_scan(
            heap,
            index,
            index_info,
            &mut assigner,
            segment.table_scan(heap),
            false,
        );
        assigner.sort.perform();
        shared.finish_share(reltuples, assigner.indexed);
        pgrx::debug1!("worker processed {} tuples", reltuples as i64);
        drop(assigner);
        pg_sys::index_close(index, index_lock);
        pg_sys::table_close(heap, heap_lock);
    }
}

/// ANALYZE's sample of rows: Postgres's block sampler picks blocks, each block's rows go
/// through reservoir sampling (pgvector's `SampleRows`).
///
/// # Safety
///
/// As for [`build_index`], with the heap present.
unsafe fn sample_rows(
    state: &mut Sampler<'_>,
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
    heap_blocks: usize,
) {
    let target = state.target_samples as i32;
    // SAFETY: a plain C struct that BlockSampler_Init fills; the reservoir state is the
    // build state's, initialized here; each range scan reads one block and calls back with
    // `state` during the call only.
    unsafe {
        let mut sampler: pg_sys::BlockSamplerData = std::mem::zeroed();
        let seed = pg_sys::pg_prng_uint32(&raw mut pg_sys::pg_global_prng_state);
        pg_sys::BlockSampler_Init(
            &mut sampler,
            heap_blocks as pg_sys::BlockNumber,
            target,
            seed,
        );
        pg_sys::reservoir_init_selection_state(&mut state.reservoir, target);
        let mut row = |datum: pg_sys::Datum, _: ItemPointer| state.sample(datum);
        let mut scan = TableScan::new("Ivfflat build temporary context", &mut row);
        while pg_sys::BlockSampler_HasMore(&mut sampler) {
            let block = pg_sys::BlockSampler_Next(&mut sampler);
            scan.run_range(heap, index, index_info, block, 1);
        }
    }
}

impl Assigner<'_> {
    /// One row of the table into the sort, keyed by the list of its nearest center.
    fn assign(&mut self, datum: pg_sys::Datum, tid: ItemPointer) {
        // SAFETY: a non-NULL value of the indexed column's type.
        let Some(value) = (unsafe { index_value(self.search, datum) }) else {
            return;
        };
        let query = self.search.prepare(&value);
        for (chunk, out) in self.centers.chunks(4).zip(self.distances.chunks_mut(4)) {
            let mut bytes: [&[u8]; 4] = [&[]; 4];
            for (b, center) in bytes.iter_mut().zip(chunk) {
                *b = center.bytes().expect("a center");
            }
            query.distances(&bytes[..chunk.len()], out);
        }
        let list = vector_ivf::assign::nearest_list(self.distances.iter().copied());
        let mut tid = item_pointer_data(tid);
        let bytes = value.bytes().expect("not NULL");
        self.sort.put(&[
            pg_sys::Datum::from(list as i32),
            pg_sys::Datum::from(&raw mut tid),
            pg_sys::Datum::from(bytes.as_ptr()),
        ]);
        self.indexed += 1;
    }
}

impl Sampler<'_> {
    /// One row of a sampled block: kept, or not, by the reservoir.
    fn sample(&mut self, datum: pg_sys::Datum) {
        if self.kmeans.normalizes() {
            // SAFETY: a non-NULL value of the indexed column's type.
            let value = unsafe { Value::from_datum(datum) };
            // Spherical k-means needs unit vectors: values that cannot be normalized are left
            // out (and not counted).
            if self.kmeans.norm_of(&value).is_some_and(|n| n > 0.0) {
                if let Some(slot) = self.next_slot() {
                    self.place(slot, value);
                }
            }
        } else if let Some(slot) = self.next_slot() {
            // Only the rows the reservoir keeps are detoasted and copied.
            // SAFETY: a non-NULL value of the indexed column's type.
            let value = unsafe { Value::from_datum(datum) };
            self.place(slot, value);
        }
    }

    /// Counts one more row and says where the reservoir puts it: `Some(i)` (`i` = the number
    /// of samples so far: appended), or `None` (skipped).
    fn next_slot(&mut self) -> Option<usize> {
        let slot = if self.samples.len() < self.target_samples {
            Some(self.samples.len())
        } else {
            let target = self.target_samples as i32;
            if self.rows_to_skip < 0.0 {
                // SAFETY: the reservoir state was initialized by sample_rows.
                self.rows_to_skip = unsafe {
                    pg_sys::reservoir_get_next_S(&mut self.reservoir, self.sample_rows, target)
                };
            }
            let slot = if self.rows_to_skip <= 0.0 {
                // SAFETY: as above.
                let fract = unsafe { pg_sys::sampler_random_fract(&mut self.reservoir.randstate) };
                let k = (f64::from(target) * fract) as usize;
                Some(k.min(self.samples.len() - 1))
            } else {
                None
            };
            self.rows_to_skip -= 1.0;
            slot
        };
        self.sample_rows += 1.0;
        slot
    }

    /// Puts `value` where [`Sampler::next_slot`] said.
    fn place(&mut self, slot: usize, value: Value) {
        if slot == self.samples.len() {
            self.samples.push(value);
        } else {
            self.samples[slot] = value;
        }
    }
}

/// Writes the metapage and the list tuples (with no pages yet); returns each list's place.
fn write_lists(
    rel: Relation,
    dimensions: usize,
    centers: &[Value],
    item: usize,
) -> Vec<ItemPointer> {
    let mut guard = rel.begin_write(WriteMode::Wal);
    let slot = guard.add_new_page(OPAQUE_SIZE);
    {
        let mut page = guard.page_mut(slot);
        new_opaque().encode(page.special_mut());
        MetaPage::new(dimensions as u16, centers.len() as u16).encode(page.contents_mut());
        page.set_lower(META_PD_LOWER as u16);
    }
    guard.commit();

    let size = list_tuple_size(maxalign(item));
    let mut guard = rel.begin_write(WriteMode::Wal);
    let mut slot = new_chain_page(&mut guard, None);
    let mut locations = Vec::with_capacity(centers.len());
    for center in centers {
        if guard.page(slot).free_space() < size {
            (guard, slot) = append_page(rel, guard, slot, None);
        }
        let tuple = encode_list_tuple(
            INVALID_BLOCK_NUMBER,
            INVALID_BLOCK_NUMBER,
            center.bytes().expect("a center"),
            size,
        );
        let Some(offset) = guard.page_mut(slot).add_item(&tuple) else {
            pgrx::error!("failed to add index item to \"{}\"", rel.name());
        };
        locations.push(ItemPointer::new(guard.block(slot), offset));
    }
    guard.commit();
    locations
}

/// Adds a new page to `guard` with the ivfflat special space: `extended`, a block added to
/// the index ahead of time, or else one added now. Returns its slot.
fn new_chain_page(guard: &mut PageWriteGuard, extended: Option<PageReadGuard>) -> usize {
    let slot = match extended {
        Some(page) => guard.add_extended_page(page, OPAQUE_SIZE),
        None => guard.add_new_page(OPAQUE_SIZE),
    };
    new_opaque().encode(guard.page_mut(slot).special_mut());
    slot
}

/// pgvector's `IvfflatAppendPage`: a new page (as [`new_chain_page`]) linked after the one in
/// `slot`, both written in one record; the new page stays locked in a new record, which is
/// returned with its slot.
fn append_page(
    rel: Relation,
    mut guard: PageWriteGuard,
    slot: usize,
    extended: Option<PageReadGuard>,
) -> (PageWriteGuard, usize) {
    let new_slot = new_chain_page(&mut guard, extended);
    let new_block = guard.block(new_slot);
    ChainOpaque::set_next_blkno(guard.page_mut(slot).special_mut(), new_block);
    let mut held = guard.commit();
    let page = held.take(new_slot).expect("the new page was registered");
    drop(held);
    let mut guard = rel.begin_write(WriteMode::Wal);
    let slot = guard.register(page, Image::Full);
    (guard, slot)
}

/// Entry pages the load counts ahead and adds to the index at once.
const PAGES_AHEAD: u64 = 64;

/// The sorted entries of the load, formed into index tuples a little ahead of their writing,
/// so that the pages they fill are counted ([`PagePlanner`]) and added to the index many at a
/// time ([`Relation::extend_by`]): the blocks are the ones adding pages one by one would give.
struct EntryFeed<'a> {
    rel: Relation,
    sort: &'a mut Tuplesort,
    lists: usize,
    /// Formed tuples with their lists, pulled from the sort and counted.
    ahead: VecDeque<(usize, Vec<u8>)>,
    sorted_out: bool,
    planner: PagePlanner,
    /// Blocks added ahead and not used yet.
    extended: ExtendedPages,
    /// Pages added so far, ahead or one by one.
    added: u64,
}

impl<'a> EntryFeed<'a> {
    fn new(rel: Relation, sort: &'a mut Tuplesort, lists: usize) -> Self {
        let mut empty = vec![0u8; BLCKSZ];
        page::init(&mut empty, OPAQUE_SIZE);
        EntryFeed {
            rel,
            sort,
            lists,
            ahead: VecDeque::new(),
            sorted_out: false,
            planner: PagePlanner::new(PageRef::new(&empty).exact_free_space()),
            extended: rel.extend_by(0),
            added: 0,
        }
    }

    /// Pulls entries from the sort until `pages` more pages than added so far are counted,
    /// or the sort is done (then the lists with no entries left are counted too).
    fn pull(&mut self, pages: u64) {
        while !self.sorted_out && self.planner.pages() < self.added + pages {
            let Some(values) = self.sort.next_tuple() else {
                self.sorted_out = true;
                self.planner.finish(self.lists);
                break;
            };
            let list = values[0].value() as i32 as usize;
            // SAFETY: the second column is a tid by reference into the sort's slot.
            let tid = unsafe { item_pointer_from(values[1].cast_mut_ptr()) };
            let tuple = crate::stores::ivfflat::entries::form_tuple(self.rel, values[2], tid);
            self.planner.entry(list, tuple.len());
            self.ahead.push_back((list, tuple));
        }
    }

    /// The next entry of `list`, if any is left.
    fn next_in(&mut self, list: usize) -> Option<Vec<u8>> {
        if self.ahead.is_empty() {
            self.pull(1);
        }
        match self.ahead.front() {
            Some((l, _)) if *l == list => self.ahead.pop_front().map(|(_, tuple)| tuple),
            _ => None,
        }
    }

    /// The block for the next new page: one added ahead (adding the next ones counted when
    /// none is left), or `None` for one added now.
    fn next_page(&mut self) -> Option<PageReadGuard> {
        if self.extended.is_empty() {
            self.pull(PAGES_AHEAD);
            // At most PAGES_AHEAD pinned at once: the lists with no entries left are all
            // counted when the sort ends, and there can be thousands.
            let count = self
                .planner
                .pages()
                .saturating_sub(self.added)
                .min(PAGES_AHEAD);
            if count > 1 {
                self.extended = self.rel.extend_by(count as u32);
                self.added += self.extended.len() as u64;
            }
        }
        let page = self.extended.take();
        if page.is_none() {
            self.added += 1;
        }
        page
    }
}

/// Writes every list's entries from the sort (in list order) into a chain of new pages, and
/// records each list's first and last page.
fn load_lists(rel: Relation, sort: &mut Tuplesort, locations: &[ItemPointer]) {
    let mut feed = EntryFeed::new(rel, sort, locations.len());
    let mut inserted = 0i64;
    for (list, location) in locations.iter().enumerate() {
        pgrx::check_for_interrupts!();
        let mut guard = rel.begin_write(WriteMode::Wal);
        let mut slot = new_chain_page(&mut guard, feed.next_page());
        let start = guard.block(slot);
        while let Some(tuple) = feed.next_in(list) {
            if guard.page(slot).free_space() < maxalign(tuple.len()) {
                let page = feed.next_page();
                (guard, slot) = append_page(rel, guard, slot, page);
            }
            if guard.page_mut(slot).add_item(&tuple).is_none() {
                pgrx::error!("failed to add index item to \"{}\"", rel.name());
            }
            inserted += 1;
            report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, inserted);
        }
        let insert_page = guard.block(slot);
        guard.commit();
        lists::update_list(
            rel,
            WriteMode::Wal,
            *location,
            insert_page,
            INVALID_BLOCK_NUMBER,
            start,
        );
    }
    if !feed.extended.is_empty() {
        // The count and the pages disagree: blocks were added that no list uses.
        pgrx::error!(
            "ivfflat build of \"{}\" added {} pages it did not fill",
            rel.name(),
            feed.extended.len()
        );
    }
}
