//! Neighbor selection: the HNSW paper's heuristic (Algorithm 4) as pgvector
//! applies it.
//!
//! * If there are at most `lm` candidates, they are all kept, unchanged and
//!   in the given order (pgvector returns its input list as is).
//! * Otherwise the candidates are expected furthest first (the order a layer
//!   search returns them); with `sort`, they are first sorted that way by
//!   single-precision distance, ties broken by id. They are then taken
//!   nearest first: a candidate is accepted when it is strictly closer to the
//!   base element than to every neighbor accepted so far (all comparisons in
//!   single precision, as pgvector stores neighbor distances as `float`).
//! * `extendCandidates` is not used. `keepPrunedConnections` is: when fewer
//!   than `lm` were accepted, the rejected candidates fill the list, nearest
//!   first.
//! * The one candidate left out when selecting `lm` of `lm + 1` is reported
//!   as `pruned`; inserts use it to decide which back-link to replace.

use std::cmp::Ordering;

use crate::storage::{Candidate, GraphWrite};

/// Result of [`select_neighbors`].
#[derive(Clone, Debug)]
pub struct Selection<Id, Meta> {
    /// Selected neighbors in stored order: accepted by the heuristic first
    /// (nearest first), then rejected ones used to fill up (nearest first).
    pub neighbors: Vec<Candidate<Id, Meta>>,
    /// How many leading entries of `neighbors` the heuristic accepted.
    pub accepted: usize,
    /// First candidate not selected, if any: the next rejected one that did
    /// not fit, or else the furthest candidate never examined.
    pub pruned: Option<Candidate<Id, Meta>>,
}

/// Single-precision key as pgvector stores it; `-0.0` folded into `+0.0`.
fn key(distance: f64) -> f32 {
    distance as f32 + 0.0
}

/// Orders furthest first, ties by larger id first (so popping from the end
/// yields nearest first, smaller id first).
fn furthest_first<Id: Ord, Meta>(a: &Candidate<Id, Meta>, b: &Candidate<Id, Meta>) -> Ordering {
    key(b.distance)
        .total_cmp(&key(a.distance))
        .then_with(|| b.id.cmp(&a.id))
}

/// True when `e` is strictly closer to the base than to every element of
/// `selected`. `refs[i]` is where the value of `selected[i]` is, once looked
/// up; values are looked up only when first compared.
fn closer_than_selected<S: GraphWrite>(
    store: &mut S,
    e: &Candidate<S::Id, S::Meta>,
    selected: &[Candidate<S::Id, S::Meta>],
    refs: &mut [Option<S::ValueRef>],
) -> (bool, Option<S::ValueRef>) {
    if selected.is_empty() {
        return (true, None);
    }
    let own = key(e.distance);
    let at = store.value_ref(e);
    // pgvector rejects when `between <= own`; anything else (greater, or
    // NaN on either side) keeps the candidate.
    let closer = selected.iter().zip(refs.iter_mut()).all(|(r, r_at)| {
        let r_at = *r_at.get_or_insert_with(|| store.value_ref(r));
        let between = key(store.ref_distance(at, r_at));
        matches!(between.partial_cmp(&own), Some(Ordering::Greater) | None)
    });
    (closer, Some(at))
}

/// Selects up to `lm` neighbors from `candidates` (furthest first unless
/// `sort` is set).
pub fn select_neighbors<S: GraphWrite>(
    store: &mut S,
    candidates: Vec<Candidate<S::Id, S::Meta>>,
    lm: usize,
    sort: bool,
) -> Selection<S::Id, S::Meta> {
    let mut pending = candidates;
    if pending.len() <= lm {
        return Selection {
            accepted: pending.len(),
            neighbors: pending,
            pruned: None,
        };
    }
    if sort {
        pending.sort_by(furthest_first);
    }

    let mut selected = Vec::with_capacity(lm);
    let mut refs = Vec::with_capacity(lm);
    let mut rejected = Vec::new();
    while selected.len() < lm {
        let Some(e) = pending.pop() else { break };
        let (closer, at) = closer_than_selected(store, &e, &selected, &mut refs);
        if closer {
            selected.push(e);
            refs.push(at);
        } else {
            rejected.push(e);
        }
    }
    let accepted = selected.len();

    let mut rejected = rejected.into_iter();
    while selected.len() < lm {
        match rejected.next() {
            Some(e) => selected.push(e),
            None => break,
        }
    }
    let pruned = rejected
        .next()
        .or_else(|| (!pending.is_empty()).then(|| pending.swap_remove(0)));

    Selection {
        neighbors: selected,
        accepted,
        pruned,
    }
}
