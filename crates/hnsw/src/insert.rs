//! Insertion (HNSW paper, Algorithm 1) following pgvector's on-disk insert.
//!
//! 1. Under the shared update lock, read the entry point; if the new level
//!    is above it (or the graph is empty) switch to the exclusive lock and
//!    read the entry point again.
//! 2. Greedy descent (`ef = 1`) from the entry point's level down to just
//!    above the new level, then on each layer `min(level, entry level)..=0`
//!    a search with `ef_construction` starting from the previous layer's
//!    whole result list. Elements without heap TIDs (and, when repairing,
//!    the element itself) are removed from each result before selecting
//!    neighbors with the heuristic; layers above the entry level stay empty.
//! 3. If the first layer-0 neighbors hold exactly the same value, the heap
//!    TID is attached to one of them instead (stopping at the first neighbor
//!    whose value differs; with estimated distances, where an equal value need
//!    not come first, every layer-0 neighbor is looked at).
//! 4. Store the element, then add back-links: for every selected neighbor,
//!    re-read its list on that layer; if it has a free slot use it; if one of
//!    its neighbors has no heap TIDs, replace that one; otherwise run the
//!    heuristic over its neighbors plus the new element and replace the one
//!    left out (nothing changes if that is the new element).
//! 5. Make the new element the entry point if its level is higher.

use crate::search::{descend, entry_candidate, search_layer, LayerQuery, SearchState, SearchStats};
use crate::select::select_neighbors;
use crate::storage::{
    Candidate, Duplicate, EntryPoint, EntryUpdate, GraphLock, GraphWrite, NewElement, Slot,
};

/// Index build parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphParams {
    /// Max connections per element on layers above 0 (`2 * m` on layer 0).
    pub m: usize,
    /// Queue size of the searches run while inserting.
    pub ef_construction: usize,
}

impl GraphParams {
    /// Neighbor list capacity of `layer`.
    pub fn layer_capacity(&self, layer: u8) -> usize {
        if layer == 0 {
            self.m * 2
        } else {
            self.m
        }
    }
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: 16,
            ef_construction: 64,
        }
    }
}

/// What [`insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome<Id> {
    /// A new element was stored with this id.
    Added(Id),
    /// The heap TID was attached to this existing element with equal value.
    Duplicate(Id),
}

/// Which element the neighbors are searched for.
#[derive(Clone, Copy, Debug)]
pub struct NeighborTarget<Id> {
    /// Level of the element.
    pub level: u8,
    /// Entry point to start from (`None`: no neighbors).
    pub entry: Option<EntryPoint<Id>>,
    /// Set when re-selecting the neighbors of this existing element: it is
    /// excluded from its own lists, only live elements count towards `ef`
    /// and `ef` grows by one.
    pub existing: Option<Id>,
}

/// Per-layer neighbor lists (`index = layer`) chosen for an element.
pub type LayerNeighbors<Id, Meta> = Vec<Vec<Candidate<Id, Meta>>>;

/// Searches and selects the neighbors of an element with value `query`.
/// Returns one list per layer `0..=target.level` (empty above the entry
/// point's level) and the work done.
pub fn find_element_neighbors<S: GraphWrite>(
    store: &mut S,
    query: &S::Value,
    target: &NeighborTarget<S::Id>,
    params: &GraphParams,
) -> (LayerNeighbors<S::Id, S::Meta>, SearchStats) {
    let mut layers: LayerNeighbors<S::Id, S::Meta> = vec![Vec::new(); target.level as usize + 1];
    let mut state = SearchState::new();
    let Some(entry) = target.entry else {
        return (layers, state.stats);
    };
    let count_live_only = target.existing.is_some();
    let start = entry_candidate(store, &mut state, query, entry);
    let entry_level = state.get(start).level;
    // pgvector's greedy descent: a wider one (16 on 1M clustered rows) built no better graph.
    let mut entries = descend(
        store,
        &mut state,
        query,
        vec![start],
        (entry_level, target.level),
        (1, 1),
        count_live_only,
    );

    let ef = params.ef_construction + usize::from(target.existing.is_some());
    let top = target.level.min(entry_level);
    for layer in (0..=top).rev() {
        let q = LayerQuery {
            query,
            ef,
            layer,
            count_live_only,
            discard: false,
            beam: 1,
        };
        let found = search_layer(store, &mut state, &q, &entries, true);
        // ef_construction bounds these structures (a few MB): a failure is not worth an error
        // path of its own, but it must not pass for a complete search.
        if let Some(bytes) = state.out_of_memory {
            panic!("out of memory: a request of {bytes} bytes for an hnsw insert failed");
        }
        let usable: Vec<_> = found
            .iter()
            .map(|&i| state.get(i))
            .filter(|c| c.live && Some(c.id) != target.existing)
            .cloned()
            .collect();
        let lm = params.layer_capacity(layer);
        layers[layer as usize] = select_neighbors(store, usable, lm, false).neighbors;
        entries = found;
    }
    (layers, state.stats)
}

/// How a store adds the back-link from a selected neighbor to a new element (step 4). The
/// default suits every store; one that keeps the distances of its lists can do it without
/// re-reading them.
pub trait LinkBack: GraphWrite + Sized {
    /// Adds a back-link from `neighbor` to `new` on `layer`, whose capacity
    /// is `lm`; `new.distance` is the distance between the two. The default
    /// re-reads the neighbor's list with the distances of its members, picks
    /// the slot ([`back_link_slot`]) and writes it with
    /// [`GraphWrite::set_neighbor`]. A store that keeps the distances of its
    /// lists can instead use [`crate::connect::update_connection`].
    fn link_back(
        &mut self,
        neighbor: &Candidate<Self::Id, Self::Meta>,
        layer: u8,
        new: &Candidate<Self::Id, Self::Meta>,
        lm: usize,
        check_existing: bool,
    ) {
        if let Some(slot) = back_link_slot(self, neighbor, new.clone(), layer, lm, check_existing) {
            self.set_neighbor(neighbor, layer, new.id, slot, check_existing);
        }
    }
}

/// Which slot of `neighbor`'s list on `layer` should point to `new`, if any.
/// `new.distance` must be the distance between the two. With `check_existing`,
/// a list that already names `new` needs none (the write would skip it too), so
/// the list's distances are not computed.
pub fn back_link_slot<S: GraphWrite>(
    store: &mut S,
    neighbor: &Candidate<S::Id, S::Meta>,
    new: Candidate<S::Id, S::Meta>,
    layer: u8,
    lm: usize,
    check_existing: bool,
) -> Option<Slot> {
    let mut ids = Vec::with_capacity(lm);
    store.neighbors(neighbor, layer, &mut ids);
    if check_existing && ids.contains(&new.id) {
        return None;
    }
    if ids.len() < lm {
        return Some(Slot::FirstFree);
    }
    let value = store.value(neighbor);
    let mut current = Vec::with_capacity(ids.len() + 1);
    store.load(&value, &ids, &mut current);
    // A neighbor being deleted is replaced first.
    if let Some(dying) = current.iter().position(|c| !c.live) {
        return Some(Slot::At(dying));
    }
    let new_id = new.id;
    current.push(new);
    let pruned = select_neighbors(store, current, lm, true).pruned?;
    if pruned.id == new_id {
        return None;
    }
    ids.iter().position(|&id| id == pruned.id).map(Slot::At)
}

/// Adds back-links from the neighbors in `layers` to `new` (step 4). With
/// `check_existing`, neighbors that already link to `new` are left alone.
pub fn update_neighbors<S: LinkBack>(
    store: &mut S,
    new: &Candidate<S::Id, S::Meta>,
    layers: &[Vec<Candidate<S::Id, S::Meta>>],
    params: &GraphParams,
    check_existing: bool,
) {
    for layer in (0..layers.len()).rev() {
        let layer_u8 = layer as u8;
        let lm = params.layer_capacity(layer_u8);
        for neighbor in &layers[layer] {
            let mut link = new.clone();
            link.distance = neighbor.distance;
            store.link_back(neighbor, layer_u8, &link, lm, check_existing);
        }
    }
}

/// The ids of per-layer neighbor lists.
pub fn layer_ids<Id: Copy, Meta>(layers: &[Vec<Candidate<Id, Meta>>]) -> Vec<Vec<Id>> {
    layers
        .iter()
        .map(|layer| layer.iter().map(|c| c.id).collect())
        .collect()
}

fn needs_new_entry<Id>(entry: Option<EntryPoint<Id>>, level: u8) -> bool {
    entry.is_none_or(|e| level > e.level)
}

/// Inserts one value (steps 1–5). Returns what happened and the search work.
pub fn insert<S: LinkBack>(
    store: &mut S,
    element: NewElement<S::Value, S::HeapTid>,
    params: &GraphParams,
) -> (InsertOutcome<S::Id>, SearchStats) {
    let mut lock = GraphLock::UpdateShare;
    store.lock(lock);
    let mut entry = store.entry_point();
    if needs_new_entry(entry, element.level) {
        store.unlock(lock);
        lock = GraphLock::UpdateExclusive;
        store.lock(lock);
        entry = store.entry_point();
    }

    let target = NeighborTarget {
        level: element.level,
        entry,
        existing: None,
    };
    let (layers, stats) = find_element_neighbors(store, &element.value, &target, params);
    let outcome = update_graph(store, &element, &layers, entry, params);
    store.unlock(lock);
    (outcome, stats)
}

fn update_graph<S: LinkBack>(
    store: &mut S,
    element: &NewElement<S::Value, S::HeapTid>,
    layers: &[Vec<Candidate<S::Id, S::Meta>>],
    entry: Option<EntryPoint<S::Id>>,
    params: &GraphParams,
) -> InsertOutcome<S::Id> {
    let exact = store.distances_are_exact();
    for neighbor in &layers[0] {
        match store.try_add_duplicate(&element.value, element.heap_tid, neighbor) {
            Duplicate::NotEqual if exact => break,
            Duplicate::NotEqual => {}
            Duplicate::Added => return InsertOutcome::Duplicate(neighbor.id),
            Duplicate::NoRoom => {}
        }
    }

    let new = store.add_element(element, layers);
    update_neighbors(store, &new, layers, params, false);

    if needs_new_entry(entry, element.level) {
        let point = EntryPoint {
            id: new.id,
            level: element.level,
        };
        store.set_entry_point(Some(point), EntryUpdate::IfHigher);
    }
    InsertOutcome::Added(new.id)
}
