//! `sparsevec`: a sparse float4 vector stored as sorted 0-based indices plus their non-zero
//! values (layout in `vector_formats::varlena`), with pgvector 0.8.6's SQL surface.

mod binary;
mod casts;
mod compare;
mod distance;
mod text;

use crate::types::checks::{self, OrRaise};
use crate::types::layout::SPARSEVEC_MAX_DIM;

use checks::check_expected_dim;

/// Raises an ERROR with `code` and `message`; never returns.
pub(crate) fn raise(code: pgrx::PgSqlErrorCode, message: String) -> ! {
    pgrx::ereport!(ERROR, code, message);
}

/// The name pgvector's messages give the type.
const TYPE_NAME: &str = "sparsevec";

/// The dimension count must be between 1 and the sparsevec maximum.
fn check_dim(dim: i64) {
    checks::check_dim(TYPE_NAME, SPARSEVEC_MAX_DIM, dim);
}

/// The number of stored elements must be within the limits and no more than `dim`.
fn check_nnz(nnz: i64, dim: i64) {
    vector_formats::checks::check_nnz(nnz, dim).or_raise();
}

/// Stored values must be finite.
fn check_element(value: f32) {
    checks::check_finite(TYPE_NAME, value);
}
