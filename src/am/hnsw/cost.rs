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
//!
//! A quantized index (ours) walks only its graph pages, with the wider queue its codes need
//! (`vector_rabitq::walk_candidates`) in place of `ef_search`, then reranks those candidates
//! from its vector pages: its share is that ratio of the graph's bytes plus, of the vectors'
//! bytes, the pages that many vectors can be on.

use crate::am::hnsw::options;
use crate::am::shared::cost::{self, CostOutputs};
use crate::storage::{Fork, Relation};
use crate::stores::hnsw::metapage;
use pgrx::{pg_guard, pg_sys};
use vector_formats::hnsw_codes::{CodeRecord, QuantizedSizes};
use vector_rabitq::walk_candidates;

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

/// Share of a quantized index read before the first row: `ratio` of its graph, and of its
/// vectors the pages that `ef_search` of `tuples` vectors can be on.
fn quantized_share(ratio: f64, sizes: QuantizedSizes, tuples: f64, ef_search: i32) -> f64 {
    if tuples <= 0.0 {
        return 1.0;
    }
    let graph = sizes.graph_share();
    let reranked = f64::from(ef_search) * sizes.vectors_per_page() as f64 / tuples;
    (graph * ratio + (1.0 - graph) * reranked.min(1.0)).min(1.0)
}

/// `m` from the index's metapage, and a quantized index's sizes and code width.
fn index_facts(index_oid: pg_sys::Oid) -> (i32, Option<(QuantizedSizes, u32)>) {
    // SAFETY: the planner holds a lock on the index; index_open with NoLock returns the open
    // relation, closed again below before anything else can fail in between (read_meta and
    // read_quantizer raise their errors only after the buffer guard is released, and the
    // relcache reference is then released by the transaction abort).
    unsafe {
        let raw = pg_sys::index_open(index_oid, pg_sys::NoLock as pg_sys::LOCKMODE);
        let rel = Relation::from_raw(raw, Fork::Main);
        let meta = metapage::read_meta(rel);
        let sizes = meta.is_quantized().then(|| {
            let q = metapage::read_quantizer(rel);
            let code = vector_rabitq::code_bytes(q.centroid.len(), u32::from(q.bits));
            let sizes = QuantizedSizes::new(
                CodeRecord::size(code),
                q.vector_size as usize,
                usize::from(meta.m),
            );
            (sizes, u32::from(q.bits))
        });
        pg_sys::index_close(raw, pg_sys::NoLock as pg_sys::LOCKMODE);
        (i32::from(meta.m), sizes)
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
            let (m, quantized) = index_facts(facts.index_oid);
            let ef_search = match quantized {
                Some((_, bits)) => walk_candidates(options::ef_search(), bits),
                None => options::ef_search(),
            };
            let ef_search = ef_search.min(i32::MAX as usize) as i32;
            let ratio = startup_ratio(&Inputs {
                tuples: facts.tuples,
                m,
                ef_search,
            });
            let ratio = match quantized {
                Some((sizes, _)) => quantized_share(ratio, sizes, facts.tuples, ef_search),
                None => ratio,
            };
            costs.indexStartupCost = costs.indexTotalCost * ratio;
            // The table's sequential scan cost does not count TOAST: do not let the index look
            // more expensive than reading the table when it visits fewer than half of its
            // tuples.
            let startup_pages = costs.numIndexPages * ratio;
            if startup_pages > facts.rel_pages && ratio < 0.5 {
                costs.indexStartupCost -=
                    startup_pages * (costs.spc_random_page_cost - facts.seq_page_cost);
                costs.indexStartupCost -= (startup_pages - facts.rel_pages) * facts.seq_page_cost;
            }
        })
    }
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

    #[test]
    fn a_quantized_search_reads_a_smaller_share() {
        // 100,000 rows of 384-d rabitq4: about half of the unquantized share.
        let sizes = QuantizedSizes::new(232, 1544, 16);
        let inputs = Inputs {
            tuples: 100_000.0,
            m: 16,
            ef_search: 40,
        };
        let ratio = startup_ratio(&inputs);
        let share = quantized_share(ratio, sizes, inputs.tuples, inputs.ef_search);
        let graph = sizes.graph_share();
        let expected = graph * ratio + (1.0 - graph) * 40.0 * 5.0 / 100_000.0;
        assert!((share - expected).abs() < 1e-15, "{share} vs {expected}");
        assert!(
            share < 0.6 * ratio && share > 0.3 * ratio,
            "{share} vs {ratio}"
        );
        // Small tables are read whole, as unquantized ones.
        assert_eq!(quantized_share(1.0, sizes, 100.0, 40), 1.0);
        assert_eq!(quantized_share(0.5, sizes, 0.0, 40), 1.0);
    }
}
