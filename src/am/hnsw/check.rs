//! `hnsw_index_check` and `hnsw_index_parent_check`: the verifier functions, after amcheck's
//! `bt_index_check` and `bt_index_parent_check`. The checks are `vector_check::hnsw`'s; this
//! file opens the index, runs them over its pages, and reports.

use crate::am::shared::check::{lockmode, notice, open_target, CheckTarget};
use crate::opclass::{Method, Support};
use crate::stores::check::IndexPages;
use pgrx::pg_sys;
use vector_check::hnsw::{check, Options};

crate::sql_function! {
    /// `hnsw_index_check(index regclass, heapallindexed boolean DEFAULT false)`: every page and
    /// tuple on its own, beside concurrent writers (AccessShareLock).
    fn hnsw_index_check(call) {
        run(call.oid(0), call.bool(1), false);
        pg_sys::Datum::from(0)
    }
}

crate::sql_function! {
    /// `hnsw_index_parent_check(index regclass, heapallindexed boolean DEFAULT false)`: also the
    /// links between tuples and what the entry point reaches (ShareLock: no writers meanwhile).
    fn hnsw_index_parent_check(call) {
        run(call.oid(0), call.bool(1), true);
        pg_sys::Datum::from(0)
    }
}

fn is_hnsw(routine: &pg_sys::IndexAmRoutine) -> bool {
    routine.ambuild.map(|f| f as *const ()) == Some(crate::am::hnsw::build::build as *const ())
}

fn run(index: pg_sys::Oid, heapallindexed: bool, parent: bool) {
    let Some(target) = open_target(index, lockmode(parent), Method::Hnsw, is_hnsw) else {
        return;
    };
    let rel = target.index();
    let support = Support::for_index(rel, Method::Hnsw);
    let snapshot = heapallindexed.then(|| target.snapshot());
    let options = Options {
        value_type: target.value_type(&support),
        cross_check: parent,
        heap_tids: heapallindexed,
    };
    let summary = match check(&mut IndexPages::new(rel), options) {
        Ok(summary) => summary,
        Err(c) => target.corrupted(&c),
    };
    report(&target, &summary);
    if let (Some(snapshot), Some(tids)) = (&snapshot, &summary.heap_tids) {
        // SAFETY: the datums the heap pass hands over are non-NULL values of the column's type.
        let form = |datum| unsafe { support.index_value(datum) };
        target.check_heap(snapshot, &form, tids);
    }
}

fn report(target: &CheckTarget, s: &vector_check::hnsw::Summary) {
    let name = target.index_name();
    pgrx::debug1!(
        "index \"{name}\": {} pages, {} elements ({} live, {} deleted), {} neighbor tuples",
        s.pages,
        s.elements,
        s.live_elements,
        s.deleted_elements,
        s.neighbor_tuples
    );
    if s.zero_pages > 0 || s.unchained_pages > 0 {
        notice(format!(
            "index \"{name}\" has {} uninitialized pages and {} pages off its page chain",
            s.zero_pages, s.unchained_pages
        ));
    }
    let Some(c) = &s.cross else {
        return;
    };
    if c.unreachable > 0 {
        notice(format!(
            "index \"{name}\" has {} of {} live elements that no search can reach",
            c.unreachable, s.live_elements
        ));
    }
    if c.orphan_vectors > 0 {
        notice(format!(
            "index \"{name}\" has {} vector slots in use by no element",
            c.orphan_vectors
        ));
    }
    if c.above_entry_level > 0 || c.links_above_target_level > 0 || c.orphan_neighbor_tuples > 0 {
        notice(format!(
            "index \"{name}\" has {} elements above the entry point's level, {} links above their target's level and {} neighbor tuples of no element",
            c.above_entry_level, c.links_above_target_level, c.orphan_neighbor_tuples
        ));
    }
}
