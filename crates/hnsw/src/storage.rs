//! The storage contract the graph algorithms run against.
//!
//! The algorithms never touch vectors or pages directly. They ask the store
//! for three kinds of things:
//!
//! * reads used by every search ([`GraphStore`]): the entry point, the
//!   neighbor ids of an element on one layer, and — always as a batch — the
//!   distances from a query to a list of element ids. A search first gathers
//!   every unvisited neighbor of the candidate it expanded and only then calls
//!   [`GraphStore::load`], so a page-based store can issue prefetches for all
//!   blocks of the batch before it reads any of them. [`GraphStore::lookahead`]
//!   additionally shows the candidates the search will expand next, with its
//!   visited test;
//! * writes used by insert and repair ([`GraphWrite`]).
//!
//! The algorithms add what they need on top: how a store links back to a new element
//! ([`crate::insert::LinkBack`]) and the whole-index passes of vacuum
//! ([`crate::repair::VacuumStore`]).
//!
//! Each loaded element is returned as a [`Candidate`] that carries a
//! store-defined `Meta` value (for a page store: where the neighbor tuple
//! lives, the tuple version, the heap TIDs seen at load time). The algorithms
//! pass that candidate back whenever they ask about the element again.

use std::fmt::Debug;
use std::hash::Hash;

/// An element as loaded by the store, with its distance to the query of the
/// operation that loaded it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate<Id, Meta> {
    /// Element id (for Postgres: the index TID of the element tuple).
    pub id: Id,
    /// Distance to the query (0 when loaded without a query).
    pub distance: f64,
    /// Highest layer the element is linked on.
    pub level: u8,
    /// False when the element has no heap TIDs left (it is being deleted).
    /// Such elements are still traversed by searches but never returned by
    /// scans nor selected as neighbors.
    pub live: bool,
    /// Store-specific data captured when the element was loaded.
    pub meta: Meta,
}

/// A list of loaded elements.
pub type Candidates<Id, Meta> = Vec<Candidate<Id, Meta>>;

/// The graph's entry point as recorded in the metapage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint<Id> {
    /// Element id.
    pub id: Id,
    /// Level recorded with it.
    pub level: u8,
}

/// How [`GraphWrite::set_entry_point`] applies its argument (pgvector's
/// `HNSW_UPDATE_ENTRY_GREATER` / `HNSW_UPDATE_ENTRY_ALWAYS`).
///
/// In both modes `None` clears the entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryUpdate {
    /// Replace only when the new level is strictly higher than the stored
    /// level (or no entry point is stored).
    IfHigher,
    /// Replace unconditionally.
    Always,
}

/// Which neighbor slot [`GraphWrite::set_neighbor`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The first empty slot of the layer, re-checked under the store's lock;
    /// if the layer has become full meanwhile, nothing is written.
    FirstFree,
    /// Overwrite the slot at this position within the layer.
    At(usize),
}

/// Locks the algorithms take at the same points as pgvector (page locks on
/// block 0 and 1 there). Stores that need no locking ignore them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphLock {
    /// Shared update lock: held by inserts that do not change the entry point.
    UpdateShare,
    /// Exclusive update lock: inserts that may change the entry point, and
    /// vacuum waiting for in-flight inserts.
    UpdateExclusive,
    /// Shared scan lock: held while a scan reads the graph.
    ScanShare,
    /// Exclusive scan lock: vacuum waiting for in-flight scans.
    ScanExclusive,
}

/// Answer of [`GraphWrite::try_add_duplicate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicate {
    /// The existing element's value differs from the new one.
    NotEqual,
    /// The value is equal and the heap TID was attached to the element.
    Added,
    /// The value is equal but the heap TID could not be attached (the element
    /// is full or is being deleted).
    NoRoom,
}

/// Read access needed by searches and scans.
pub trait GraphStore {
    /// Element id. Also the key of the visited set.
    type Id: Copy + Eq + Hash + Ord + Debug;
    /// Per-element data captured by [`GraphStore::load`].
    type Meta: Clone + Debug;
    /// A query / element value.
    type Value;

    /// The entry point, if the graph is not empty.
    fn entry_point(&mut self) -> Option<EntryPoint<Self::Id>>;

    /// Appends the neighbor ids of `element` on `layer` to `out`, in stored
    /// order, stopping at the first empty slot. Appends nothing when the
    /// neighbor list can no longer be trusted (pgvector: tuple version or
    /// count mismatch after the element was deleted and replaced).
    fn neighbors(
        &mut self,
        element: &Candidate<Self::Id, Self::Meta>,
        layer: u8,
        out: &mut Vec<Self::Id>,
    );

    /// Loads every element of `ids` and appends one candidate per id, in the
    /// same order, with its distance to `query`. This is the batch boundary:
    /// a page store should start I/O for all of `ids` before reading any.
    fn load(
        &mut self,
        query: &Self::Value,
        ids: &[Self::Id],
        out: &mut Vec<Candidate<Self::Id, Self::Meta>>,
    );

    /// How many upcoming candidates [`GraphStore::lookahead`] wants to see
    /// now; 0 (the default) skips the call.
    fn lookahead_width(&self) -> usize {
        0
    }

    /// Look-ahead hint, given after a hop's batch is known and before it is
    /// loaded: up to [`GraphStore::lookahead_width`] candidates the search on
    /// `layer` is most likely to expand after this batch, nearest first (the
    /// first is the next expansion unless an element of the batch turns out
    /// nearer), and the search's visited test (the batch counts as visited),
    /// so that a store can start reading their unvisited neighbors while the
    /// batch is read. Must not change what the search reads. Default: ignored.
    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Candidate<Self::Id, Self::Meta>],
        visited: &dyn Fn(&Self::Id) -> bool,
    ) {
        let _ = (layer, upcoming, visited);
    }

    /// Acquire a lock. Default: no-op.
    fn lock(&mut self, lock: GraphLock) {
        let _ = lock;
    }

    /// Release a lock taken with [`GraphStore::lock`]. Default: no-op.
    fn unlock(&mut self, lock: GraphLock) {
        let _ = lock;
    }
}

/// A new element handed to [`crate::insert::insert`].
#[derive(Clone, Debug)]
pub struct NewElement<Value, HeapTid> {
    /// The (already normalized) value.
    pub value: Value,
    /// The heap TID it indexes.
    pub heap_tid: HeapTid,
    /// Its level, drawn by the caller (see [`crate::level`]).
    pub level: u8,
}

/// Writes needed by insert and repair.
pub trait GraphWrite: GraphStore {
    /// Heap TID type attached to elements.
    type HeapTid: Copy + Debug;

    /// The value of an element (used as the query when its own neighbor
    /// list is re-selected).
    fn value(&mut self, element: &Candidate<Self::Id, Self::Meta>) -> Self::Value;

    /// Where a loaded element's value is, for distances between elements: a neighbor
    /// selection looks each candidate up once and compares it with many others.
    type ValueRef: Copy;

    /// The value of a loaded element, as [`GraphWrite::ref_distance`] takes it.
    fn value_ref(&mut self, element: &Candidate<Self::Id, Self::Meta>) -> Self::ValueRef;

    /// Distance between two elements' values (neighbor selection).
    fn ref_distance(&self, a: Self::ValueRef, b: Self::ValueRef) -> f64;

    /// Distance between two loaded elements.
    fn pair_distance(
        &mut self,
        a: &Candidate<Self::Id, Self::Meta>,
        b: &Candidate<Self::Id, Self::Meta>,
    ) -> f64 {
        let (a, b) = (self.value_ref(a), self.value_ref(b));
        self.ref_distance(a, b)
    }

    /// Stores a new element with its neighbor lists (`neighbors[layer]`, one
    /// list per layer `0..=element.level`, each neighbor with its distance to
    /// the element) and returns it as a candidate (live, distance 0). May
    /// reuse the space of a deleted element.
    fn add_element(
        &mut self,
        element: &NewElement<Self::Value, Self::HeapTid>,
        neighbors: &[Vec<Candidate<Self::Id, Self::Meta>>],
    ) -> Candidate<Self::Id, Self::Meta>;

    /// Writes `new` into one neighbor slot of `element` on `layer`. With
    /// `check_existing`, does nothing when `new` is already in that layer's
    /// list. Must re-read the current list under the store's own lock.
    fn set_neighbor(
        &mut self,
        element: &Candidate<Self::Id, Self::Meta>,
        layer: u8,
        new: Self::Id,
        slot: Slot,
        check_existing: bool,
    );

    /// Overwrites all neighbor lists of `element` (`neighbors[layer]` for
    /// `0..=element.level`; missing or short layers are padded empty).
    fn write_neighbors(
        &mut self,
        element: &Candidate<Self::Id, Self::Meta>,
        neighbors: &[Vec<Self::Id>],
    );

    /// Updates the entry point (see [`EntryUpdate`]).
    fn set_entry_point(&mut self, entry: Option<EntryPoint<Self::Id>>, update: EntryUpdate);

    /// Whether [`GraphStore::load`]'s distances are exact. Then elements equal to a new value
    /// come first among its layer-0 neighbors, and the duplicate check stops at the first one
    /// that differs (pgvector's rule); with estimated distances every neighbor is checked.
    fn distances_are_exact(&self) -> bool {
        true
    }

    /// If `existing` holds exactly `value`, attach `heap_tid` to it instead of
    /// inserting a new element. Default: values are never equal.
    fn try_add_duplicate(
        &mut self,
        value: &Self::Value,
        heap_tid: Self::HeapTid,
        existing: &Candidate<Self::Id, Self::Meta>,
    ) -> Duplicate {
        let _ = (value, heap_tid, existing);
        Duplicate::NotEqual
    }
}

/// Summary of one element produced by the heap-TID pass of vacuum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementHeader<Id> {
    /// Element id.
    pub id: Id,
    /// Element level.
    pub level: u8,
    /// Whether any heap TID survived.
    pub live: bool,
}
