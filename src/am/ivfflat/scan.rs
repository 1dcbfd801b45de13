//! Index scans: `ORDER BY col <op> $1 [LIMIT k]` answered from the nearest lists.
//!
//! The first `amgettuple` after a (re)scan reads the centers from the list pages and keeps
//! the `max_probes` nearest ([`vector_ivf::probes`]), then reads the entries of the first
//! `ivfflat.probes` of them, and each call returns the next heap TID by distance. With
//! `ivfflat.iterative_scan = relaxed_order`, when those run out the next
//! `probes` lists are read and sorted as another batch, up to `ivfflat.max_probes` lists.
//! `probes` and `max_probes` are fixed when the scan begins, as in pgvector.
//!
//! Distances are support function 1, called center first for the lists and entry first for
//! the entries, as pgvector calls them (a dimension mismatch reports the index's dimensions
//! first). A NULL query puts everything at distance 0. The query is normalized for cosine
//! operator classes. Results are exact distances in index order, never rechecked.
//!
//! Cold lists: reading a list's pages waits on one read after the other. A built list runs
//! on consecutive pages from its first page to its insert page, so a batch plans those ranges,
//! list after list in reading order, and [`vector_io::ChainHints`] hints the planned pages
//! ahead of the reads within `effective_io_concurrency` once reads come from a device (never
//! while the index is resident). The chain itself is still followed page by page, so a wrong
//! guess only costs a hint. Where the kernel's read-ahead streams the lists faster than
//! hinted reads do, cold batches are read plainly ([`vector_io::chain::HintChoice`] times
//! both ways in each backend). When the reads were cold, the table blocks of the next rows are
//! hinted as well. A list found in the kernel's page cache reads its range through a read
//! stream instead ([`entries::read_list`]). `ivfflat.io_method = off` turns all of it off;
//! results never change.
//!
//! Order: pgvector sorts every entry of a batch in Postgres's tuplesort. Ours keeps them in
//! [`BatchOrder`], which sorts only as far as the scan reads (a `LIMIT 10` reads ten), and
//! hands the batch to the same tuplesort, in read order, where distances tie: equal
//! distances come out in the order only that sort gives. `bit` batches (integer distances)
//! and batches past `work_mem` go to the tuplesort from the start, which spills as pgvector's.
//!
//! The sort, its slots and the buffer access strategy live in the memory context the scan
//! was begun in and are ended by `amendscan`; after an ERROR the abort frees them.

use crate::am::ivfflat::options;
use crate::am::ivfflat::scan_stats::{record_finished_scan, ScanCounters};
use crate::am::shared::scan::{self as shared_scan, AbortSafe};
use crate::am::shared::sort::Tuplesort;
use crate::opclass::{Method, Support, Value, ValueKind};
use crate::storage::io::RelationBlocks;
use crate::storage::toast::ToastedColumn;
use crate::storage::{item_pointer_data, AccessStrategy, BlockNumber, Fork, Relation};
use crate::stores::ivfflat::entries::{self, ValueScratch};
use crate::stores::ivfflat::lists;
use pgrx::{pg_guard, pg_sys};
use std::collections::VecDeque;
use std::ffi::c_int;
use vector_io::{BlockSource, ChainHints, HeapRowHints, TableRow};
use vector_ivf::order::{BatchOrder, Next};

/// Everything one index scan keeps between calls.
struct ScanState {
    rel: Relation,
    support: Support,
    /// Lists read per batch, and at most in all (iterative scans).
    probes: usize,
    max_probes: usize,
    /// `None` until the first `amgettuple` after a (re)scan.
    query: Option<Value>,
    /// First and insert pages of the lists to read, nearest first, and how many have been
    /// read.
    list_pages: Vec<(BlockNumber, BlockNumber)>,
    next_list: usize,
    /// The batch's entries while no tie has been met; `exact` once they are in `sort`.
    order: BatchOrder<pg_sys::ItemPointerData>,
    exact: bool,
    sort: Option<Tuplesort>,
    strategy: Option<AccessStrategy>,
    scratch: ValueScratch,
    /// Read-ahead along the lists.
    hints: ChainHints,
    /// The index's size when the lists were chosen (planned blocks stay below it).
    nblocks: BlockNumber,
    lists_read: u64,
    /// Table read-ahead of cold scans: the next rows, taken from the sort ahead of time.
    heap_hints: Option<HeapRowHints<RelationBlocks>>,
    /// The indexed column's out-of-line values, if it has any (made with `heap_hints`).
    toast: Option<ToastedColumn>,
    ahead: VecDeque<pg_sys::ItemPointerData>,
    returned: usize,
}

impl AbortSafe for ScanState {
    /// The abort freed the sort's memory and files and the strategy's memory.
    fn forget_after_abort(&mut self) {
        if let Some(sort) = self.sort.take() {
            sort.forget();
        }
        if let Some(strategy) = self.strategy.take() {
            strategy.forget();
        }
    }
}

/// Longest run of pages a list is guessed to span (a longer list is still read whole, only
/// not all of it planned).
const MAX_GUESS: BlockNumber = 4096;

impl ScanState {
    /// What this scan did so far, over all its rescans.
    fn counters(&self) -> ScanCounters {
        ScanCounters {
            lists: self.lists_read,
            io: self.hints.counters,
            heap_prefetches: self.heap_hints.as_ref().map_or(0, |h| h.issued),
        }
    }

    /// The next batch: the entries of up to `probes` more lists, to be returned nearest first.
    fn read_batch(&mut self) {
        let sort = self.sort.as_mut().expect("made at begin");
        let strategy = self.strategy.as_ref().expect("made at begin");
        let query = self.query.as_ref().expect("set by the first call");
        let distance = self.support.prepare(query);
        sort.reset();
        let order = &mut self.order;
        order.clear();
        let mut exact = self.support.type_info().kind == ValueKind::Bit;
        // SAFETY: work_mem is a plain int GUC read by value.
        let work_mem_kb = usize::try_from(unsafe { pg_sys::work_mem }).unwrap_or(0);
        let budget =
            work_mem_kb.saturating_mul(1024) / BatchOrder::<pg_sys::ItemPointerData>::ENTRY_BYTES;
        self.ahead.clear();
        let end = (self.next_list + self.probes).min(self.list_pages.len());
        let batch = &self.list_pages[self.next_list..end];
        let nblocks = self.nblocks;
        let guess = |start: BlockNumber, insert: BlockNumber| {
            if start <= insert && insert < nblocks && insert - start < MAX_GUESS {
                insert
            } else {
                start
            }
        };
        self.hints.plan(
            batch
                .iter()
                .map(|&(start, insert)| (start, guess(start, insert))),
        );
        let stream = options::io_prefetch();
        for &(start, insert) in batch {
            self.lists_read += 1;
            let stream_to = stream.then(|| guess(start, insert));
            entries::read_list(
                self.rel,
                start,
                strategy,
                &mut self.hints,
                &mut self.scratch,
                stream_to,
                |tid, value| {
                    let d = distance.distance_value_first(value);
                    let tid = item_pointer_data(tid);
                    if exact {
                        put_entry(sort, d, tid);
                    } else if order.len() >= budget || !order.push(d, tid) {
                        for (d, tid) in order.read_order() {
                            put_entry(sort, d, tid);
                        }
                        order.clear();
                        put_entry(sort, d, tid);
                        exact = true;
                    }
                },
            );
        }
        self.hints.finish_plan();
        self.next_list = end;
        if exact {
            sort.perform();
        }
        self.exact = exact;
    }

    /// From entry `returned` on, the batch's order is the tuplesort's (distances tie).
    fn sort_exactly(&mut self, returned: usize) {
        let sort = self.sort.as_mut().expect("made at begin");
        for (d, tid) in self.order.read_order() {
            put_entry(sort, d, tid);
        }
        self.order.clear();
        sort.perform();
        // The entries already returned were each strictly nearer than all the others, so
        // they are the sort's first ones too.
        for _ in 0..returned {
            sort.next_tuple();
        }
        self.exact = true;
    }

    /// The next heap TID in index order, `None` when every planned list has been returned.
    fn next_tid(&mut self) -> Option<pg_sys::ItemPointerData> {
        loop {
            if let Some(tid) = self.ahead.pop_front() {
                return Some(tid);
            }
            if let Some(tid) = self.pull() {
                return Some(tid);
            }
            if self.next_list == self.list_pages.len() {
                return None;
            }
            self.read_batch();
        }
    }

    /// The next entry of the batch.
    fn pull(&mut self) -> Option<pg_sys::ItemPointerData> {
        if !self.exact {
            match self.order.next_entry() {
                Next::Entry(tid) => return Some(tid),
                Next::End => return None,
                Next::Tie { returned } => self.sort_exactly(returned),
            }
        }
        let values = self.sort.as_mut().expect("made at begin").next_tuple()?;
        // SAFETY: the second column is a tid, by reference into the sort's slot.
        Some(unsafe { *values[1].cast_mut_ptr::<pg_sys::ItemPointerData>() })
    }

    /// The table hints of a scan that may hint (not `ivfflat.io_method = off`), made on its
    /// first row.
    ///
    /// # Safety
    ///
    /// `scan` is this state's live scan descriptor.
    unsafe fn table_hints(
        &mut self,
        scan: pg_sys::IndexScanDesc,
    ) -> Option<&mut HeapRowHints<RelationBlocks>> {
        // SAFETY: per the contract; index_beginscan set heapRelation (or left it null).
        let heap = unsafe { (*scan).heapRelation };
        if self.heap_hints.is_none() && self.hints.enabled() && !heap.is_null() {
            // SAFETY: index_beginscan set heapRelation, open for as long as the scan.
            let rel = unsafe { Relation::from_raw(heap, Fork::Main) };
            self.heap_hints = Some(HeapRowHints::new(RelationBlocks::new(rel, false)));
            // SAFETY: the scan's relations and snapshot, open and live as long as the scan.
            self.toast = unsafe {
                ToastedColumn::of_index(heap, (*scan).indexRelation, (*scan).xs_snapshot)
            };
        }
        self.heap_hints.as_mut()
    }

    /// After cold reads or slow table fetches: takes the next rows from the sort ahead of
    /// time and hints their table blocks (at most the table's I/O concurrency of them, as
    /// many as the backend's recent scans handed out, else growing as rows are returned).
    fn hint_next_rows(&mut self) {
        let Some(want) = self.heap_hints.as_ref().map(|h| h.distance(self.returned)) else {
            return;
        };
        while self.ahead.len() < want {
            let Some(tid) = self.pull() else {
                break;
            };
            self.ahead.push_back(tid);
        }
        let rows = self.ahead.iter().map(|t| TableRow {
            block: (u32::from(t.ip_blkid.bi_hi) << 16) | u32::from(t.ip_blkid.bi_lo),
            offset: t.ip_posid,
        });
        let toast = &mut self.toast;
        if let Some(hints) = self.heap_hints.as_mut() {
            hints.ahead_rows(self.returned, rows, |row| {
                toast
                    .as_mut()
                    .map_or(0, |column| column.hint(row.block, row.offset))
            });
        }
    }

    /// The lists to read, nearest first.
    fn choose_lists(&mut self) {
        let query = self.query.as_ref().expect("set by the first call");
        let distance = self.support.prepare(query);
        let mut starts = Vec::new();
        let mut distances = Vec::new();
        lists::for_each_list(self.rel, |list, center| {
            starts.push((list.start_page, list.insert_page));
            distances.push(distance.distance_value_first(center));
        });
        self.nblocks = self.rel.nblocks();
        let nearest = vector_ivf::probes::nearest_lists(distances, self.max_probes);
        self.list_pages = nearest.iter().map(|&i| starts[i as usize]).collect();
        self.next_list = 0;
    }
}

/// Puts one `(distance, heap tid)` entry into the tuplesort, as pgvector does.
fn put_entry(sort: &mut Tuplesort, distance: f64, mut tid: pg_sys::ItemPointerData) {
    sort.put(&[
        crate::fmgr::float8_datum(distance),
        pg_sys::Datum::from(&raw mut tid),
    ]);
}

/// `ambeginscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn begin_scan(
    index: pg_sys::Relation,
    nkeys: c_int,
    norderbys: c_int,
) -> pg_sys::IndexScanDesc {
    // SAFETY: Postgres passes the open index relation; RelationGetIndexScan allocates the
    // descriptor in the current memory context.
    let scan = unsafe { pg_sys::RelationGetIndexScan(index, nkeys, norderbys) };
    // SAFETY: the index stays open until the scan ends, which outlives the state.
    let rel = unsafe { Relation::from_raw(index, Fork::Main) };
    let meta = lists::read_meta(rel);
    let lists = usize::from(meta.lists).max(1);
    let probes = options::probes();
    let max_probes = if options::iterative() {
        options::max_probes().max(probes)
    } else {
        probes
    };
    let state = ScanState {
        rel,
        support: Support::for_index(rel, Method::Ivfflat),
        probes: probes.min(lists),
        max_probes: max_probes.min(lists),
        query: None,
        list_pages: Vec::new(),
        next_list: 0,
        order: BatchOrder::default(),
        exact: false,
        // In the current context: the scan's, which lives until the executor ends.
        sort: Some(Tuplesort::by_distance()),
        strategy: Some(AccessStrategy::bulk_read()),
        scratch: ValueScratch::default(),
        hints: ChainHints::new(
            options::io_prefetch(),
            RelationBlocks::new(rel, false).platform().io_concurrency,
            Relation::combine_limit(),
        )
        .choosing_by_time(),
        nblocks: 0,
        lists_read: 0,
        heap_hints: None,
        toast: None,
        ahead: VecDeque::new(),
        returned: 0,
    };
    // SAFETY: scan was just made in the current context, without an opaque.
    unsafe { shared_scan::attach(scan, state) };
    scan
}

/// `amrescan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn rescan(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    _nkeys: c_int,
    orderbys: pg_sys::ScanKey,
    _norderbys: c_int,
) {
    // SAFETY: scan was begun by begin_scan; the key arrays are amrescan's.
    unsafe {
        let state = shared_scan::state::<ScanState>(scan);
        state.query = None;
        state.list_pages.clear();
        state.next_list = 0;
        state.ahead.clear();
        state.returned = 0;
        if let Some(hints) = state.heap_hints.as_mut() {
            hints.restart();
        }
        shared_scan::copy_keys(scan, keys, orderbys);
    }
}

/// `amgettuple`.
#[pg_guard]
pub unsafe extern "C-unwind" fn get_tuple(
    scan: pg_sys::IndexScanDesc,
    _direction: pg_sys::ScanDirection::Type,
) -> bool {
    // SAFETY: scan was begun by begin_scan and not ended.
    let state = unsafe { shared_scan::state::<ScanState>(scan) };
    if state.query.is_none() {
        // SAFETY: scan is a live descriptor of an ivfflat index.
        let (datum, is_null) = unsafe { shared_scan::first_call(scan, Method::Ivfflat) };
        // SAFETY: a non-NULL ORDER BY argument is a value of the column's type.
        state.query = Some(unsafe { state.support.scan_value(datum, is_null) });
        state.choose_lists();
        state.read_batch();
    }
    // SAFETY: scan is this state's live descriptor.
    let table = unsafe { state.table_hints(scan) };
    let table_slow = table.is_some_and(|t| t.table_is_slow());
    let Some(tid) = state.next_tid() else {
        return false;
    };
    state.returned += 1;
    if state.hints.is_cold() || table_slow {
        state.hint_next_rows();
    }
    if let Some(table) = state.heap_hints.as_mut() {
        table.row_returned(state.returned);
    }
    // SAFETY: scan is live; these fields are the AM's outputs.
    unsafe {
        let s = &mut *scan;
        s.xs_heaptid = tid;
        s.xs_recheck = false;
        s.xs_recheckorderby = false;
    }
    true
}

/// `amendscan`.
#[pg_guard]
pub unsafe extern "C-unwind" fn end_scan(scan: pg_sys::IndexScanDesc) {
    // SAFETY: scan was begun by begin_scan; the state is taken out once and dropped (ending
    // its sort and strategy) while the context they live in is still there.
    unsafe {
        if let Some(state) = shared_scan::detach::<ScanState>(scan) {
            record_finished_scan(state.counters());
        }
    }
}

/// The counters of an index scan, if `desc` is a live scan of an ivfflat index.
///
/// # Safety
///
/// `desc` is null or a live index scan descriptor.
#[cfg_attr(not(feature = "pg18"), allow(dead_code))]
pub unsafe fn counters_of(desc: pg_sys::IndexScanDesc) -> Option<ScanCounters> {
    // SAFETY: per the contract; an ivfflat scan's opaque is ours, told apart from other
    // access methods by the index's amgettuple.
    unsafe {
        if desc.is_null() || (*desc).opaque.is_null() {
            return None;
        }
        let am = (*(*desc).indexRelation).rd_indam;
        if am.is_null()
            || (*am).amgettuple.map(|f| f as *const () as usize)
                != Some(get_tuple as *const () as usize)
        {
            return None;
        }
        shared_scan::peek::<ScanState>(desc).map(ScanState::counters)
    }
}
