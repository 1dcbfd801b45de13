//! Parallel index builds, as Postgres runs them for any access method: the leader enters
//! parallel mode, sizes and fills a dynamic shared memory segment (a table of contents of
//! chunks), launches workers that call an entry point of this library by name, takes part
//! itself (unless `parallel_leader_participation` is off), and waits for them. Each method
//! keeps its own shared state in a chunk; what they share is here: the context, the snapshot of
//! the table scan, the parallel table scan, the query text, a done-counter with a condition
//! variable, and, for a method that sorts, Postgres's shared tuplesort.
//!
//! Lifetimes: the context and its segment belong to the [`ParallelBuild`], which ends the
//! workers and parallel mode on drop (not while unwinding: an ERROR's abort does it).

use pgrx::pg_sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `BUFFERALIGN`.
const fn buffer_align(n: usize) -> usize {
    (n + 31) & !31
}

/// Keys of the table of contents shared by every parallel build (the method's own chunks take
/// keys from [`METHOD_KEYS`] on).
const KEY_SHARED: u64 = 0xB000_0000_0000_0001;
const KEY_TUPLESORT: u64 = 0xB000_0000_0000_0002;
const KEY_QUERY_TEXT: u64 = 0xB000_0000_0000_0003;
/// The first key a method may use for its chunks.
pub const METHOD_KEYS: u64 = 0xB000_0000_0000_0100;

/// What every participant shares, followed in its chunk by the parallel table scan.
#[repr(C)]
pub struct SharedBuild {
    pub heap_oid: pg_sys::Oid,
    pub index_oid: pg_sys::Oid,
    pub concurrent: bool,
    /// Participants planned (workers requested, plus the leader).
    pub participants: i32,
    /// Participants done with their share of the table.
    done: AtomicU32,
    /// Sums over the participants (`f64` bits, `i64`).
    reltuples: AtomicU64,
    indtuples: AtomicU64,
    done_cv: pg_sys::ConditionVariable,
}

impl SharedBuild {
    /// The parallel table scan that follows this struct in its chunk.
    fn scan(&self) -> pg_sys::ParallelTableScanDesc {
        let base = (self as *const SharedBuild).cast::<u8>().cast_mut();
        // SAFETY: the chunk was sized as the aligned struct plus the scan (ParallelBuild::begin).
        unsafe { base.add(buffer_align(size_of::<SharedBuild>())).cast() }
    }

    /// A participant's share is done: adds its counts and wakes the leader.
    pub fn finish_share(&self, reltuples: f64, indtuples: i64) {
        let mut current = self.reltuples.load(Ordering::Relaxed);
        loop {
            let sum = (f64::from_bits(current) + reltuples).to_bits();
            match self
                .reltuples
                .compare_exchange(current, sum, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
        self.indtuples.fetch_add(indtuples as u64, Ordering::AcqRel);
        self.done.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the condition variable was initialized by the leader in this segment.
        unsafe { pg_sys::ConditionVariableSignal(&self.done_cv as *const _ as *mut _) };
    }

    /// The summed table and index tuple counts.
    pub fn totals(&self) -> (f64, i64) {
        (
            f64::from_bits(self.reltuples.load(Ordering::Acquire)),
            self.indtuples.load(Ordering::Acquire) as i64,
        )
    }
}

/// A parallel build in progress, from the leader's side.
pub struct ParallelBuild {
    pcxt: *mut pg_sys::ParallelContext,
    snapshot: pg_sys::Snapshot,
    shared: *mut SharedBuild,
    /// Null when the method does not sort.
    sharedsort: *mut pg_sys::Sharedsort,
    /// Participants that take a share of the table: launched workers, plus the leader when it
    /// takes part (for a sorting method, the number of sorts).
    pub sorts: i32,
    /// Whether the leader takes a share.
    pub leader_participates: bool,
}

/// What a method asks of a parallel build.
pub struct Plan {
    /// The entry point, a `#[pg_guard]` function of this library taking `(dsm_segment *,
    /// shm_toc *)`.
    pub entry: &'static CStr,
    /// Workers to request.
    pub workers: i32,
    /// `CREATE INDEX CONCURRENTLY` (the scan takes an MVCC snapshot).
    pub concurrent: bool,
    /// Whether the participants feed Postgres's shared tuplesort.
    pub sort: bool,
    /// Whether the leader takes a share of the table (`parallel_leader_participation`, unless
    /// the method's merge needs it).
    pub leader_participates: bool,
}

/// What a method asks for in the segment besides the shared parts: sizes of its chunks.
pub struct MethodChunks<'a> {
    pub sizes: &'a [usize],
}

impl ParallelBuild {
    /// Launches the workers of `plan`, with chunks of `method.sizes` bytes that `fill` writes
    /// (chunk `i` gets key `METHOD_KEYS + i`). `None` if no segment or no worker could be had:
    /// the caller then builds serially.
    ///
    /// # Safety
    ///
    /// `heap` and `index` are the build's open relations; `plan.entry` names a function of this
    /// library with the worker signature.
    pub unsafe fn begin(
        plan: Plan,
        heap: pg_sys::Relation,
        index: pg_sys::Relation,
        method: MethodChunks<'_>,
        fill: impl FnOnce(&mut [*mut u8]),
    ) -> Option<Self> {
        let Plan {
            entry,
            workers: request,
            concurrent,
            sort,
            leader_participates,
        } = plan;
        // SAFETY: per the contract; the calls follow Postgres's parallel build protocol (as
        // nbtree's and pgvector's builds do), and every chunk is written before the workers
        // are launched.
        unsafe {
            pg_sys::EnterParallelMode();
            let pcxt = pg_sys::CreateParallelContext(c"vector".as_ptr(), entry.as_ptr(), request);
            let participants = request + 1;
            let snapshot = if concurrent {
                pg_sys::RegisterSnapshot(pg_sys::GetTransactionSnapshot())
            } else {
                &raw mut pg_sys::SnapshotAnyData
            };
            let shared_size = buffer_align(size_of::<SharedBuild>())
                + pg_sys::table_parallelscan_estimate(heap, snapshot);
            let sort_size = if sort {
                pg_sys::tuplesort_estimate_shared(participants)
            } else {
                0
            };
            let query = pg_sys::debug_query_string;
            let query_len = if query.is_null() {
                0
            } else {
                CStr::from_ptr(query).to_bytes().len() + 1
            };
            let estimator = &mut (*pcxt).estimator;
            let mut keys = 1 + usize::from(sort);
            for size in [shared_size, sort_size]
                .iter()
                .chain(method.sizes)
                .chain((query_len > 0).then_some(&query_len))
            {
                estimator.space_for_chunks += buffer_align(*size);
            }
            keys += method.sizes.len() + usize::from(query_len > 0);
            estimator.number_of_keys += keys;
            pg_sys::InitializeParallelDSM(pcxt);
            if (*pcxt).seg.is_null() {
                end_context(pcxt, snapshot);
                return None;
            }
            let toc = (*pcxt).toc;
            let shared = pg_sys::shm_toc_allocate(toc, shared_size).cast::<SharedBuild>();
            shared.write(SharedBuild {
                heap_oid: (*heap).rd_id,
                index_oid: (*index).rd_id,
                concurrent,
                participants,
                done: AtomicU32::new(0),
                reltuples: AtomicU64::new(0f64.to_bits()),
                indtuples: AtomicU64::new(0),
                done_cv: std::mem::zeroed(),
            });
            pg_sys::ConditionVariableInit(&raw mut (*shared).done_cv);
            pg_sys::table_parallelscan_initialize(heap, (*shared).scan(), snapshot);
            pg_sys::shm_toc_insert(toc, KEY_SHARED, shared.cast());
            let mut sharedsort = std::ptr::null_mut();
            if sort {
                sharedsort = pg_sys::shm_toc_allocate(toc, sort_size).cast::<pg_sys::Sharedsort>();
                pg_sys::tuplesort_initialize_shared(sharedsort, participants, (*pcxt).seg);
                pg_sys::shm_toc_insert(toc, KEY_TUPLESORT, sharedsort.cast());
            }
            let mut chunks: Vec<*mut u8> = Vec::with_capacity(method.sizes.len());
            for (i, size) in method.sizes.iter().enumerate() {
                let chunk = pg_sys::shm_toc_allocate(toc, *size).cast::<u8>();
                pg_sys::shm_toc_insert(toc, METHOD_KEYS + i as u64, chunk.cast());
                chunks.push(chunk);
            }
            fill(&mut chunks);
            if query_len > 0 {
                let text = pg_sys::shm_toc_allocate(toc, query_len).cast::<u8>();
                std::ptr::copy_nonoverlapping(query.cast::<u8>(), text, query_len);
                pg_sys::shm_toc_insert(toc, KEY_QUERY_TEXT, text.cast());
            }
            pg_sys::LaunchParallelWorkers(pcxt);
            let launched = (*pcxt).nworkers_launched;
            if launched == 0 {
                pg_sys::WaitForParallelWorkersToFinish(pcxt);
                end_context(pcxt, snapshot);
                return None;
            }
            pgrx::debug1!("using {launched} parallel workers");
            Some(ParallelBuild {
                pcxt,
                snapshot,
                shared,
                sharedsort,
                sorts: launched + i32::from(leader_participates),
                leader_participates,
            })
        }
    }

    pub fn shared(&self) -> &SharedBuild {
        // SAFETY: written by begin, in the segment that lives as long as self.
        unsafe { &*self.shared }
    }

    /// The build's segment.
    pub fn segment(&self) -> *mut pg_sys::dsm_segment {
        // SAFETY: begin made the context with a segment (it returns None otherwise).
        unsafe { (*self.pcxt).seg }
    }

    /// Chunk `i` of the method, mapped as long as `self` lives.
    pub fn chunk(&self, i: u64) -> *mut u8 {
        // SAFETY: begin inserted every method chunk into the context's table of contents.
        unsafe { pg_sys::shm_toc_lookup((*self.pcxt).toc, METHOD_KEYS + i, false).cast() }
    }

    /// The leader's coordinate for its own share (a worker sort).
    pub fn worker_coordinate(&self) -> Coordinate {
        Coordinate::new(true, -1, self.sharedsort)
    }

    /// The leader's coordinate of the final merge of every participant's sort.
    pub fn leader_coordinate(&self) -> Coordinate {
        Coordinate::new(false, self.sorts, self.sharedsort)
    }

    /// The parallel table scan every participant joins.
    ///
    /// # Safety
    ///
    /// `heap` is the open table the build was begun for.
    pub unsafe fn table_scan(&self, heap: pg_sys::Relation) -> pg_sys::TableScanDesc {
        // SAFETY: the scan was initialized by begin for this heap.
        unsafe { pg_sys::table_beginscan_parallel(heap, self.shared().scan()) }
    }

    /// Waits until every participant (the leader's share included) is done with the table.
    pub fn wait_for_shares(&self) {
        self.wait_for_shares_reporting(|| ());
    }

    /// Waits as [`ParallelBuild::wait_for_shares`] does, calling `report` every second and
    /// whenever a participant finishes (the leader's progress row shows every participant's
    /// work).
    pub fn wait_for_shares_reporting(&self, mut report: impl FnMut()) {
        let shared = self.shared();
        let cv = &shared.done_cv as *const _ as *mut pg_sys::ConditionVariable;
        // SAFETY: the condition variable lives in the segment; sleeping checks for interrupts.
        unsafe {
            pg_sys::ConditionVariablePrepareToSleep(cv);
            while shared.done.load(Ordering::Acquire) < self.sorts as u32 {
                report();
                pg_sys::ConditionVariableTimedSleep(
                    cv,
                    1000,
                    pg_sys::WaitEventIPC::WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN,
                );
            }
            pg_sys::ConditionVariableCancelSleep();
        }
        report();
    }
}

impl Drop for ParallelBuild {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding from an ERROR: the abort ends the workers and parallel mode.
            return;
        }
        // SAFETY: the context is live and ended once, here.
        unsafe {
            pg_sys::WaitForParallelWorkersToFinish(self.pcxt);
            end_context(self.pcxt, self.snapshot);
        }
    }
}

/// Releases the snapshot, destroys the context and leaves parallel mode.
///
/// # Safety
///
/// `pcxt` is a live context whose workers have finished (or never started).
unsafe fn end_context(pcxt: *mut pg_sys::ParallelContext, snapshot: pg_sys::Snapshot) {
    // SAFETY: per the contract; an MVCC snapshot was registered by begin.
    unsafe {
        if (*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_MVCC {
            pg_sys::UnregisterSnapshot(snapshot);
        }
        pg_sys::DestroyParallelContext(pcxt);
        pg_sys::ExitParallelMode();
    }
}

/// A `SortCoordinateData` for a tuplesort of a parallel build, kept at a stable address.
pub struct Coordinate(Box<pg_sys::SortCoordinateData>);

impl Coordinate {
    fn new(is_worker: bool, participants: i32, sharedsort: *mut pg_sys::Sharedsort) -> Self {
        Coordinate(Box::new(pg_sys::SortCoordinateData {
            isWorker: is_worker,
            nParticipants: participants,
            sharedsort,
        }))
    }

    pub fn as_ptr(&mut self) -> pg_sys::SortCoordinate {
        &mut *self.0
    }
}

/// A worker's view of the segment.
pub struct WorkerSegment {
    toc: *mut pg_sys::shm_toc,
    seg: *mut pg_sys::dsm_segment,
}

impl WorkerSegment {
    /// From the entry point's arguments; reports the leader's query as this worker's.
    ///
    /// # Safety
    ///
    /// `seg` and `toc` are what Postgres passed to the worker's entry point.
    pub unsafe fn attach(seg: *mut pg_sys::dsm_segment, toc: *mut pg_sys::shm_toc) -> Self {
        // SAFETY: per the contract; the query text is optional in the table of contents.
        unsafe {
            let query = pg_sys::shm_toc_lookup(toc, KEY_QUERY_TEXT, true);
            pg_sys::debug_query_string = query.cast();
            pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_RUNNING, query.cast());
        }
        WorkerSegment { toc, seg }
    }

    pub fn shared(&self) -> &SharedBuild {
        // SAFETY: the leader inserted the shared state under this key before launching.
        unsafe { &*pg_sys::shm_toc_lookup(self.toc, KEY_SHARED, false).cast::<SharedBuild>() }
    }

    /// The build's segment.
    pub fn segment(&self) -> *mut pg_sys::dsm_segment {
        self.seg
    }

    /// Chunk `i` of the method.
    pub fn chunk(&self, i: u64) -> *mut u8 {
        // SAFETY: the leader inserted every method chunk before launching.
        unsafe { pg_sys::shm_toc_lookup(self.toc, METHOD_KEYS + i, false).cast() }
    }

    /// This worker's coordinate, attached to the shared tuplesort.
    pub fn worker_coordinate(&self) -> Coordinate {
        // SAFETY: the leader initialized the shared sort under this key in this segment.
        unsafe {
            let sharedsort =
                pg_sys::shm_toc_lookup(self.toc, KEY_TUPLESORT, false).cast::<pg_sys::Sharedsort>();
            pg_sys::tuplesort_attach_shared(sharedsort, self.seg);
            Coordinate::new(true, -1, sharedsort)
        }
    }

    /// The parallel table scan.
    ///
    /// # Safety
    ///
    /// `heap` is the table of the build, opened by this worker.
    pub unsafe fn table_scan(&self, heap: pg_sys::Relation) -> pg_sys::TableScanDesc {
        // SAFETY: the leader initialized it for this heap.
        unsafe { pg_sys::table_beginscan_parallel(heap, self.shared().scan()) }
    }

    /// The lock modes `index.c` holds on the table and the index during the build.
    pub fn lock_modes(&self) -> (pg_sys::LOCKMODE, pg_sys::LOCKMODE) {
        if self.shared().concurrent {
            (
                pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE,
                pg_sys::RowExclusiveLock as pg_sys::LOCKMODE,
            )
        } else {
            (
                pg_sys::ShareLock as pg_sys::LOCKMODE,
                pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
            )
        }
    }
}
