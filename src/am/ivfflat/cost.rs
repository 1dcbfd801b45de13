//! `amcostestimate`, computed as pgvector 0.8.6's `ivfflatcostestimate`: the generic estimate,
//! with a scan's reads of a list counted as half sequential, and the startup cost (before the
//! first row) the share `probes / lists` of the total. When that share still reads more pages
//! than the table has, the startup cost is lowered to sequential reads of at most the table's
//! pages, as pgvector does.

use crate::am::ivfflat::options;
use crate::am::shared::cost::{self, CostOutputs};
use crate::storage::{Fork, Relation};
use crate::stores::ivfflat::lists;
use pgrx::{pg_guard, pg_sys};

/// pgvector's share of an ivfflat scan's page reads taken as sequential.
const SEQUENTIAL_RATIO: f64 = 0.5;

/// `lists` from the index's metapage.
fn index_lists(index_oid: pg_sys::Oid) -> usize {
    // SAFETY: the planner holds a lock on the index; index_open with NoLock returns the open
    // relation, closed again right after the metapage is read (an error there is cleaned up by
    // the transaction abort).
    unsafe {
        let raw = pg_sys::index_open(index_oid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let meta = lists::read_meta(Relation::from_raw(raw, Fork::Main));
        pg_sys::index_close(raw, pg_sys::NoLock as pg_sys::LOCKMODE);
        usize::from(meta.lists)
    }
}

/// `amcostestimate`.
#[allow(clippy::too_many_arguments)]
#[pg_guard]
pub unsafe extern "C-unwind" fn cost_estimate(
    root: *mut pg_sys::PlannerInfo,
    path: *mut pg_sys::IndexPath,
    loop_count: f64,
    startup_cost: *mut pg_sys::Cost,
    total_cost: *mut pg_sys::Cost,
    selectivity: *mut pg_sys::Selectivity,
    correlation: *mut f64,
    pages: *mut f64,
) {
    let out = CostOutputs {
        startup_cost,
        total_cost,
        selectivity,
        correlation,
        pages,
    };
    // SAFETY: the planner's arguments, passed on.
    unsafe {
        cost::estimate(root, path, loop_count, out, |costs, facts| {
            let lists = index_lists(facts.index_oid).max(1);
            let ratio = (options::probes() as f64 / lists as f64).min(1.0);
            let spread = costs.spc_random_page_cost - facts.seq_page_cost;
            costs.indexTotalCost -= SEQUENTIAL_RATIO * costs.numIndexPages * spread;
            costs.indexStartupCost = costs.indexTotalCost * ratio;
            let startup_pages = costs.numIndexPages * ratio;
            if startup_pages > facts.rel_pages && ratio < 0.5 {
                costs.indexStartupCost -= (1.0 - SEQUENTIAL_RATIO) * startup_pages * spread;
                costs.indexStartupCost -= (startup_pages - facts.rel_pages) * facts.seq_page_cost;
            }
        })
    }
}
