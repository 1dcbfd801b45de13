//! `aminsert`: adding one heap tuple to an existing index, as pgvector 0.8.6 does.
//!
//! NULLs are not indexed. For cosine operator classes (support function 2) a value of norm 0
//! is not indexed either and the others are normalized. The value goes to the list whose
//! center is nearest (support function 1, value first; the first list on ties), at the first
//! page from the list's insert page on that has room, or on a new page at the end of the
//! list's chain; the list's insert page then follows.

use crate::opclass::{Method, Support, Value};
use crate::storage::{item_pointer_from, Fork, ItemPointer, Relation, WriteMode};
use crate::stores::ivfflat::{entries, lists};
use pgrx::{pg_guard, pg_sys};
use vector_formats::page::INVALID_BLOCK_NUMBER;

/// The value to index for a heap datum, or `None` when it is not indexed (norm 0, cosine).
///
/// # Safety
///
/// `datum` is a non-NULL value of the indexed column's type.
pub unsafe fn index_value(support: &Support, datum: pg_sys::Datum) -> Option<Value> {
    // SAFETY: per the contract.
    let value = unsafe { Value::from_datum(datum) };
    if !support.normalizes() {
        return Some(value);
    }
    let norm = support
        .norm_of(&value)
        .expect("normalizes, so it has a norm");
    (norm > 0.0).then(|| support.normalized(&value))
}

/// Inserts `value` (already formed) pointing at `heap_tid`.
pub fn insert_value(rel: Relation, support: &Support, value: &Value, heap_tid: ItemPointer) {
    let bytes = value.bytes().expect("not NULL");
    let query = support.prepare(value);
    // The nearest list; the first one on ties.
    let mut best: Option<(lists::List, f64)> = None;
    lists::for_each_list(rel, |list, center| {
        let d = query.distance(center);
        if best.as_ref().is_none_or(|(_, min)| d < *min) {
            best = Some((list, d));
        }
    });
    let Some((list, _)) = best else {
        pgrx::error!("ivfflat index has no lists");
    };
    let datum = pg_sys::Datum::from(bytes.as_ptr());
    let tuple = entries::form_tuple(rel, datum, heap_tid);
    let page = entries::insert(rel, WriteMode::Wal, list.insert_page, &tuple);
    if page != list.insert_page {
        lists::update_list(
            rel,
            WriteMode::Wal,
            list.location,
            page,
            list.insert_page,
            INVALID_BLOCK_NUMBER,
        );
    }
}

/// `aminsert`.
#[allow(clippy::too_many_arguments)]
#[pg_guard]
pub unsafe extern "C-unwind" fn insert(
    index: pg_sys::Relation,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    heap_tid: pg_sys::ItemPointer,
    _heap: pg_sys::Relation,
    _check_unique: pg_sys::IndexUniqueCheck::Type,
    _index_unchanged: bool,
    _index_info: *mut pg_sys::IndexInfo,
) -> bool {
    // SAFETY: an ivfflat index has one key column, so values and isnull have one entry each.
    let (datum, is_null) = unsafe { (*values, *isnull) };
    if is_null {
        return false;
    }
    // SAFETY: Postgres hands aminsert the open, locked index for the whole call, and a valid
    // heap TID.
    let (rel, tid) = unsafe {
        (
            Relation::from_raw(index, Fork::Main),
            item_pointer_from(heap_tid),
        )
    };
    let support = Support::for_index(rel, Method::Ivfflat);
    // SAFETY: the datum is a non-NULL value of the indexed column's type.
    let Some(value) = (unsafe { index_value(&support, datum) }) else {
        return false;
    };
    // pgvector checks that the index is valid before it looks at the lists.
    lists::read_meta(rel);
    insert_value(rel, &support, &value, tid);
    false
}
