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

use crate::types::checks;
use crate::types::layout::VECTOR_MAX_DIM;
use pgrx::{ereport, PgSqlErrorCode};

use checks::{check_expected_dim, float_overflow, float_underflow};

/// The name pgvector's messages give the type.
const TYPE_NAME: &str = "vector";

/// Rejects a dimension count outside `1..=VECTOR_MAX_DIM`.
fn check_dim(dim: i32) {
    checks::check_dim(TYPE_NAME, VECTOR_MAX_DIM, dim);
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
    checks::check_finite(TYPE_NAME, value);
}
