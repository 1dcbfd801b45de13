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
//! A quantized index ([`super::quantized`]) differs in how the rows reach the graph. First every
//! participant reads its share of the table into a file of its own in the build's shared file
//! set, with the sum of its rows; once every share is read, the leader fixes the quantizer (the
//! centroid is the mean over all shares) and publishes it. Then every participant takes rows
//! from those files, a few at a time, and inserts their code records into the shared graph. The
//! graph's memory, the flush and the end are as above; whoever writes the graph out reads the
//! vectors back from the files.

use crate::am::hnsw::build::params::BuildParams;
use crate::am::hnsw::build::quantized::{
    code_kind, fix_quantizer, row_value, scan_rows, vector_size, Rows,
};
use crate::am::hnsw::build::shared_rows::{rows_file, QuantizedChunk, FILES, READY, ROW_BATCH};
use crate::am::hnsw::build::sink::{GraphSink, NoLongerFits, Room};
use crate::am::hnsw::build::table::Table;
use crate::am::hnsw::insert::Levels;
use crate::am::shared::build::report_progress;
use crate::am::shared::parallel::{MethodChunks, ParallelBuild, Plan, WorkerSegment};
use crate::opclass::codes::CodeSpace;
use crate::opclass::{Coded, Compare, Exact, Method, Support, Value};
use crate::storage::lwlock::LockGuard;
use crate::storage::page::maxalign;
use crate::storage::temp_file::{SharedFiles, TempFile};
use crate::storage::{Fork, ItemPointer, Relation};
use crate::stores::hnsw::build_graph::BuildGraph;
use crate::stores::hnsw::build_region::{GraphHeader, SharedRegion};
use crate::stores::hnsw::page_graph::IndexCompare;
use pgrx::pg_sys::ParallelWorkerNumber;
use pgrx::{pg_guard, pg_sys};
use std::ffi::CStr;
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// The entry point pgvector names for its workers.
const WORKER_ENTRY: &CStr = c"HnswParallelBuildMain";

/// pgvector leaves this much of `maintenance_work_mem` to the rest of the segment (and Docker's
/// default 64 MB `/dev/shm`).
const OTHER_SHARED_MEMORY: usize = 3 * 1024 * 1024;

/// The graph is full when what pgvector would have allocated comes this close to the area.
const MARGIN: usize = 1024 * 1024;

/// The size of the shared graph's area, as pgvector sizes it (at most 32 GB: ids are word
/// offsets).
fn area_bytes(checked: &BuildParams) -> usize {
    let mwm = checked.memory;
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

/// The room of a parallel build: the graph's shared area, every participant's rows, and the
/// flush lock that every insert into memory holds in share mode.
struct Shared<'s> {
    header: &'s GraphHeader,
    area: usize,
    /// The leader reports the build's progress.
    leader: bool,
}

impl<'s> Room<SharedRegion<'s>> for Shared<'s> {
    fn admit<C: Compare>(
        &self,
        _graph: &mut BuildGraph<'_, SharedRegion<'s>, C>,
        _bytes: usize,
        _level: u8,
    ) -> Result<Option<LockGuard<'_>>, NoLongerFits> {
        let held = self.header.flush_lock.share();
        if !self.header.flushed.load(Ordering::Acquire)
            && self.header.accounted() + MARGIN < self.area
        {
            return Ok(Some(held));
        }
        Err(NoLongerFits::MaintenanceWorkMem)
    }

    fn flush_once(&self, write: impl FnOnce(i64)) {
        if self.header.flushed.load(Ordering::Acquire) {
            return;
        }
        // Waits until no insert is in flight; the first to get it writes the graph.
        let _flush = self.header.flush_lock.exclusive();
        if !self.header.flushed.load(Ordering::Acquire) {
            write(self.rows());
            self.header.flushed.store(true, Ordering::Release);
        }
    }

    fn flushed(&self) -> bool {
        self.header.flushed.load(Ordering::Acquire)
    }

    fn counted(&self) {
        let done = self.header.indtuples.fetch_add(1, Ordering::AcqRel) + 1;
        if self.leader {
            report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, done as i64);
        }
    }

    fn rows(&self) -> i64 {
        self.header.indtuples.load(Ordering::Acquire) as i64
    }
}

type Participant<'s, C> = GraphSink<'s, SharedRegion<'s>, Shared<'s>, C>;

/// One participant's sink into the graph of the segment's first chunk.
///
/// # Safety
///
/// `chunk` is the graph's chunk of the build's segment, its header initialized, mapped while
/// the participant lives.
unsafe fn participant<'s, C: IndexCompare>(
    rel: Relation,
    compare: &'s C,
    checked: &BuildParams,
    chunk: *mut u8,
    leader: bool,
) -> Participant<'s, C> {
    // SAFETY: per the contract; the arena follows the header in the chunk.
    let (header, region) = unsafe {
        let header = &*chunk.cast::<GraphHeader>();
        (header, SharedRegion::new(chunk.add(arena_offset()), header))
    };
    let room = Shared {
        header,
        area: area_bytes(checked),
        leader,
    };
    let graph = BuildGraph::new(compare, checked.params.m, region);
    GraphSink::new(rel, *checked, graph, room)
}

/// One participant's share of a build into the shared graph: the heap tuples it saw and the
/// tuples it indexed. A quantized build's participants read their share of the table into their
/// file, wait for the leader's quantizer (the leader fixes it from every share's sums), then
/// insert rows from every file until none is left.
///
/// # Safety
///
/// `segment` is the build's (its scan the parallel scan of the table's heap), the table the
/// build's.
unsafe fn share(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    table: Table,
    segment: &Segment<'_>,
    leader: bool,
) -> (f64, i64) {
    let Some(bits) = checked.quantization else {
        // SAFETY: per the contract.
        let exact = Exact(support.clone());
        // SAFETY: per the contract.
        let mut sink = unsafe { participant(rel, &exact, checked, segment.graph, leader) };
        let m = checked.params.m;
        let mut insert =
            |value: Value, tid: ItemPointer| sink.insert(value, tid, Levels::Backend.draw(m));
        // SAFETY: per the contract.
        let (reltuples, indexed) =
            unsafe { table.scan_values(rel, support, segment.scan, leader, &mut insert) };
        let who = if leader { "leader" } else { "worker" };
        pgrx::debug1!("{who} processed {} tuples", reltuples as i64);
        return (reltuples, indexed);
    };
    let rows = segment.rows.expect("a quantized build's chunk");
    let slot = if leader {
        0
    } else {
        // SAFETY: a plain int of this process, read by value.
        unsafe { ParallelWorkerNumber as u32 + 1 }
    };
    // SAFETY: per the contract.
    let mut scanned = unsafe {
        scan_rows(
            rel,
            support,
            checked,
            bits,
            table,
            TempFile::create_shared(
                segment.files.expect("a quantized build's files"),
                &rows_file(slot),
            ),
            segment.scan,
        )
    };
    scanned.rows.file_mut().export();
    rows.share_scanned(slot, &scanned);
    let reltuples = scanned.reltuples;
    drop(scanned);
    if leader {
        let files = segment.files.expect("a quantized build's files");
        publish_quantizer(support, checked, bits, rows, files, segment.participants);
    }
    rows.wait_for(READY);
    let inserted = insert_rows(rel, support, checked, bits, segment, leader);
    (reltuples, inserted)
}

/// The leader, once every share of the table is read: the quantizer from their sums, published
/// to the participants.
fn publish_quantizer(
    support: &Support,
    checked: &BuildParams,
    bits: u8,
    rows: &QuantizedChunk,
    files: &SharedFiles,
    participants: u32,
) {
    let (count, sum) = rows.wait_scanned(participants);
    // The table is read before any row is inserted: the rows to insert are known.
    report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, count as i64);
    let mut levels = Levels::seeded_by_session_random();
    let (dense, _) = code_kind(support, bits);
    let mut written = Rows::written(
        rows.open_rows(files),
        vector_size(dense, checked.dimensions),
    );
    let quantizer = fix_quantizer(support, checked, bits, &sum, &mut written, &mut levels);
    rows.publish(&quantizer);
}

/// A quantized build's participant: rows taken from every file, a few at a time, until none is
/// left, into the shared graph; how many it inserted.
fn insert_rows(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    bits: u8,
    segment: &Segment<'_>,
    leader: bool,
) -> i64 {
    let shared = segment.rows.expect("a quantized build's chunk");
    let quantizer = shared.quantizer();
    let (dense, _) = code_kind(support, bits);
    let files = segment.files.expect("a quantized build's files");
    let rows = Rows::written(shared.open_rows(files), quantizer.vector_size as usize);
    let total = rows.count();
    let coded = Coded::new(
        support.clone(),
        Rc::new(CodeSpace::for_build(&quantizer, dense)),
    );
    let mut vector = vec![0u8; quantizer.vector_size as usize];
    // SAFETY: the graph's chunk, mapped while the segment is.
    let mut sink = unsafe { participant(rel, &coded, checked, segment.graph, leader) }
        .with_vectors(quantizer, rows);
    let mut inserted = 0;
    loop {
        let first = shared.take_rows(ROW_BATCH);
        if first >= total {
            break;
        }
        for n in first..(first + ROW_BATCH).min(total) {
            pgrx::check_for_interrupts!();
            let (_, rows) = sink.vectors_mut().expect("a quantized build");
            let tid = rows.read(n, &mut vector);
            let level = Levels::Backend.draw(checked.params.m);
            sink.insert(row_value(&coded, &vector, n), tid, level);
            inserted += 1;
        }
    }
    inserted
}

/// What every participant finds in the build's segment.
struct Segment<'a> {
    /// The graph's chunk.
    graph: *mut u8,
    /// A quantized build's shared rows, and their file set.
    rows: Option<&'a QuantizedChunk>,
    files: Option<&'a SharedFiles>,
    /// The participant's share of the table.
    scan: pg_sys::TableScanDesc,
    /// Participants that read the table (the leader's share counted when it takes one).
    participants: u32,
}

/// Starts a parallel build of `rel` when the table gets workers: the graph's chunk, and a chunk
/// of `extra(workers)` bytes (when not 0) that `fill_extra` writes, given the workers
/// requested; the build and the graph's area, or `None` when it runs without workers.
///
/// # Safety
///
/// The arguments are ambuild's; the table is not empty.
unsafe fn begin(
    rel: Relation,
    checked: &BuildParams,
    table: Table,
    extra: impl FnOnce(i32) -> usize,
    fill_extra: impl FnOnce(*mut u8, i32),
) -> Option<(ParallelBuild, usize)> {
    let Table { heap, index_info } = table;
    let index = rel.raw();
    // SAFETY: per the contract.
    let workers = unsafe { compute_workers(heap, index) };
    if workers <= 0 {
        return None;
    }
    let extra = extra(workers);
    let area = area_bytes(checked);
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
/// The arguments are ambuild's.
pub unsafe fn build(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    table: Table,
) -> Option<(f64, i64)> {
    if table.is_empty() {
        return None;
    }
    let dims = checked.dimensions;
    let quantized = checked.quantization.is_some();
    // SAFETY: per the contract; a quantized build's chunk has the size init_at needs for the
    // workers begun.
    let (parallel, _) = unsafe {
        begin(
            rel,
            checked,
            table,
            |workers| {
                if quantized {
                    QuantizedChunk::size(dims as usize, workers as usize + 1)
                } else {
                    0
                }
            },
            |chunk, workers| QuantizedChunk::init_at(chunk, dims, workers as u32 + 1),
        )?
    };
    // SAFETY: the chunks were written by begin and live in the segment as long as `parallel`.
    let rows = quantized.then(|| unsafe { &*parallel.chunk(1).cast::<QuantizedChunk>() });
    // SAFETY: the file set's place in the build's segment; workers attach only after FILES.
    let files = rows.map(|rows| unsafe { SharedFiles::init(rows.files_ptr(), parallel.segment()) });
    if let Some(rows) = rows {
        rows.files_ready();
    }
    let segment = Segment {
        graph: parallel.chunk(0),
        rows,
        files: files.as_ref(),
        // The leader begins its share of the parallel scan only when it takes one (a scan
        // begun is ended by the table scan that reads it).
        scan: if parallel.leader_participates {
            // SAFETY: the table's heap is the one the build's parallel scan was begun on.
            unsafe { parallel.table_scan(table.heap) }
        } else {
            std::ptr::null_mut()
        },
        participants: parallel.sorts as u32,
    };
    if parallel.leader_participates {
        // SAFETY: per the contract.
        let (reltuples, indexed) = unsafe { share(rel, support, checked, table, &segment, true) };
        parallel.shared().finish_share(reltuples, indexed);
    } else if let (Some(bits), Some(rows), Some(files)) =
        (checked.quantization, rows, files.as_ref())
    {
        publish_quantizer(support, checked, bits, rows, files, segment.participants);
    }
    // SAFETY: the graph's chunk, initialized by begin, mapped until `parallel` is dropped.
    let header = unsafe { &*segment.graph.cast::<GraphHeader>() };
    parallel.wait_for_shares_reporting(|| {
        let done = header.indtuples.load(Ordering::Acquire) as i64;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, done);
    });
    // Every share is done: the graph goes to the pages unless a participant wrote it out.
    match (checked.quantization, rows, files.as_ref()) {
        (Some(bits), Some(rows), Some(files)) => {
            let quantizer = rows.quantizer();
            let (dense, _) = code_kind(support, bits);
            let codes = Rc::new(CodeSpace::for_build(&quantizer, dense));
            let coded = Coded::new(support.clone(), codes);
            let written = Rows::written(rows.open_rows(files), quantizer.vector_size as usize);
            // SAFETY: as above.
            let sink = unsafe { participant(rel, &coded, checked, segment.graph, true) };
            sink.with_vectors(quantizer, written).finish();
        }
        _ => {
            let exact = Exact(support.clone());
            // SAFETY: as above.
            unsafe { participant(rel, &exact, checked, segment.graph, true) }.finish();
        }
    }
    let totals = parallel.shared().totals();
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
        let checked = BuildParams::read(rel, &support);
        let rows = checked
            .quantization
            .map(|_| &*segment.chunk(1).cast::<QuantizedChunk>());
        let files = rows.map(|rows| {
            rows.wait_for(FILES);
            SharedFiles::attach(rows.files_ptr(), segment.segment())
        });
        let table = Table { heap, index_info };
        let share_of = Segment {
            graph: segment.chunk(0),
            rows,
            files: files.as_ref(),
            scan: segment.table_scan(heap),
            participants: 0,
        };
        let (reltuples, indexed) = share(rel, &support, &checked, table, &share_of, false);
        shared.finish_share(reltuples, indexed);
        pg_sys::index_close(index, index_lock);
        pg_sys::table_close(heap, heap_lock);
    }
}
