//! `aminsert`: adding one heap tuple to an existing index, as pgvector 0.8.6 does.
//!
//! The value is detoasted, checked and (for cosine operator classes) normalized; rows whose
//! value is NULL or cannot be normalized are not indexed. The element gets a random level
//! (`floor(-ln(U) / ln(m))`, capped so its neighbor tuple fits on a page) and is inserted with
//! [`vector_hnsw::insert()`] over the pages: under the shared update lock (exclusive when it may
//! become the entry point), neighbors are searched with `ef_construction`, the element is stored
//! (or its heap TID joins an element with the same value) and back-links are added, each change
//! one GenericXLog record. Several heap TIDs per element keep non-HOT updates of a row cheap.
//!
//! In a quantized index the full vector first goes into a vector slot
//! (`store_vector`) and the element is stored as its code record, which says where that slot
//! is. When the row joins an element with the same vector instead, the slot is freed again.

use crate::am::hnsw::options;
use crate::opclass::Value;
use crate::storage::{item_pointer_from, Fork, ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::page_graph::{AnyPageGraph, IndexCompare, PageGraph};
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use crate::stores::hnsw::vector_pages::free_vectors;
use pgrx::{pg_guard, pg_sys};
use vector_hnsw::storage::NewElement;
use vector_hnsw::{GraphParams, InsertOutcome};

/// Where new elements' levels come from.
pub enum Levels {
    /// The backend's generator, as pgvector draws them.
    Backend,
    /// A generator of its own, seeded from one draw of the session's `random()`: after
    /// `setseed()`, a serial build draws the same levels and so builds the same graph.
    Session(pg_sys::pg_prng_state),
}

impl Levels {
    pub fn seeded_by_session_random() -> Levels {
        // SAFETY: drandom takes no arguments and returns a float8 by value.
        let draw = unsafe { pgrx::direct_function_call::<f64>(pg_sys::drandom, &[]) };
        let mut state = pg_sys::pg_prng_state { s0: 0, s1: 0 };
        // SAFETY: seeds the local state only.
        unsafe { pg_sys::pg_prng_seed(&mut state, draw.unwrap_or(0.0).to_bits()) };
        Levels::Session(state)
    }

    /// 64 random bits from the same generator (a quantized build's rotation seed).
    pub fn draw_seed(&mut self) -> u64 {
        let mut bits = || match self {
            // SAFETY: as in `draw`.
            Levels::Backend => unsafe {
                pg_sys::pg_prng_uint64(&raw mut pg_sys::pg_global_prng_state)
            },
            // SAFETY: a generator state of our own.
            Levels::Session(state) => unsafe { pg_sys::pg_prng_uint64(state) },
        };
        bits()
    }

    /// The next level for `m`.
    pub fn draw(&mut self, m: usize) -> u8 {
        let mut uniform = || match self {
            // SAFETY: pg_global_prng_state is the backend's generator, only used from this
            // thread.
            Levels::Backend => unsafe {
                pg_sys::pg_prng_double(&raw mut pg_sys::pg_global_prng_state)
            },
            // SAFETY: a generator state of our own.
            Levels::Session(state) => unsafe { pg_sys::pg_prng_double(state) },
        };
        vector_hnsw::level::draw_level(&mut uniform, m)
    }
}

/// Inserts a value of the column's type (already formed) at `level` into the pages; in a
/// quantized index, after storing its full vector.
pub fn insert_on_disk<C: IndexCompare>(
    writer: &mut PageGraphWriter<C>,
    value: Value,
    heap_tid: ItemPointer,
    level: u8,
) {
    let graph = writer.graph();
    let params = GraphParams {
        m: graph.m(),
        ef_construction: graph.ef_construction(),
    };
    let mode = writer.mode();
    let rel = graph.relation();
    let (value, vector) = graph.compare().new_element(rel, value, mode);
    let element = NewElement {
        value,
        heap_tid,
        level,
    };
    let (outcome, _) = vector_hnsw::insert(writer, element, &params);
    writer.forget_values();
    if let (Some(vector), InsertOutcome::Duplicate(_)) = (vector, outcome) {
        free_vectors(rel, &[vector], mode);
    }
}

/// `aminsert`.
#[allow(clippy::too_many_arguments)]
#[pg_guard]
pub unsafe extern "C-unwind" fn insert(
    index: pg_sys::Relation,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    heap_tid_ptr: pg_sys::ItemPointer,
    _heap: pg_sys::Relation,
    _check_unique: pg_sys::IndexUniqueCheck::Type,
    _index_unchanged: bool,
    _index_info: *mut pg_sys::IndexInfo,
) -> bool {
    // SAFETY: an hnsw index has one key column, so values and isnull have one entry each.
    let (datum, is_null) = unsafe { (*values, *isnull) };
    if is_null {
        return false;
    }
    // SAFETY: Postgres hands aminsert the open, locked index for the whole call, and a valid
    // heap TID.
    let (rel, tid) = unsafe {
        (
            Relation::from_raw(index, Fork::Main),
            item_pointer_from(heap_tid_ptr),
        )
    };
    let settings = options::graph_settings(rel);
    // SAFETY: the datum is a non-NULL value of the indexed column's type.
    unsafe {
        match AnyPageGraph::open(rel, settings) {
            AnyPageGraph::Exact(graph) => insert_datum(graph, datum, tid),
            AnyPageGraph::Coded(graph) => insert_datum(graph, datum, tid),
        }
    }
    false
}

/// One heap row's value into the pages of `graph`, as `aminsert` does.
///
/// # Safety
///
/// `datum` is a non-NULL value of the indexed column's type.
unsafe fn insert_datum<C: IndexCompare>(
    graph: PageGraph<C>,
    datum: pg_sys::Datum,
    tid: ItemPointer,
) {
    // SAFETY: per the contract.
    let Some(value) = (unsafe { graph.support().index_value(datum) }) else {
        return;
    };
    let mut writer = PageGraphWriter::new(graph, WriteMode::Wal);
    let level = Levels::Backend.draw(writer.graph().m());
    insert_on_disk(&mut writer, value, tid, level);
}
