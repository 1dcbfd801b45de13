//! A parallel `ambuild`: the leader and its workers each take a share of the table and insert
//! into one graph in the build's dynamic shared memory, as pgvector 0.8.6 does.
//!
//! 1. **Workers.** As in pgvector: none when the planner would give the build none; otherwise
//!    the table's `parallel_workers` (at most `max_parallel_maintenance_workers`), or else
//!    `max_parallel_maintenance_workers`. Fewer may start; with none the build is serial. The
//!    leader takes a share unless `parallel_leader_participation` is off.
//! 2. **The graph** gets pgvector's area: `maintenance_work_mem` less 3 MB (when that leaves
//!    anything) for every participant together. Before the segment is made, a
//!    `dynamic_shared_memory_type = posix` server's `/dev/shm` is checked for room: with too
//!    little the build goes on serially in the backend's memory with a NOTICE naming what to
//!    change, where pgvector fails in the middle of `dsm_create`.
//! 3. **Inserts** hold the graph's flush lock in share mode. When what pgvector would have
//!    allocated comes within 1 MB of the area (pgvector's margin, so an allocation never fails),
//!    the participant that sees it first takes the flush lock in exclusive mode, which waits
//!    out the inserts in flight, says so with pgvector's NOTICE, and writes the graph to the
//!    pages. From then on every participant inserts into the pages, as `aminsert` does but
//!    without WAL, under the index's page locks.
//! 4. **The end.** The leader waits for every share, showing every participant's tuples in
//!    `pg_stat_progress_create_index` while it waits, writes the graph unless it was written,
//!    and then ends the workers.
//!
//! A cancel or an ERROR in any participant aborts the build: the leader's transaction ends the
//! workers and the segment, and nothing of the index survives the abort.
//!
//! A quantized index ([`build_quantized`]) differs in how the rows reach the graph. First every
//! participant reads its share of the table into a file of its own in the build's shared file
//! set, with the sum of its rows; once every share is read, the leader fixes the quantizer (the
//! centroid is the mean over all shares) and publishes it. Then every participant takes rows
//! from those files, a few at a time, and inserts their code records into the shared graph. The
//! graph's memory, the flush and the end are as above; whoever writes the graph out reads the
//! vectors back from the files.

use crate::am::hnsw::build::{
    check_build, flush_graph, maintenance_work_mem, report_progress, BuildParams, NoLongerFits,
    ScanState,
};
use crate::am::hnsw::build_quantized::{
    code_kind, fix_quantizer, row_value, scan_rows, stored_record_size, stored_value, Rows,
    Scanned, Table,
};
use crate::am::hnsw::insert::{insert_on_disk, Levels};
use crate::am::hnsw::options;
use crate::am::shared::parallel::{MethodChunks, ParallelBuild, Plan, WorkerSegment};
use crate::opclass::codes::CodeSpace;
use crate::opclass::{Method, Support, Value};
use crate::storage::page::maxalign;
use crate::storage::temp_file::{SharedFiles, TempFile};
use crate::storage::{Fork, ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, GraphHeader, SharedRegion};
use crate::stores::hnsw::build_pages::write_graph;
use crate::stores::hnsw::page_graph::PageGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::pg_sys::ParallelWorkerNumber;
use pgrx::{pg_guard, pg_sys};
use std::ffi::CStr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use vector_formats::hnsw_codes::{CodeMetric, QuantizerMeta, NO_VECTOR_PAGE};
use vector_hnsw::storage::NewElement;

/// The entry point pgvector names for its workers.
const WORKER_ENTRY: &CStr = c"HnswParallelBuildMain";

/// pgvector leaves this much of `maintenance_work_mem` to the rest of the segment (and Docker's
/// default 64 MB `/dev/shm`).
const OTHER_SHARED_MEMORY: usize = 3 * 1024 * 1024;

/// The graph is full when what pgvector would have allocated comes this close to the area.
const MARGIN: usize = 1024 * 1024;

/// The size of the shared graph's area, as pgvector sizes it (at most 32 GB: ids are word
/// offsets).
fn area_bytes() -> usize {
    let mwm = maintenance_work_mem();
    let area = if mwm > OTHER_SHARED_MEMORY {
        mwm - OTHER_SHARED_MEMORY
    } else {
        mwm
    };
    area.min(8 * u32::MAX as usize)
}

/// Where the arena starts in the graph's chunk.
fn arena_offset() -> usize {
    maxalign(size_of::<GraphHeader>())
}

/// pgvector's worker count.
///
/// # Safety
///
/// `heap` and `index` are the build's open relations.
unsafe fn compute_workers(heap: pg_sys::Relation, index: pg_sys::Relation) -> i32 {
    // SAFETY: per the contract; rd_options of a table is its StdRdOptions, or null.
    unsafe {
        if pg_sys::plan_create_index_workers((*heap).rd_id, (*index).rd_id) == 0 {
            return 0;
        }
        let options = (*heap).rd_options.cast::<pg_sys::StdRdOptions>();
        let max = pg_sys::max_parallel_maintenance_workers;
        if !options.is_null() && (*options).parallel_workers != -1 {
            (*options).parallel_workers.min(max)
        } else {
            max
        }
    }
}

/// When a `posix` server's `/dev/shm` has less room than `bytes`: what it has.
fn shm_too_small(bytes: usize) -> Option<u64> {
    // SAFETY: a plain int GUC of the server, read by value.
    if unsafe { pg_sys::dynamic_shared_memory_type } != pg_sys::DSM_IMPL_POSIX as i32 {
        return None;
    }
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a statvfs buffer that the call fills on success.
    let ok = unsafe { libc::statvfs(c"/dev/shm".as_ptr(), stat.as_mut_ptr()) } == 0;
    if !ok {
        return None;
    }
    // SAFETY: statvfs succeeded and filled the buffer.
    let stat = unsafe { stat.assume_init() };
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    (free < bytes as u64).then_some(free)
}

fn megabytes(bytes: u64) -> u64 {
    bytes.div_ceil(1024 * 1024)
}

/// One participant's inserts into the shared graph, then into the pages once it was written.
struct Participant<'s> {
    rel: Relation,
    checked: BuildParams,
    header: &'s GraphHeader,
    graph: BuildGraph<'s, SharedRegion<'s>>,
    area: usize,
    disk: Option<Box<PageGraphWriter>>,
    /// The leader reports the build's progress.
    leader: bool,
    /// A quantized build's rows (where the vectors are until the write-out) and quantizer.
    vectors: Option<(QuantizerMeta, Rows)>,
}

/// Rows a participant takes from the files at a time.
const ROW_BATCH: u64 = 64;
/// [`QuantizedChunk::state`]: 0 (zeroed) until the leader has set up the file set, then
/// `FILES` while the participants read their shares of the table, then `READY` once the
/// quantizer is published.
const FILES: u32 = 1;
const READY: u32 = 2;

/// Sleeps a millisecond at a time, checking for interrupts, until `done`.
fn sleep_until(done: impl Fn() -> bool) {
    while !done() {
        pgrx::check_for_interrupts!();
        // SAFETY: sleeps this process for a millisecond.
        unsafe { pg_sys::pg_usleep(1000) };
    }
}

/// The name of participant `slot`'s file of rows in the build's shared file set.
fn rows_file(slot: u32) -> std::ffi::CString {
    std::ffi::CString::new(format!("hnsw rows {slot}")).expect("no NUL in the name")
}

/// What a quantized build shares besides the graph: the file set of its rows, which row is
/// next, and the quantizer. The struct is followed by the centroid (`dims` floats), then one
/// [`RowSlot`] per participant (the leader's 0, worker k's k + 1), then each participant's
/// per-dimension sum of its rows (`dims` doubles each).
#[repr(C)]
struct QuantizedChunk {
    files: pg_sys::SharedFileSet,
    state: AtomicU32,
    /// Participants done with their share of the table.
    scanned: AtomicU32,
    next_row: AtomicU64,
    slots: u32,
    dims: u32,
    bits: u8,
    metric: u8,
    seed: u64,
    vector_size: u32,
}

/// One participant's share of pass 1: its file's rows and bytes, and whether it wrote one.
#[repr(C)]
struct RowSlot {
    rows: u64,
    bytes: u64,
    written: AtomicU32,
}

impl QuantizedChunk {
    fn centroid_offset() -> usize {
        maxalign(size_of::<QuantizedChunk>())
    }

    fn slots_offset(dims: usize) -> usize {
        maxalign(Self::centroid_offset() + 4 * dims)
    }

    fn sums_offset(dims: usize, slots: usize) -> usize {
        maxalign(Self::slots_offset(dims) + slots * size_of::<RowSlot>())
    }

    fn size(dims: usize, slots: usize) -> usize {
        Self::sums_offset(dims, slots) + slots * dims * 8
    }

    /// Writes an empty chunk for `dims` dimensions and `slots` participants at `at`.
    ///
    /// # Safety
    ///
    /// `at` has [`QuantizedChunk::size`] bytes, maxaligned, that nothing else uses yet.
    unsafe fn init_at(at: *mut u8, dims: u32, slots: u32) {
        // SAFETY: per the contract; all-zero bytes are a valid chunk (atomics at 0, no file
        // set yet), and the slots are zeroed with it.
        unsafe {
            std::ptr::write_bytes(at, 0, Self::size(dims as usize, slots as usize));
            let chunk = &mut *at.cast::<QuantizedChunk>();
            chunk.dims = dims;
            chunk.slots = slots;
        }
    }

    fn base(&self) -> *mut u8 {
        (self as *const QuantizedChunk).cast::<u8>().cast_mut()
    }

    fn centroid_ptr(&self) -> *mut f32 {
        // SAFETY: the chunk was sized for the struct and `dims` floats after it (`size`).
        unsafe { self.base().add(Self::centroid_offset()).cast() }
    }

    fn slot(&self, k: u32) -> &RowSlot {
        assert!(k < self.slots, "participant {k} of {}", self.slots);
        // SAFETY: `slots` slots follow the centroid (`size`), zeroed by init_at.
        unsafe {
            &*self
                .base()
                .add(Self::slots_offset(self.dims as usize))
                .cast::<RowSlot>()
                .add(k as usize)
        }
    }

    fn sum_ptr(&self, k: u32) -> *mut f64 {
        assert!(k < self.slots, "participant {k} of {}", self.slots);
        let dims = self.dims as usize;
        // SAFETY: `slots` sums of `dims` doubles follow the slots (`size`).
        unsafe {
            self.base()
                .add(Self::sums_offset(dims, self.slots as usize))
                .cast::<f64>()
                .add(k as usize * dims)
        }
    }

    /// Participant `k` has read its share of the table into `scanned`'s file (exported).
    fn share_scanned(&self, k: u32, scanned: &Scanned) {
        let slot = self.slot(k);
        let me = (slot as *const RowSlot).cast_mut();
        // SAFETY: slot k and its sum are written only by participant k, before `written` is
        // stored; the leader reads them after loading it (release/acquire).
        unsafe {
            (*me).rows = scanned.rows.count();
            (*me).bytes = scanned.rows.bytes();
            std::ptr::copy_nonoverlapping(scanned.sum.as_ptr(), self.sum_ptr(k), scanned.sum.len());
        }
        slot.written.store(1, Ordering::Release);
        self.scanned.fetch_add(1, Ordering::AcqRel);
    }

    /// Waits (checking for interrupts) until `participants` shares are scanned; then the rows'
    /// count and per-dimension sum over every share.
    fn wait_scanned(&self, participants: u32) -> (u64, Vec<f64>) {
        sleep_until(|| self.scanned.load(Ordering::Acquire) >= participants);
        let mut count = 0;
        let mut sum = vec![0f64; self.dims as usize];
        for k in 0..self.slots {
            if self.slot(k).written.load(Ordering::Acquire) == 0 {
                continue;
            }
            count += self.slot(k).rows;
            // SAFETY: the slot was written (acquired above) and its sum has `dims` doubles.
            let part = unsafe { std::slice::from_raw_parts(self.sum_ptr(k), sum.len()) };
            for (s, p) in sum.iter_mut().zip(part) {
                *s += p;
            }
        }
        (count, sum)
    }

    /// Every share's file, in slot order, with its row count.
    fn open_rows(&self, files: &SharedFiles) -> Vec<(TempFile, u64)> {
        (0..self.slots)
            .filter(|&k| self.slot(k).written.load(Ordering::Acquire) != 0)
            .map(|k| {
                let slot = self.slot(k);
                let file = TempFile::open_shared(files, &rows_file(k), slot.bytes);
                (file, slot.rows)
            })
            .collect()
    }

    /// The quantizer is fixed: the participants may start inserting.
    fn publish(&self, quantizer: &QuantizerMeta) {
        let me = (self as *const QuantizedChunk).cast_mut();
        // SAFETY: only the leader writes these fields, before READY is stored; workers read
        // them after loading READY (release/acquire). The centroid fits (`size`).
        unsafe {
            (*me).bits = quantizer.bits;
            (*me).metric = quantizer.metric as u8;
            (*me).seed = quantizer.seed;
            (*me).vector_size = quantizer.vector_size;
            std::ptr::copy_nonoverlapping(
                quantizer.centroid.as_ptr(),
                self.centroid_ptr(),
                quantizer.centroid.len(),
            );
        }
        self.state.store(READY, Ordering::Release);
    }

    /// Waits (checking for interrupts) until the state is at least `state`.
    fn wait_for(&self, state: u32) {
        sleep_until(|| self.state.load(Ordering::Acquire) >= state);
    }

    /// The quantizer the leader published.
    fn quantizer(&self) -> QuantizerMeta {
        // SAFETY: read after wait_for(READY); `dims` floats follow the struct.
        let centroid =
            unsafe { std::slice::from_raw_parts(self.centroid_ptr(), self.dims as usize) };
        QuantizerMeta {
            bits: self.bits,
            metric: if self.metric == CodeMetric::L2Squared as u8 {
                CodeMetric::L2Squared
            } else {
                CodeMetric::NegativeInnerProduct
            },
            seed: self.seed,
            vector_insert_page: NO_VECTOR_PAGE,
            vector_size: self.vector_size,
            centroid: centroid.to_vec(),
        }
    }

    fn files_ptr(&self) -> *mut u8 {
        (&self.files as *const pg_sys::SharedFileSet)
            .cast::<u8>()
            .cast_mut()
    }
}

impl<'s> Participant<'s> {
    /// # Safety
    ///
    /// `chunk` is the graph's chunk of the build's segment, its header initialized, mapped while
    /// the participant lives.
    unsafe fn new(
        rel: Relation,
        support: &'s Support,
        checked: BuildParams,
        chunk: *mut u8,
        leader: bool,
    ) -> Self {
        // SAFETY: per the contract; the arena follows the header in the chunk.
        let (header, region) = unsafe {
            let header = &*chunk.cast::<GraphHeader>();
            (header, SharedRegion::new(chunk.add(arena_offset()), header))
        };
        Participant {
            rel,
            checked,
            header,
            graph: BuildGraph::new(support, checked.params.m, region),
            area: area_bytes(),
            disk: None,
            leader,
            vectors: None,
        }
    }

    /// Takes rows of a quantized build from the shared file until none is left, inserting each;
    /// returns how many it inserted.
    fn insert_rows(&mut self, shared: &QuantizedChunk, codes: &CodeSpace) -> i64 {
        let total = self.vectors.as_ref().map_or(0, |(_, rows)| rows.count());
        let mut vector = Vec::new();
        let mut inserted = 0;
        loop {
            let first = shared.next_row.fetch_add(ROW_BATCH, Ordering::AcqRel);
            if first >= total {
                return inserted;
            }
            for n in first..(first + ROW_BATCH).min(total) {
                pgrx::check_for_interrupts!();
                let (quantizer, rows) = self.vectors.as_mut().expect("a quantized build");
                vector.resize(quantizer.vector_size as usize, 0);
                let tid = rows.read(n, &mut vector);
                self.insert(row_value(codes, &vector, n), tid);
                inserted += 1;
            }
        }
    }

    fn insert(&mut self, value: Value, tid: ItemPointer) {
        let header = self.header;
        let params = self.checked.params;
        let flush = header.flush_lock.share();
        if !header.flushed.load(Ordering::Acquire) && header.accounted() + MARGIN < self.area {
            let element = NewElement {
                value,
                heap_tid: tid,
                level: Levels::Backend.draw(params.m),
            };
            vector_hnsw::insert(&mut self.graph, element, &params);
            drop(flush);
            self.counted();
            return;
        }
        drop(flush);
        if !header.flushed.load(Ordering::Acquire) {
            // Waits until no insert is in flight; the first to get it writes the graph.
            let _flush = header.flush_lock.exclusive();
            if !header.flushed.load(Ordering::Acquire) {
                let tuples = header.indtuples.load(Ordering::Acquire) as i64;
                let why = NoLongerFits::MaintenanceWorkMem;
                match self.vectors.as_mut() {
                    Some((quantizer, rows)) => rows.write_out(quantizer, |output| {
                        flush_graph(
                            self.rel,
                            &self.graph,
                            &self.checked,
                            tuples,
                            why,
                            Some(output),
                        )
                    }),
                    None => flush_graph(self.rel, &self.graph, &self.checked, tuples, why, None),
                }
                header.flushed.store(true, Ordering::Release);
            }
        }
        let rel = self.rel;
        let writer = self.disk.get_or_insert_with(|| {
            Box::new(PageGraphWriter::new(
                PageGraph::open(rel, options::graph_settings(rel)),
                WriteMode::Build,
            ))
        });
        let value = match self.vectors.as_ref() {
            Some((quantizer, _)) => stored_value(value, stored_record_size(quantizer)),
            None => value,
        };
        insert_on_disk(writer, value, tid, Levels::Backend.draw(params.m));
        self.counted();
    }

    fn counted(&self) {
        let done = self.header.indtuples.fetch_add(1, Ordering::AcqRel) + 1;
        if self.leader {
            report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, done as i64);
        }
    }

    /// Scans this participant's share of the table; returns the heap tuples seen and the
    /// tuples it indexed.
    ///
    /// # Safety
    ///
    /// As for [`ScanState::scan`], with `scan` the build's parallel scan.
    unsafe fn scan_share(
        &mut self,
        support: &Support,
        heap: pg_sys::Relation,
        index_info: *mut pg_sys::IndexInfo,
        scan: pg_sys::TableScanDesc,
    ) -> (f64, i64) {
        let index = self.rel.raw();
        let leader = self.leader;
        let mut insert = |value: Value, tid: ItemPointer| self.insert(value, tid);
        let mut state = ScanState::new(support, &mut insert);
        // SAFETY: per the contract.
        let reltuples = unsafe { state.scan(heap, index, index_info, scan, leader) };
        let who = if leader { "leader" } else { "worker" };
        pgrx::debug1!("{who} processed {} tuples", reltuples as i64);
        (reltuples, state.indtuples)
    }
}

/// A quantized build of `rel` in parallel when the table gets workers; `None` (nothing done)
/// otherwise, and the caller builds serially.
///
/// # Safety
///
/// The arguments are ambuild's (`heap` may be null for an empty build).
pub unsafe fn build_quantized(
    rel: Relation,
    support: &Support,
    checked: BuildParams,
    bits: u8,
    heap: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> Option<(f64, i64)> {
    if heap.is_null() {
        return None;
    }
    let (dense, _) = code_kind(support, bits);
    let dims = checked.dimensions;
    // SAFETY: per the contract; the chunk has the size init_at needs for the workers begun.
    let (parallel, _) = unsafe {
        begin(
            rel,
            heap,
            index_info,
            |workers| QuantizedChunk::size(dims as usize, workers as usize + 1),
            |chunk, workers| QuantizedChunk::init_at(chunk, dims, workers as u32 + 1),
        )?
    };
    // SAFETY: the chunk was written by begin and lives in the segment as long as `parallel`.
    let chunk = unsafe { &*parallel.chunk(1).cast::<QuantizedChunk>() };
    // SAFETY: the file set's place in the build's segment; workers attach only after FILES.
    let files = unsafe { SharedFiles::init(chunk.files_ptr(), parallel.segment()) };
    chunk.state.store(FILES, Ordering::Release);
    let table = Table { heap, index_info };
    let mut reltuples = 0.0;
    if parallel.leader_participates {
        // SAFETY: per the contract; the scan is the build's parallel scan of this heap.
        let mut scanned = unsafe {
            scan_rows(
                rel,
                support,
                &checked,
                bits,
                table,
                TempFile::create_shared(&files, &rows_file(0)),
                parallel.table_scan(heap),
            )
        };
        scanned.rows.file_mut().export();
        reltuples = scanned.reltuples;
        chunk.share_scanned(0, &scanned);
    }
    let (count, sum) = chunk.wait_scanned(parallel.sorts as u32);
    // The table is read before any row is inserted: the rows to insert are known.
    report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, count as i64);
    let mut levels = Levels::seeded_by_session_random();
    let quantizer = fix_quantizer(support, &checked, bits, &sum, count, &mut levels);
    chunk.publish(&quantizer);
    let rows = Rows::written(chunk.open_rows(&files), quantizer.vector_size as usize);
    let codes = Rc::new(CodeSpace::for_build(&quantizer, dense));
    let coded = support.clone().with_codes(codes.clone());
    // SAFETY: the graph's chunk, initialized by begin, mapped until `parallel` is dropped.
    let mut leader = unsafe { Participant::new(rel, &coded, checked, parallel.chunk(0), true) };
    leader.vectors = Some((quantizer, rows));
    if parallel.leader_participates {
        let inserted = leader.insert_rows(chunk, &codes);
        parallel.shared().finish_share(reltuples, inserted);
    }
    let header = leader.header;
    parallel.wait_for_shares_reporting(|| {
        let done = header.indtuples.load(Ordering::Acquire) as i64;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, done);
    });
    if !header.flushed.load(Ordering::Acquire) {
        let (quantizer, rows) = leader.vectors.as_mut().expect("set above");
        rows.write_out(quantizer, |output| {
            write_graph(
                rel,
                &leader.graph,
                checked.params,
                checked.dimensions,
                checked.placement,
                Some(output),
            )
        });
    }
    let totals = parallel.shared().totals();
    drop(leader);
    drop(parallel);
    Some(totals)
}

/// Starts a parallel build of `rel` when the table gets workers: the graph's chunk, and a chunk
/// of `extra(workers)` bytes (when not 0) that `fill_extra` writes, given the workers
/// requested; the build and the graph's area, or `None` when it runs without workers.
///
/// # Safety
///
/// The arguments are ambuild's; `heap` is not null.
unsafe fn begin(
    rel: Relation,
    heap: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
    extra: impl FnOnce(i32) -> usize,
    fill_extra: impl FnOnce(*mut u8, i32),
) -> Option<(ParallelBuild, usize)> {
    let index = rel.raw();
    // SAFETY: per the contract.
    let workers = unsafe { compute_workers(heap, index) };
    if workers <= 0 {
        return None;
    }
    let extra = extra(workers);
    let area = area_bytes();
    let chunk = arena_offset() + area;
    // The segment holds the graph, the table scan's state and the query text besides.
    if let Some(free) = shm_too_small(chunk + extra + MARGIN) {
        pg_sys::panic::ErrorReport::new(
            pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            "not enough shared memory for a parallel hnsw build".to_string(),
            "build",
        )
        .set_detail(format!(
            "The build needs {} MB in /dev/shm, which has {} MB free; building without parallel workers.",
            megabytes((chunk + extra + MARGIN) as u64),
            megabytes(free)
        ))
        .set_hint("Give /dev/shm more room (for a container, its shared memory size), or lower maintenance_work_mem.")
        .report(pgrx::PgLogLevel::NOTICE);
        return None;
    }
    // SAFETY: a plain bool GUC of the server, read by value.
    let leader_participates = unsafe { pg_sys::parallel_leader_participation };
    let sizes = [chunk, extra];
    let sizes = if extra == 0 { &sizes[..1] } else { &sizes[..] };
    // SAFETY: per the contract; the chunks are written before workers start.
    let parallel = unsafe {
        ParallelBuild::begin(
            Plan {
                entry: WORKER_ENTRY,
                workers,
                concurrent: (*index_info).ii_Concurrent,
                sort: false,
                leader_participates,
            },
            heap,
            index,
            MethodChunks { sizes },
            |chunks| {
                GraphHeader::init_at(chunks[0], area / 8);
                if let Some(&at) = chunks.get(1) {
                    fill_extra(at, workers);
                }
            },
        )?
    };
    Some((parallel, area))
}

/// Builds `rel` in parallel when the table gets workers; `None` (nothing done) otherwise, and
/// the caller builds serially.
///
/// # Safety
///
/// The arguments are ambuild's (`heap` may be null for an empty build).
pub unsafe fn build(
    rel: Relation,
    support: &Support,
    checked: BuildParams,
    heap: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> Option<(f64, i64)> {
    if heap.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let (parallel, _) = unsafe { begin(rel, heap, index_info, |_| 0, |_, _| {})? };
    // SAFETY: the graph's chunk, initialized by begin, mapped until `parallel` is dropped.
    let mut leader = unsafe { Participant::new(rel, support, checked, parallel.chunk(0), true) };
    if parallel.leader_participates {
        // SAFETY: per the contract; the scan is the build's parallel scan of this heap.
        let (reltuples, indtuples) =
            unsafe { leader.scan_share(support, heap, index_info, parallel.table_scan(heap)) };
        parallel.shared().finish_share(reltuples, indtuples);
    }
    let header = leader.header;
    parallel.wait_for_shares_reporting(|| {
        let done = header.indtuples.load(Ordering::Acquire) as i64;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, done);
    });
    if !header.flushed.load(Ordering::Acquire) {
        write_graph(
            rel,
            &leader.graph,
            checked.params,
            checked.dimensions,
            checked.placement,
            None,
        );
    }
    let totals = parallel.shared().totals();
    drop(leader);
    drop(parallel);
    Some(totals)
}

/// A parallel worker of an hnsw build: its share of the table, into the shared graph.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn HnswParallelBuildMain(
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
        let support = Support::for_index(rel, Method::Hnsw);
        let checked = check_build(rel, &support);
        if let Some(bits) = options::quantization(rel) {
            let chunk = &*segment.chunk(1).cast::<QuantizedChunk>();
            chunk.wait_for(FILES);
            let files = SharedFiles::attach(chunk.files_ptr(), segment.segment());
            let slot = ParallelWorkerNumber as u32 + 1;
            let mut scanned = scan_rows(
                rel,
                &support,
                &checked,
                bits,
                Table { heap, index_info },
                TempFile::create_shared(&files, &rows_file(slot)),
                segment.table_scan(heap),
            );
            scanned.rows.file_mut().export();
            chunk.share_scanned(slot, &scanned);
            let reltuples = scanned.reltuples;
            drop(scanned);
            chunk.wait_for(READY);
            let quantizer = chunk.quantizer();
            let (dense, _) = code_kind(&support, bits);
            let rows = Rows::written(chunk.open_rows(&files), quantizer.vector_size as usize);
            let codes = Rc::new(CodeSpace::for_build(&quantizer, dense));
            let coded = support.clone().with_codes(codes.clone());
            let mut worker = Participant::new(rel, &coded, checked, segment.chunk(0), false);
            worker.vectors = Some((quantizer, rows));
            let indtuples = worker.insert_rows(chunk, &codes);
            drop(worker);
            shared.finish_share(reltuples, indtuples);
        } else {
            let mut worker = Participant::new(rel, &support, checked, segment.chunk(0), false);
            let (reltuples, indtuples) =
                worker.scan_share(&support, heap, index_info, segment.table_scan(heap));
            drop(worker);
            shared.finish_share(reltuples, indtuples);
        }
        pg_sys::index_close(index, index_lock);
        pg_sys::table_close(heap, heap_lock);
    }
}
