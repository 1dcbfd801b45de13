//! `sparsevec`: a sparse float4 vector stored as sorted 0-based indices plus their non-zero
//! values (layout in `crate::types::layout`), with pgvector 0.8.6's SQL surface.

mod binary;
mod casts;
mod compare;
mod distance;
mod text;

use crate::types::checks;
use crate::types::layout::{SPARSEVEC_MAX_DIM, SPARSEVEC_MAX_NNZ};

use checks::check_expected_dim;
use pgrx::PgSqlErrorCode::{ERRCODE_DATA_EXCEPTION, ERRCODE_PROGRAM_LIMIT_EXCEEDED};

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
    if nnz < 0 {
        raise(
            ERRCODE_DATA_EXCEPTION,
            "sparsevec cannot have negative number of elements".into(),
        );
    }
    if nnz > SPARSEVEC_MAX_NNZ as i64 {
        raise(
            ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("sparsevec cannot have more than {SPARSEVEC_MAX_NNZ} non-zero elements"),
        );
    }
    if nnz > dim {
        raise(
            ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            "sparsevec cannot have more elements than dimensions".into(),
        );
    }
}

/// The 0-based `index` must lie inside `0..dim` and come strictly after `previous`.
fn check_index(index: i32, previous: Option<i32>, dim: i32) {
    if index < 0 || index >= dim {
        raise(
            ERRCODE_DATA_EXCEPTION,
            "sparsevec index out of bounds".into(),
        );
    }
    if let Some(previous) = previous {
        if index < previous {
            raise(
                ERRCODE_DATA_EXCEPTION,
                "sparsevec indices must be in ascending order".into(),
            );
        }
        if index == previous {
            raise(
                ERRCODE_DATA_EXCEPTION,
                "sparsevec indices must not contain duplicates".into(),
            );
        }
    }
}

/// Stored values must be finite.
fn check_element(value: f32) {
    checks::check_finite(TYPE_NAME, value);
}
