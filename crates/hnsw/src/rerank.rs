//! Exact rerank of a quantized graph's candidates.
//!
//! A quantized index walks its graph on estimated distances. [`RerankedScan`] takes the
//! candidates of each search of its [`Scan`] (the first, and each resume of an iterative scan)
//! as a whole. Each candidate's estimate comes with an error bound, so its exact distance is at
//! least `estimate − bound` (its lower bound, with the bound's confidence). The candidates are
//! reranked in order of lower bound, `breadth` at a time: the store is asked for all of a batch's
//! exact distances in one call ([`RerankStore::exact_distances`], where a page store requests
//! every block of the batch before it reads any). A reranked candidate is returned as soon as
//! no candidate left can be nearer: its exact distance is at most the smallest lower bound
//! still to rerank. So the rows of one search come back in exact order, and only as many are
//! read as the rows asked for need (a `LIMIT 10` reads the first batch or two).
//!
//! Across searches the order is the inner scan's: a later search can find an element nearer than
//! one already returned, as a relaxed iterative scan can. A strict scan skips such elements (the
//! inner scan runs relaxed, on estimates, and strictness applies to the exact distances).
//! Candidates whose full vector the store cannot give (`None`) are dropped.

use crate::scan::{IterativeScan, Scan, ScanParams};
use crate::search::SearchStats;
use crate::storage::{Candidate, GraphStore};

/// A store that also holds the full vectors of a quantized graph.
pub trait RerankStore: GraphStore {
    /// How far a loaded candidate's exact distance can be below its estimate (its
    /// `distance`): the estimate's error bound.
    fn estimate_error(&self, candidate: &Candidate<Self::Id, Self::Meta>) -> f64;

    /// The exact distance from `query` to each of `candidates`, into `out` (cleared first,
    /// then one entry per candidate in order; `None` where the element's vector is gone).
    fn exact_distances(
        &mut self,
        query: &Self::Value,
        candidates: &[Candidate<Self::Id, Self::Meta>],
        out: &mut Vec<Option<f64>>,
    );
}

/// What reranks did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RerankStats {
    /// Candidates whose exact distance was computed.
    pub reranked: u64,
    /// Batches asked of the store.
    pub batches: u64,
}

/// A candidate waiting for its rerank, with its lower bound.
struct Waiting<Id, Meta> {
    lower: f64,
    candidate: Candidate<Id, Meta>,
}

/// A reranked candidate with its place in the order of reranks (ties go to the earlier).
struct Reranked<Id, Meta> {
    seq: u64,
    candidate: Candidate<Id, Meta>,
}

/// A [`Scan`] whose candidates are reranked by exact distance before they are returned.
pub struct RerankedScan<S: GraphStore> {
    inner: Scan<S>,
    /// Candidates reranked at a time (0: `ef_search`).
    breadth: usize,
    /// The user's order mode; the inner scan runs relaxed.
    mode: IterativeScan,
    /// Candidates of the current search not reranked yet, largest lower bound first.
    waiting: Vec<Waiting<S::Id, S::Meta>>,
    /// Reranked candidates not returned yet, with the order they were reranked in: furthest
    /// first, and among equal distances the one reranked first last (exact distances).
    ready: Vec<Reranked<S::Id, S::Meta>>,
    batch: Vec<Candidate<S::Id, S::Meta>>,
    exact: Vec<Option<f64>>,
    previous: f64,
    stats: RerankStats,
}

/// The inner scan's settings: relaxed where the user asked for strict (see the module comment).
fn inner_params(params: ScanParams) -> ScanParams {
    let mode = match params.mode {
        IterativeScan::Strict => IterativeScan::Relaxed,
        mode => mode,
    };
    ScanParams { mode, ..params }
}

impl<S: RerankStore> RerankedScan<S> {
    /// Reranks `inner`'s candidates, `breadth` at a time (0: `ef_search` at a time).
    pub fn new(mut inner: Scan<S>, breadth: usize) -> Self {
        let params = inner.params();
        inner.set_params(inner_params(params));
        RerankedScan {
            inner,
            breadth,
            mode: params.mode,
            waiting: Vec::new(),
            ready: Vec::new(),
            batch: Vec::new(),
            exact: Vec::new(),
            previous: f64::NEG_INFINITY,
            stats: RerankStats::default(),
        }
    }

    /// The inner scan (its counters, memory and errors).
    pub fn inner(&self) -> &Scan<S> {
        &self.inner
    }

    /// Replaces the settings for the rest of the scan (see [`Scan::set_params`]).
    pub fn set_params(&mut self, params: ScanParams, breadth: usize) {
        self.inner.set_params(inner_params(params));
        self.mode = params.mode;
        self.breadth = breadth;
    }

    /// Search counters of the inner scan.
    pub fn stats(&self) -> SearchStats {
        self.inner.stats()
    }

    /// Rerank counters.
    pub fn rerank_stats(&self) -> RerankStats {
        self.stats
    }

    /// The rows the scan has reranked and not returned yet, nearest first.
    pub fn upcoming(&self) -> impl Iterator<Item = &Candidate<S::Id, S::Meta>> + '_ {
        self.ready.iter().rev().map(|r| &r.candidate)
    }

    /// The next element, with its exact distance; `None` when the scan is over.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        loop {
            let bound = self.waiting.last().map_or(f64::INFINITY, |w| w.lower);
            let nearest = self.ready.last().map(|r| r.candidate.distance);
            if nearest.is_some_and(|d| d <= bound) {
                let candidate = self.ready.pop().expect("checked").candidate;
                if self.mode == IterativeScan::Strict {
                    if candidate.distance < self.previous {
                        continue;
                    }
                    self.previous = candidate.distance;
                }
                return Some(candidate);
            }
            if !self.waiting.is_empty() {
                self.rerank_batch(store);
            } else if !self.next_search(store) {
                return None;
            }
        }
    }

    /// Takes the candidates of the inner scan's next search; false when there are none.
    fn next_search(&mut self, store: &mut S) -> bool {
        let found = self.inner.take_results(store);
        if found.is_empty() {
            return false;
        }
        self.waiting
            .extend(found.into_iter().map(|candidate| Waiting {
                lower: candidate.distance - store.estimate_error(&candidate),
                candidate,
            }));
        // Largest lower bound first (the next to rerank at the end); ties keep the walk's order.
        self.waiting.reverse();
        self.waiting.sort_by(|a, b| b.lower.total_cmp(&a.lower));
        true
    }

    /// Reranks the waiting candidates of smallest lower bound, a batch of `breadth`.
    fn rerank_batch(&mut self, store: &mut S) {
        let breadth = match self.breadth {
            0 => self.inner.params().ef_search,
            b => b,
        }
        .max(1);
        self.batch.clear();
        while self.batch.len() < breadth {
            match self.waiting.pop() {
                Some(w) => self.batch.push(w.candidate),
                None => break,
            }
        }
        store.exact_distances(self.inner.query(), &self.batch, &mut self.exact);
        debug_assert_eq!(self.exact.len(), self.batch.len());
        self.stats.batches += 1;
        for (mut candidate, exact) in self.batch.drain(..).zip(&self.exact) {
            if let Some(distance) = exact {
                candidate.distance = *distance;
                let seq = self.stats.reranked;
                self.stats.reranked += 1;
                self.ready.push(Reranked { seq, candidate });
            }
        }
        self.ready.sort_by(|a, b| {
            let (x, y) = (&a.candidate, &b.candidate);
            y.distance.total_cmp(&x.distance).then(b.seq.cmp(&a.seq))
        });
    }
}
