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

/// True when `e` is strictly closer to the base than to every selected
/// candidate (`selected` holds their places in `candidates`). `refs[i]` is
/// where the value of the `i`th selected one is, once looked up; values are
/// looked up only when first compared.
fn closer_than_selected<S: GraphWrite>(
    store: &mut S,
    e: &Candidate<S::Id, S::Meta>,
    candidates: &[Candidate<S::Id, S::Meta>],
    selected: &[u32],
    refs: &mut [Option<S::ValueRef>],
) -> (bool, Option<S::ValueRef>) {
    if selected.is_empty() {
        return (true, None);
    }
    let own = key(e.distance);
    let at = store.value_ref(e);
    // pgvector rejects when `between <= own`; anything else (greater, or
    // NaN on either side) keeps the candidate.
    let closer = selected.iter().zip(refs.iter_mut()).all(|(&r, r_at)| {
        let r_at = *r_at.get_or_insert_with(|| store.value_ref(&candidates[r as usize]));
        let between = key(store.ref_distance(at, r_at));
        matches!(between.partial_cmp(&own), Some(Ordering::Greater) | None)
    });
    (closer, Some(at))
}

/// Selects up to `lm` neighbors from `candidates` (furthest first unless
/// `sort` is set).
///
/// The candidates stay where they are while they are ordered and examined
/// (a loaded element is a hundred bytes or more): only their places move,
/// and only the ones returned are copied out.
pub fn select_neighbors<S: GraphWrite>(
    store: &mut S,
    candidates: Vec<Candidate<S::Id, S::Meta>>,
    lm: usize,
    sort: bool,
) -> Selection<S::Id, S::Meta> {
    if candidates.len() <= lm {
        return Selection {
            accepted: candidates.len(),
            neighbors: candidates,
            pruned: None,
        };
    }
    let count = u32::try_from(candidates.len()).expect("fewer than 2^32 candidates");
    // Places furthest first, taken from the end. The order is total (ties by
    // id), so an unstable sort gives the stable sort's order.
    let mut order: Vec<u32> = (0..count).collect();
    if sort {
        order.sort_unstable_by(|&a, &b| {
            furthest_first(&candidates[a as usize], &candidates[b as usize])
        });
    }

    let mut selected: Vec<u32> = Vec::with_capacity(lm);
    let mut refs = Vec::with_capacity(lm);
    let mut rejected: Vec<u32> = Vec::new();
    // order[..unexamined] are the candidates not examined yet.
    let mut unexamined = order.len();
    while selected.len() < lm && unexamined > 0 {
        unexamined -= 1;
        let e = order[unexamined];
        let (closer, at) = closer_than_selected(
            store,
            &candidates[e as usize],
            &candidates,
            &selected,
            &mut refs,
        );
        if closer {
            selected.push(e);
            refs.push(at);
        } else {
            rejected.push(e);
        }
    }
    let accepted = selected.len();

    let mut rejected = rejected.into_iter();
    let fill = lm - selected.len();
    selected.extend(rejected.by_ref().take(fill));
    let pruned = rejected
        .next()
        .or_else(|| (unexamined > 0).then(|| order[0]));

    Selection {
        neighbors: selected
            .iter()
            .map(|&i| candidates[i as usize].clone())
            .collect(),
        accepted,
        pruned: pruned.map(|i| candidates[i as usize].clone()),
    }
}
