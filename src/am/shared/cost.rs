//! What both access methods' `amcostestimate` share, as pgvector 0.8.6 computes it: without
//! an ORDER BY on the indexed distance the index is useless (infinite cost, and on Postgres 18
//! the path counts as disabled); otherwise Postgres's generic estimate, which each method then
//! scales to the share of the index it reads before the first row.

use pgrx::pg_sys;

/// Facts about the path the methods' adjustments use.
pub struct PathFacts {
    pub index_oid: pg_sys::Oid,
    /// Tuples in the index, as the planner estimates them.
    pub tuples: f64,
    /// Pages of the table.
    pub rel_pages: f64,
    /// The index tablespace's `seq_page_cost`.
    pub seq_page_cost: f64,
}

/// The output pointers of `amcostestimate`.
pub struct CostOutputs {
    pub startup_cost: *mut pg_sys::Cost,
    pub total_cost: *mut pg_sys::Cost,
    pub selectivity: *mut pg_sys::Selectivity,
    pub correlation: *mut f64,
    pub pages: *mut f64,
}

impl CostOutputs {
    fn write(&self, costs: &pg_sys::GenericCosts) {
        // SAFETY: the output pointers are valid for writes (the planner's contract of
        // amcostestimate, which built this value).
        unsafe {
            *self.startup_cost = costs.indexStartupCost;
            *self.total_cost = costs.indexTotalCost;
            *self.selectivity = costs.indexSelectivity;
            *self.correlation = costs.indexCorrelation;
            *self.pages = costs.numIndexPages;
        }
    }
}

fn zero_costs() -> pg_sys::GenericCosts {
    pg_sys::GenericCosts {
        indexStartupCost: 0.0,
        indexTotalCost: 0.0,
        indexSelectivity: 0.0,
        indexCorrelation: 0.0,
        numIndexPages: 0.0,
        numIndexTuples: 0.0,
        spc_random_page_cost: 0.0,
        num_sa_scans: 0.0,
    }
}

/// Marks the path disabled as pgvector does on Postgres 18 (`disabled_nodes = 2`).
#[cfg(feature = "pg18")]
fn mark_disabled(path: &mut pg_sys::IndexPath) {
    path.path.disabled_nodes = 2;
}

#[cfg(not(feature = "pg18"))]
fn mark_disabled(_path: &mut pg_sys::IndexPath) {}

/// The estimate: `adjust` changes the generic costs of a path that orders by the distance.
///
/// # Safety
///
/// The arguments are those the planner passed to `amcostestimate`.
pub unsafe fn estimate(
    root: *mut pg_sys::PlannerInfo,
    path: *mut pg_sys::IndexPath,
    loop_count: f64,
    out: CostOutputs,
    adjust: impl FnOnce(&mut pg_sys::GenericCosts, &PathFacts),
) {
    // SAFETY: the planner passes a valid path for this index.
    let path_ref = unsafe { &mut *path };
    if path_ref.indexorderbys.is_null() {
        let infinite = pg_sys::GenericCosts {
            indexStartupCost: f64::INFINITY,
            indexTotalCost: f64::INFINITY,
            ..zero_costs()
        };
        out.write(&infinite);
        mark_disabled(path_ref);
        return;
    }
    let mut costs = zero_costs();
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
    let mut seq_page_cost = 0.0;
    // SAFETY: a tablespace oid from the catalog; the random-page output may be NULL.
    unsafe {
        pg_sys::get_tablespace_page_costs(tablespace, std::ptr::null_mut(), &mut seq_page_cost)
    };
    let facts = PathFacts {
        index_oid,
        tuples,
        rel_pages,
        seq_page_cost,
    };
    adjust(&mut costs, &facts);
    out.write(&costs);
}
