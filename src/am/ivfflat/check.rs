//! `ivfflat_index_check` and `ivfflat_index_parent_check`: the verifier functions of ivfflat
//! indexes, as hnsw's (`crate::am::hnsw::check`). The checks are `vector_check::ivfflat`'s.

use crate::am::ivfflat::insert::index_value;
use crate::am::shared::check::{lockmode, notice, open_target};
use crate::opclass::{Method, Support};
use crate::stores::check::IndexPages;
use pgrx::pg_sys;
use vector_check::ivfflat::{check, Options};

crate::sql_function! {
    /// `ivfflat_index_check(index regclass, heapallindexed boolean DEFAULT false)`: every page,
    /// list and entry, beside concurrent writers (AccessShareLock).
    fn ivfflat_index_check(call) {
        run(call.oid(0), call.bool(1), false);
        pg_sys::Datum::from(0)
    }
}

crate::sql_function! {
    /// `ivfflat_index_parent_check(index regclass, heapallindexed boolean DEFAULT false)`: also
    /// each list's insert page on its chain (ShareLock: no writers meanwhile).
    fn ivfflat_index_parent_check(call) {
        run(call.oid(0), call.bool(1), true);
        pg_sys::Datum::from(0)
    }
}

fn is_ivfflat(routine: &pg_sys::IndexAmRoutine) -> bool {
    routine.ambuild.map(|f| f as *const ()) == Some(crate::am::ivfflat::build::build as *const ())
}

fn run(index: pg_sys::Oid, heapallindexed: bool, parent: bool) {
    let Some(target) = open_target(index, lockmode(parent), Method::Ivfflat, is_ivfflat) else {
        return;
    };
    let rel = target.index();
    let support = Support::for_index(rel, Method::Ivfflat);
    let snapshot = heapallindexed.then(|| target.snapshot());
    let options = Options {
        value_type: target.value_type(&support),
        cross_check: parent,
        heap_tids: heapallindexed,
    };
    let s = match check(&mut IndexPages::new(rel), options) {
        Ok(summary) => summary,
        Err(c) => target.corrupted(&c),
    };
    let name = target.index_name();
    pgrx::debug1!(
        "index \"{name}\": {} pages, {} lists on {} pages, {} entries on {} pages ({} compressed)",
        s.pages,
        s.lists,
        s.list_pages,
        s.entries,
        s.entry_pages,
        s.compressed_entries
    );
    if s.zero_pages > 0 || s.unchained_pages > 0 {
        notice(format!(
            "index \"{name}\" has {} uninitialized pages and {} pages on no chain",
            s.zero_pages, s.unchained_pages
        ));
    }
    if let (Some(snapshot), Some(tids)) = (&snapshot, &s.heap_tids) {
        // SAFETY: the datums the heap pass hands over are non-NULL values of the column's type.
        let form = |datum| unsafe { index_value(&support, datum) };
        target.check_heap(snapshot, &form, tids);
    }
}
