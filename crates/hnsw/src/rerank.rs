//! Exact rerank of a quantized graph's candidates.
//!
//! A quantized index walks its graph on estimated distances. [`RerankedScan`] takes the
//! candidates of a [`Scan`] in the order it returns them, a batch of `breadth` at a time, asks
//! the store for all of their exact distances in one call ([`RerankStore::exact_distances`],
//! where a page store requests every block of the batch before it reads any), and returns them
//! nearest first by exact distance. When a batch is used up the next one is taken: with
//! `hnsw.iterative_scan` the inner scan resumes its search as usual.
//!
//! Within a batch the order is exact; across batches it is the inner scan's (a later batch can
//! hold an element nearer than one already returned, as a relaxed iterative scan can). A strict
//! scan skips such elements, so what it returns never goes back in distance. Candidates whose
//! full vector the store cannot give (`None`) are dropped.

use crate::scan::{IterativeScan, Scan, ScanParams};
use crate::search::SearchStats;
use crate::storage::{Candidate, GraphStore};

/// A store that also holds the full vectors of a quantized graph.
pub trait RerankStore: GraphStore {
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

/// A [`Scan`] whose candidates are reranked by exact distance before they are returned.
pub struct RerankedScan<S: GraphStore> {
    inner: Scan<S>,
    breadth: usize,
    /// The current batch, reranked, furthest first (the next one is at the end).
    ready: Vec<Candidate<S::Id, S::Meta>>,
    batch: Vec<Candidate<S::Id, S::Meta>>,
    exact: Vec<Option<f64>>,
    previous: f64,
    stats: RerankStats,
}

impl<S: RerankStore> RerankedScan<S> {
    /// Reranks `inner`'s candidates `breadth` at a time (0: `ef_search` at a time).
    pub fn new(inner: Scan<S>, breadth: usize) -> Self {
        RerankedScan {
            inner,
            breadth,
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
        self.inner.set_params(params);
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

    /// The rows [`Self::next`] returns next without another rerank, nearest first.
    pub fn upcoming(&self) -> impl Iterator<Item = &Candidate<S::Id, S::Meta>> + '_ {
        self.ready.iter().rev()
    }

    /// The next element, with its exact distance; `None` when the scan is over.
    pub fn next(&mut self, store: &mut S) -> Option<Candidate<S::Id, S::Meta>> {
        loop {
            if let Some(candidate) = self.ready.pop() {
                if self.params().mode == IterativeScan::Strict {
                    if candidate.distance < self.previous {
                        continue;
                    }
                    self.previous = candidate.distance;
                }
                return Some(candidate);
            }
            if !self.rerank_next_batch(store) {
                return None;
            }
        }
    }

    fn params(&self) -> ScanParams {
        self.inner.params()
    }

    /// Takes the next batch from the inner scan and reranks it; false when there is none.
    fn rerank_next_batch(&mut self, store: &mut S) -> bool {
        let breadth = match self.breadth {
            0 => self.params().ef_search,
            b => b,
        }
        .max(1);
        self.batch.clear();
        while self.batch.len() < breadth {
            match self.inner.next(store) {
                Some(candidate) => self.batch.push(candidate),
                None => break,
            }
        }
        if self.batch.is_empty() {
            return false;
        }
        store.exact_distances(self.inner.query(), &self.batch, &mut self.exact);
        debug_assert_eq!(self.exact.len(), self.batch.len());
        self.stats.reranked += self.batch.len() as u64;
        self.stats.batches += 1;
        for (mut candidate, exact) in self.batch.drain(..).zip(&self.exact) {
            if let Some(distance) = exact {
                candidate.distance = *distance;
                self.ready.push(candidate);
            }
        }
        // Furthest first; equal distances keep the inner scan's order.
        self.ready.reverse();
        self.ready.sort_by(|a, b| b.distance.total_cmp(&a.distance));
        true
    }
}
