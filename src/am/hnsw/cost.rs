//! `amcostestimate`, computed as pgvector 0.8.6's `hnswcostestimate` so the planner chooses
//! (or skips) the index in the same situations.
//!
//! Without an ORDER BY on the indexed distance the index is useless: the cost is infinite (and,
//! on Postgres 18, the path counts as disabled). Otherwise the generic estimate is scaled down
//! to the share of the index an HNSW search is expected to visit:
//!
//! ```text
//! ratio = (entry_level * m + 2m * ef_search * 0.55 * ln(N) / (ln(m) * (1 + ln(ef_search)))) / N
//! entry_level = floor(ln(N) / ln(m))
//! ```
//!
//! capped at 1, which gives the startup cost (the cost before the first row). When that share
//! is small but still reads more pages than the table has, the startup cost is further lowered
//! to sequential reads of at most the table's pages, as pgvector does.

use crate::am::hnsw::options;
use crate::storage::{Fork, Relation};
use crate::stores::hnsw::page_graph;
use pgrx::{pg_guard, pg_sys};

/// pgvector's `scalingFactor`.
const SCALING_FACTOR: f64 = 0.55;

/// The estimate's inputs besides the generic costs.
struct Inputs {
    tuples: f64,
    m: i32,
    ef_search: i32,
}

/// Share of the index read before the first result.
fn startup_ratio(inputs: &Inputs) -> f64 {
    if inputs.tuples <= 0.0 {
        return 1.0;
    }
    let m = inputs.m;
    let log_n = inputs.tuples.ln();
    // Truncated towards zero as C's (int) cast does.
    let entry_level = (log_n * (1.0 / f64::from(m).ln())) as i32;
    let layer0_tuples_max = 2 * m * inputs.ef_search;
    let layer0_selectivity =
        SCALING_FACTOR * log_n / (f64::from(m).ln() * (1.0 + f64::from(inputs.ef_search).ln()));
    let ratio = (f64::from(entry_level * m) + f64::from(layer0_tuples_max) * layer0_selectivity)
        / inputs.tuples;
    ratio.min(1.0)
}

/// `m` from the index's metapage.
fn index_m(index_oid: pg_sys::Oid) -> i32 {
    // SAFETY: the planner holds a lock on the index; index_open with NoLock returns the open
    // relation, closed again below before anything else can fail in between (read_meta raises
    // its error only after the buffer guard is released, and the relcache reference is then
    // released by the transaction abort).
    unsafe {
        let raw = pg_sys::index_open(index_oid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let meta = page_graph::read_meta(Relation::from_raw(raw, Fork::Main));
        pg_sys::index_close(raw, pg_sys::NoLock as pg_sys::LOCKMODE);
        i32::from(meta.m)
    }
}

/// Marks the path disabled as pgvector does on Postgres 18 (`disabled_nodes = 2`).
#[cfg(feature = "pg18")]
fn mark_disabled(path: &mut pg_sys::IndexPath) {
    path.path.disabled_nodes = 2;
}

#[cfg(not(feature = "pg18"))]
fn mark_disabled(_path: &mut pg_sys::IndexPath) {}

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
    // SAFETY: the planner passes a valid path for this index and valid output pointers.
    let path_ref = unsafe { &mut *path };
    let write = |costs: &pg_sys::GenericCosts| {
        // SAFETY: the output pointers are valid for writes (planner's contract).
        unsafe {
            *startup_cost = costs.indexStartupCost;
            *total_cost = costs.indexTotalCost;
            *selectivity = costs.indexSelectivity;
            *correlation = costs.indexCorrelation;
            *pages = costs.numIndexPages;
        }
    };

    if path_ref.indexorderbys.is_null() {
        let infinite = pg_sys::GenericCosts {
            indexStartupCost: f64::INFINITY,
            indexTotalCost: f64::INFINITY,
            indexSelectivity: 0.0,
            indexCorrelation: 0.0,
            numIndexPages: 0.0,
            numIndexTuples: 0.0,
            spc_random_page_cost: 0.0,
            num_sa_scans: 0.0,
        };
        write(&infinite);
        mark_disabled(path_ref);
        return;
    }

    let mut costs = pg_sys::GenericCosts {
        indexStartupCost: 0.0,
        indexTotalCost: 0.0,
        indexSelectivity: 0.0,
        indexCorrelation: 0.0,
        numIndexPages: 0.0,
        numIndexTuples: 0.0,
        spc_random_page_cost: 0.0,
        num_sa_scans: 0.0,
    };
    // SAFETY: root and path are the planner's; costs is a zeroed GenericCosts as the function
    // expects.
    unsafe { pg_sys::genericcostestimate(root, path, loop_count, &mut costs) };

    // SAFETY: indexinfo and its rel are the planner's descriptions of this index and its table.
    let (index_oid, tuples, tablespace, rel_pages) = unsafe {
        let info = &*path_ref.indexinfo;
        (
            info.indexoid,
            info.tuples,
            info.reltablespace,
            f64::from((*info.rel).pages),
        )
    };
    let inputs = Inputs {
        tuples,
        m: index_m(index_oid),
        ef_search: options::ef_search() as i32,
    };
    let ratio = startup_ratio(&inputs);

    let mut seq_page_cost = 0.0;
    // SAFETY: a tablespace oid from the catalog; the random-page output may be NULL.
    unsafe {
        pg_sys::get_tablespace_page_costs(tablespace, std::ptr::null_mut(), &mut seq_page_cost)
    };

    costs.indexStartupCost = costs.indexTotalCost * ratio;

    // The table's sequential scan cost does not count TOAST: do not let the index look more
    // expensive than reading the table when it visits fewer than half of its tuples.
    let startup_pages = costs.numIndexPages * ratio;
    if startup_pages > rel_pages && ratio < 0.5 {
        costs.indexStartupCost -= startup_pages * (costs.spc_random_page_cost - seq_page_cost);
        costs.indexStartupCost -= (startup_pages - rel_pages) * seq_page_cost;
    }

    write(&costs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_matches_formula() {
        let r = startup_ratio(&Inputs {
            tuples: 1_000_000.0,
            m: 16,
            ef_search: 40,
        });
        let n: f64 = 1_000_000.0;
        let entry = (n.ln() / 16f64.ln()) as i32;
        let expected = (f64::from(entry * 16)
            + 1280.0 * 0.55 * n.ln() / (16f64.ln() * (1.0 + 40f64.ln())))
            / n;
        // The same formula, evaluated in a different order: equal up to rounding.
        assert!(
            (r - expected).abs() <= expected * 1e-12,
            "{r} vs {expected}"
        );
        assert_eq!(
            startup_ratio(&Inputs {
                tuples: 10.0,
                m: 16,
                ef_search: 40
            }),
            1.0
        );
        assert_eq!(
            startup_ratio(&Inputs {
                tuples: 0.0,
                m: 16,
                ef_search: 40
            }),
            1.0
        );
    }
}
