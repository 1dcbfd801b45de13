//! `amvalidate`: the check `amvalidate(opclass)` and `CREATE OPERATOR CLASS` tooling run on an
//! operator class of the method.
//!
//! pgvector 0.8.6 accepts every operator class of `hnsw` without looking at it (its support
//! functions are resolved, and their absence reported, when an index is built or scanned), so
//! this does the same: `amvalidate` answers true for all of them.

use pgrx::{pg_guard, pg_sys};

/// `amvalidate`.
#[pg_guard]
pub unsafe extern "C-unwind" fn validate(_opclass: pg_sys::Oid) -> bool {
    true
}
