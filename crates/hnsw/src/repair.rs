//! Vacuum: removing elements whose heap TIDs are all dead, pgvector style.
//!
//! 1. Heap-TID pass: every element drops its dead heap TIDs. Elements left
//!    without any are collected as "deleting". Among the live ones, the first
//!    element of the highest level (in physical order) becomes the highest
//!    point, and the runner-up the fallback point.
//! 2. Repair pass. First the entry point's neighborhood: the highest point
//!    (or the fallback, if the highest point is the entry point) is repaired
//!    if needed, using the current entry point. Then, under the exclusive
//!    lock, an entry point that is being deleted is replaced by the highest
//!    point (or cleared if there is none); otherwise the entry point is
//!    repaired if needed, searching from the highest point.
//!    Then every live element that needs it is repaired, in physical order:
//!    an element needs repair when any of its neighbor slots refers to a
//!    deleting element or its last layer-0 slot is empty. Repair re-runs the
//!    neighbor search for the element itself (excluding it and counting only
//!    live elements towards `ef_construction + 1`), overwrites all its lists
//!    (layers above the entry point's level end up empty), and adds
//!    back-links, skipping neighbors that already link to it. An element
//!    above the entry point's level becomes the new entry point.
//! 3. Confirm that no live element still refers to a deleting one, then mark
//!    the deleting elements deleted so their space can be reused.
//!
//! [`RepairMode::Local`] replaces the per-element search of step 2 (the bulk
//! of a vacuum's work: at 10% deleted nearly every element links to a
//! deleting one) with a re-selection among the candidates at hand: on each
//! layer that names a deleting element, the element's other neighbors and the
//! deleting neighbors' own neighbors. Layers without a deleting neighbor are
//! kept as they are. The entry point's repairs, elements above the entry
//! point's level, elements repaired only for an unfilled layer 0, and layers
//! left with no candidate still search, as in pgvector.

use crate::id_set::IdSet;
use crate::insert::{
    find_element_neighbors, layer_ids, update_neighbors, GraphParams, LayerNeighbors, LinkBack,
    NeighborTarget,
};
use crate::search::SearchStats;
use crate::select::select_neighbors;
use crate::storage::{Candidate, ElementHeader, EntryPoint, EntryUpdate, GraphLock};

/// Whole-index passes needed by vacuum. Elements are always visited in the
/// store's physical order, one batch (e.g. one page) per call.
pub trait VacuumStore: LinkBack {
    /// Position of a pass over all elements.
    type Cursor: Default;

    /// Pass 1: for the next batch of elements not yet marked deleted, drop
    /// every dead heap TID and append one header per element. Returns false
    /// once the whole index has been visited (the last batch may be empty).
    fn prune_heap_tids(
        &mut self,
        cursor: &mut Self::Cursor,
        out: &mut Vec<ElementHeader<Self::Id>>,
    ) -> bool;

    /// Appends the next batch of elements not marked deleted (live or not) as
    /// candidates with distance 0. Returns false once exhausted.
    fn scan_elements(
        &mut self,
        cursor: &mut Self::Cursor,
        out: &mut Vec<Candidate<Self::Id, Self::Meta>>,
    ) -> bool;

    /// Loads one element without a query (distance 0).
    fn load_element(&mut self, id: Self::Id) -> Candidate<Self::Id, Self::Meta>;

    /// Appends every neighbor slot of `element`, all layers, in stored order
    /// (top layer first, layer 0 last, each padded to its capacity with
    /// `None`).
    fn neighbor_slots(
        &mut self,
        element: &Candidate<Self::Id, Self::Meta>,
        out: &mut Vec<Option<Self::Id>>,
    );

    /// Final pass: mark these elements (no heap TIDs, no longer referenced)
    /// deleted so their space can be reused; clears their neighbor lists.
    fn mark_deleted(&mut self, ids: &[Self::Id]);
}

/// What a vacuum run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VacuumReport {
    /// Elements marked deleted.
    pub deleted: usize,
    /// Elements whose neighbor lists were rebuilt.
    pub repaired: usize,
    /// Whether the entry point was replaced because it was deleted.
    pub entry_point_replaced: bool,
    /// Search work done by the repairs.
    pub stats: SearchStats,
}

/// How vacuum rebuilds the lists of a live element that links to a deleting one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RepairMode {
    /// pgvector's: a new neighbor search for the element from the entry point.
    #[default]
    Search,
    /// Re-select among the element's live neighbors and its deleting neighbors' neighbors.
    Local,
}

/// A live element still refers to an element about to be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotRepaired<Id> {
    /// The live element.
    pub element: Id,
    /// The deleting element it refers to.
    pub neighbor: Id,
}

impl<Id: std::fmt::Debug> std::fmt::Display for NotRepaired<Id> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "hnsw graph not repaired: {:?} still links to {:?}",
            self.element, self.neighbor
        )
    }
}

impl<Id: std::fmt::Debug> std::error::Error for NotRepaired<Id> {}

/// Highest and second-highest live elements seen by the heap-TID pass.
#[derive(Clone, Copy, Debug)]
struct Peaks<Id> {
    highest: Option<EntryPoint<Id>>,
    fallback: Option<EntryPoint<Id>>,
}

impl<Id: Copy> Peaks<Id> {
    fn observe(&mut self, header: &ElementHeader<Id>) {
        let point = EntryPoint {
            id: header.id,
            level: header.level,
        };
        let level = i32::from(header.level);
        let level_of = |p: Option<EntryPoint<Id>>| p.map_or(-1, |p| i32::from(p.level));
        if level > level_of(self.highest) {
            if self.highest.is_some() {
                self.fallback = self.highest;
            }
            self.highest = Some(point);
        } else if level > level_of(self.fallback) {
            self.fallback = Some(point);
        }
    }
}

/// Re-selects the neighbors of one live element searching from `entry`
/// and adds back-links to it. Does nothing if it is the entry point.
pub fn repair_element<S: VacuumStore>(
    store: &mut S,
    element: &Candidate<S::Id, S::Meta>,
    entry: Option<EntryPoint<S::Id>>,
    params: &GraphParams,
) -> SearchStats {
    if entry.is_some_and(|e| e.id == element.id) {
        return SearchStats::default();
    }
    let value = store.value(element);
    let target = NeighborTarget {
        level: element.level,
        entry,
        existing: Some(element.id),
    };
    let (layers, stats) = find_element_neighbors(store, &value, &target, params);
    store.write_neighbors(element, &layer_ids(&layers));
    update_neighbors(store, element, &layers, params, true);
    stats
}

struct Vacuum<'s, S: VacuumStore> {
    store: &'s mut S,
    params: GraphParams,
    mode: RepairMode,
    deleting: IdSet<S::Id>,
    deleting_order: Vec<S::Id>,
    peaks: Peaks<S::Id>,
    slots: Vec<Option<S::Id>>,
    report: VacuumReport,
}

/// Runs all vacuum passes with pgvector's repair. The store's heap-TID pass
/// decides which heap TIDs are dead.
pub fn vacuum<S: VacuumStore>(
    store: &mut S,
    params: &GraphParams,
) -> Result<VacuumReport, NotRepaired<S::Id>> {
    vacuum_with(store, params, RepairMode::Search)
}

/// Runs all vacuum passes, repairing elements as `mode` says.
pub fn vacuum_with<S: VacuumStore>(
    store: &mut S,
    params: &GraphParams,
    mode: RepairMode,
) -> Result<VacuumReport, NotRepaired<S::Id>> {
    let mut run = Vacuum {
        store,
        params: *params,
        mode,
        deleting: IdSet::default(),
        deleting_order: Vec::new(),
        peaks: Peaks {
            highest: None,
            fallback: None,
        },
        slots: Vec::new(),
        report: VacuumReport::default(),
    };
    run.remove_heap_tids();
    run.repair_graph();
    run.mark_deleted()?;
    Ok(run.report)
}

impl<S: VacuumStore> Vacuum<'_, S> {
    fn remove_heap_tids(&mut self) {
        let mut cursor = S::Cursor::default();
        let mut batch = Vec::new();
        loop {
            batch.clear();
            let more = self.store.prune_heap_tids(&mut cursor, &mut batch);
            for header in &batch {
                if header.live {
                    self.peaks.observe(header);
                } else if self.deleting.insert(header.id) {
                    self.deleting_order.push(header.id);
                }
            }
            if !more {
                break;
            }
        }
    }

    /// The first slot referring to a deleting element, if any.
    fn deleting_neighbor(&mut self, element: &Candidate<S::Id, S::Meta>) -> Option<S::Id> {
        self.slots.clear();
        self.store.neighbor_slots(element, &mut self.slots);
        self.slots
            .iter()
            .flatten()
            .copied()
            .find(|id| self.deleting.contains(id))
    }

    fn needs_update(&mut self, element: &Candidate<S::Id, S::Meta>) -> bool {
        if self.deleting_neighbor(element).is_some() {
            return true;
        }
        // An unfilled layer 0 (its last slot empty) is also worth a repair.
        matches!(self.slots.last(), Some(None))
    }

    fn repair(&mut self, element: &Candidate<S::Id, S::Meta>, entry: Option<EntryPoint<S::Id>>) {
        if entry.is_some_and(|e| e.id == element.id) {
            return;
        }
        let stats = repair_element(self.store, element, entry, &self.params);
        self.report.stats.add(&stats);
        self.report.repaired += 1;
    }

    fn repair_graph(&mut self) {
        // Wait for in-flight inserts.
        self.store.lock(GraphLock::UpdateExclusive);
        self.store.unlock(GraphLock::UpdateExclusive);

        self.repair_entry_point();

        let mut cursor = S::Cursor::default();
        let mut batch = Vec::new();
        loop {
            batch.clear();
            let more = self.store.scan_elements(&mut cursor, &mut batch);
            for element in batch.iter().filter(|e| e.live) {
                if self.needs_update(element) {
                    self.repair_with_locks(element);
                }
            }
            if !more {
                break;
            }
        }
    }

    fn repair_with_locks(&mut self, element: &Candidate<S::Id, S::Meta>) {
        let mut lock = GraphLock::UpdateShare;
        self.store.lock(lock);
        let mut entry = self.store.entry_point();
        let above =
            |entry: Option<EntryPoint<S::Id>>| entry.is_none_or(|e| element.level > e.level);
        if above(entry) {
            self.store.unlock(lock);
            lock = GraphLock::UpdateExclusive;
            self.store.lock(lock);
            entry = self.store.entry_point();
        }
        let local =
            self.mode == RepairMode::Local && !above(entry) && self.repair_locally(element, entry);
        if !local {
            self.repair(element, entry);
        }
        if above(entry) {
            let point = EntryPoint {
                id: element.id,
                level: element.level,
            };
            self.store
                .set_entry_point(Some(point), EntryUpdate::IfHigher);
        }
        self.store.unlock(lock);
    }

    /// [`RepairMode::Local`]'s repair of one element; false when it must search instead
    /// (it is the entry point, no list names a deleting element, or a layer would be left
    /// without neighbors).
    fn repair_locally(
        &mut self,
        element: &Candidate<S::Id, S::Meta>,
        entry: Option<EntryPoint<S::Id>>,
    ) -> bool {
        if entry.is_some_and(|e| e.id == element.id) {
            return false;
        }
        let value = self.store.value(element);
        let mut lists: Vec<Vec<S::Id>> = Vec::with_capacity(element.level as usize + 1);
        let mut changed: LayerNeighbors<S::Id, S::Meta> = Vec::with_capacity(lists.capacity());
        let mut stats = SearchStats::default();
        let mut ids = Vec::new();
        let mut rebuilt = false;
        for layer in 0..=element.level {
            let mut current = Vec::new();
            self.store.neighbors(element, layer, &mut current);
            let dead: Vec<S::Id> = current
                .iter()
                .copied()
                .filter(|id| self.deleting.contains(id))
                .collect();
            if dead.is_empty() {
                lists.push(current);
                changed.push(Vec::new());
                continue;
            }
            rebuilt = true;
            // Candidates in first-seen order: the kept neighbors, then each deleting
            // neighbor's list in slot order.
            let mut seen = IdSet::default();
            let mut pool: Vec<S::Id> = Vec::new();
            seen.insert(element.id);
            for id in current.iter().filter(|id| !self.deleting.contains(id)) {
                if seen.insert(*id) {
                    pool.push(*id);
                }
            }
            for &gone in &dead {
                let gone = self.store.load_element(gone);
                ids.clear();
                self.store.neighbors(&gone, layer, &mut ids);
                stats.hops += 1;
                for id in &ids {
                    if !self.deleting.contains(id) && seen.insert(*id) {
                        pool.push(*id);
                    }
                }
            }
            let mut candidates = Vec::with_capacity(pool.len());
            self.store.load(&value, &pool, &mut candidates);
            stats.load_batches += 1;
            stats.distances += candidates.len() as u64;
            stats.visited += pool.len() as u64;
            candidates.retain(|c| c.live);
            if candidates.is_empty() {
                return false;
            }
            let lm = self.params.layer_capacity(layer);
            let selected = select_neighbors(self.store, candidates, lm, true).neighbors;
            lists.push(selected.iter().map(|c| c.id).collect());
            changed.push(selected);
        }
        if !rebuilt {
            return false;
        }
        self.store.write_neighbors(element, &lists);
        update_neighbors(self.store, element, &changed, &self.params, true);
        self.report.stats.add(&stats);
        self.report.repaired += 1;
        true
    }

    fn repair_entry_point(&mut self) {
        let mut highest = self.peaks.highest;
        if let Some(point) = highest {
            self.store.lock(GraphLock::UpdateShare);
            let entry = self.store.entry_point();
            if entry.is_some_and(|e| e.id == point.id) {
                highest = self.peaks.fallback;
            }
            if let Some(point) = highest {
                let element = self.store.load_element(point.id);
                if self.needs_update(&element) {
                    self.repair(&element, entry);
                }
            }
            self.store.unlock(GraphLock::UpdateShare);
        }

        self.store.lock(GraphLock::UpdateExclusive);
        if let Some(entry) = self.store.entry_point() {
            if self.deleting.contains(&entry.id) {
                self.store.set_entry_point(highest, EntryUpdate::Always);
                self.report.entry_point_replaced = true;
            } else {
                let element = self.store.load_element(entry.id);
                if self.needs_update(&element) {
                    self.repair(&element, highest);
                }
            }
        }
        self.store.unlock(GraphLock::UpdateExclusive);
    }

    fn confirm_repaired(&mut self) -> Result<(), NotRepaired<S::Id>> {
        let mut cursor = S::Cursor::default();
        let mut batch = Vec::new();
        loop {
            batch.clear();
            let more = self.store.scan_elements(&mut cursor, &mut batch);
            for element in batch.iter().filter(|e| e.live) {
                if let Some(neighbor) = self.deleting_neighbor(element) {
                    return Err(NotRepaired {
                        element: element.id,
                        neighbor,
                    });
                }
            }
            if !more {
                return Ok(());
            }
        }
    }

    fn mark_deleted(&mut self) -> Result<(), NotRepaired<S::Id>> {
        // Wait for inserts that may still see deleting elements.
        self.store.lock(GraphLock::UpdateExclusive);
        self.store.unlock(GraphLock::UpdateExclusive);
        self.confirm_repaired()?;
        // Wait for scans that may still see deleting elements.
        self.store.lock(GraphLock::ScanExclusive);
        self.store.unlock(GraphLock::ScanExclusive);
        self.store.mark_deleted(&self.deleting_order);
        self.report.deleted = self.deleting_order.len();
        Ok(())
    }
}
