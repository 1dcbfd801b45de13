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

use crate::am::hnsw::build::{
    check_build, flush_graph, maintenance_work_mem, report_progress, BuildParams, NoLongerFits,
    ScanState,
};
use crate::am::hnsw::insert::{insert_on_disk, Levels};
use crate::am::shared::parallel::{MethodChunks, ParallelBuild, Plan, WorkerSegment};
use crate::am::shared::typeinfo::{Method, Support, Value};
use crate::storage::page::maxalign;
use crate::storage::{Fork, ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, GraphHeader, SharedRegion};
use crate::stores::hnsw::build_pages::write_graph;
use crate::stores::hnsw::page_graph::PageGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::{pg_guard, pg_sys};
use std::ffi::CStr;
use std::sync::atomic::Ordering;
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
                flush_graph(
                    self.rel,
                    &self.graph,
                    &self.checked,
                    tuples,
                    NoLongerFits::MaintenanceWorkMem,
                    None,
                );
                header.flushed.store(true, Ordering::Release);
            }
        }
        let rel = self.rel;
        let writer = self.disk.get_or_insert_with(|| {
            Box::new(PageGraphWriter::new(PageGraph::open(rel), WriteMode::Build))
        });
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
    let index = rel.raw();
    // SAFETY: per the contract.
    let workers = unsafe { compute_workers(heap, index) };
    if workers <= 0 {
        return None;
    }
    let area = area_bytes();
    let chunk = arena_offset() + area;
    // The segment holds the graph, the table scan's state and the query text besides.
    if let Some(free) = shm_too_small(chunk + MARGIN) {
        pg_sys::panic::ErrorReport::new(
            pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            "not enough shared memory for a parallel hnsw build".to_string(),
            "build",
        )
        .set_detail(format!(
            "The build needs {} MB in /dev/shm, which has {} MB free; building without parallel workers.",
            megabytes((chunk + MARGIN) as u64),
            megabytes(free)
        ))
        .set_hint("Give /dev/shm more room (for a container, its shared memory size), or lower maintenance_work_mem.")
        .report(pgrx::PgLogLevel::NOTICE);
        return None;
    }
    // SAFETY: a plain bool GUC of the server, read by value.
    let leader_participates = unsafe { pg_sys::parallel_leader_participation };
    // SAFETY: per the contract; the chunk is `chunk` bytes, its header written before workers
    // start.
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
            MethodChunks { sizes: &[chunk] },
            |chunks| {
                GraphHeader::init_at(chunks[0], area / 8);
            },
        )?
    };
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
        let mut worker = Participant::new(rel, &support, checked, segment.chunk(0), false);
        let (reltuples, indtuples) =
            worker.scan_share(&support, heap, index_info, segment.table_scan(heap));
        drop(worker);
        shared.finish_share(reltuples, indtuples);
        pg_sys::index_close(index, index_lock);
        pg_sys::table_close(heap, heap_lock);
    }
}
