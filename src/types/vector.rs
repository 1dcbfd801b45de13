//! `vector`: dense float4 vectors, byte-compatible with pgvector 0.8.6.
//!
//! The SQL functions are split by concern: text and binary I/O (`io`), casts and the typmod
//! check (`casts`), distances and arithmetic (`ops`), and the `avg`/`sum` aggregates
//! (`aggregates`). This file holds the validity checks they share, each raising pgvector's
//! error class and message text.

mod aggregates;
mod casts;
mod io;
mod ops;

use crate::types::layout::VECTOR_MAX_DIM;
use pgrx::{ereport, pg_sys, PgSqlErrorCode};

/// Rejects a dimension count outside `1..=VECTOR_MAX_DIM`.
fn check_dim(dim: i32) {
    if dim < 1 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "vector must have at least 1 dimension"
        );
    }
    if dim > VECTOR_MAX_DIM as i32 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("vector cannot have more than {VECTOR_MAX_DIM} dimensions")
        );
    }
}

/// Rejects `dim` when a type modifier (`vector(n)`, -1 for none) asks for another count.
fn check_expected_dim(typmod: i32, dim: i32) {
    if typmod != -1 && typmod != dim {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("expected {typmod} dimensions, not {dim}")
        );
    }
}

/// Rejects a pair of operands of different lengths.
fn check_same_dims(a: usize, b: usize) {
    if a != b {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("different vector dimensions {a} and {b}")
        );
    }
}

/// Rejects NaN and infinities, which a stored vector never holds.
fn check_element(value: f32) {
    if value.is_nan() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "NaN not allowed in vector"
        );
    }
    if value.is_infinite() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "infinite value not allowed in vector"
        );
    }
}

/// Raises the server's own "value out of range: overflow" error.
// Some server versions' bindings declare the routine as never returning, others do not.
#[allow(unreachable_code)]
fn float_overflow() -> ! {
    // SAFETY: float_overflow_error takes no arguments and always raises an ERROR, which the
    // guarded binding turns into an unwind to our caller's #[pg_guard] boundary.
    unsafe { pg_sys::float_overflow_error() };
    unreachable!("float_overflow_error returned")
}

/// Raises the server's own "value out of range: underflow" error.
#[allow(unreachable_code)]
fn float_underflow() -> ! {
    // SAFETY: as for float_overflow, with float_underflow_error.
    unsafe { pg_sys::float_underflow_error() };
    unreachable!("float_underflow_error returned")
}
