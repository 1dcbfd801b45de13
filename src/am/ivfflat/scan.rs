//! Index scans: `ORDER BY col <op> $1 [LIMIT k]` answered from the nearest lists.
//!
//! The first `amgettuple` after a (re)scan reads the centers from the list pages and keeps
//! the `max_probes` nearest ([`vector_ivf::probes`]), then reads the entries of the first
//! `ivfflat.probes` of them into Postgres's tuplesort by distance, and each call returns the
//! next heap TID. With `ivfflat.iterative_scan = relaxed_order`, when those run out the next
//! `probes` lists are read and sorted as another batch, up to `ivfflat.max_probes` lists.
//! `probes` and `max_probes` are fixed when the scan begins, as in pgvector.
//!
//! Distances are support function 1, called center first for the lists and entry first for
//! the entries, as pgvector calls them (a dimension mismatch reports the index's dimensions
//! first). A NULL query puts everything at distance 0. The query is normalized for cosine
//! operator classes. Results are exact distances in index order, never rechecked.
//!
//! The sort, its slots and the buffer access strategy live in the memory context the scan
//! was begun in and are ended by `amendscan`; after an ERROR the abort frees them.

use crate::am::ivfflat::options;
use crate::am::shared::scan::{self as shared_scan, AbortSafe};
use crate::am::shared::sort::Tuplesort;
use crate::am::shared::typeinfo::{Method, Support, Value};
use crate::storage::{item_pointer_data, AccessStrategy, BlockNumber, Fork, Relation};
use crate::stores::ivfflat::entries::{self, ValueScratch};
use crate::stores::ivfflat::lists;
use pgrx::{pg_guard, pg_sys};
use std::ffi::c_int;

/// Everything one index scan keeps between calls.
struct ScanState {
    rel: Relation,
    support: Support,
    /// Lists read per batch, and at most in all (iterative scans).
    probes: usize,
    max_probes: usize,
    /// `None` until the first `amgettuple` after a (re)scan.
    query: Option<Value>,
    /// Start pages of the lists to read, nearest first, and how many have been read.
    list_pages: Vec<BlockNumber>,
    next_list: usize,
    sort: Option<Tuplesort>,
    strategy: Option<AccessStrategy>,
    scratch: ValueScratch,
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

impl ScanState {
    /// The next batch: the entries of up to `probes` more lists, sorted.
    fn read_batch(&mut self) {
        let sort = self.sort.as_mut().expect("made at begin");
        let strategy = self.strategy.as_ref().expect("made at begin");
        let query = self.query.as_ref().expect("set by the first call");
        let distance = self.support.prepare(query);
        sort.reset();
        let end = (self.next_list + self.probes).min(self.list_pages.len());
        for &start in &self.list_pages[self.next_list..end] {
            entries::read_list(
                self.rel,
                start,
                strategy,
                &mut self.scratch,
                |tid, value| {
                    let d = distance.distance_value_first(value);
                    let mut tid = item_pointer_data(tid);
                    sort.put(&[
                        crate::fmgr::float8_datum(d),
                        pg_sys::Datum::from(&raw mut tid),
                    ]);
                },
            );
        }
        self.next_list = end;
        sort.perform();
    }

    /// The lists to read, nearest first.
    fn choose_lists(&mut self) {
        let query = self.query.as_ref().expect("set by the first call");
        let distance = self.support.prepare(query);
        let mut starts = Vec::new();
        let mut distances = Vec::new();
        lists::for_each_list(self.rel, |list, center| {
            starts.push(list.start_page);
            distances.push(distance.distance_value_first(center));
        });
        let nearest = vector_ivf::probes::nearest_lists(distances, self.max_probes);
        self.list_pages = nearest.iter().map(|&i| starts[i as usize]).collect();
        self.next_list = 0;
    }
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
        // In the current context: the scan's, which lives until the executor ends.
        sort: Some(Tuplesort::by_distance()),
        strategy: Some(AccessStrategy::bulk_read()),
        scratch: ValueScratch::default(),
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
    let tid = loop {
        let sort = state.sort.as_mut().expect("made at begin");
        if let Some(values) = sort.next_tuple() {
            // SAFETY: the second column is a tid, by reference into the sort's slot.
            break unsafe { *values[1].cast_mut_ptr::<pg_sys::ItemPointerData>() };
        }
        if state.next_list == state.list_pages.len() {
            return false;
        }
        state.read_batch();
    };
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
    unsafe { drop(shared_scan::detach::<ScanState>(scan)) };
}
