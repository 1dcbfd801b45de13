//! `halfvec`: vectors of IEEE half-precision floats, with pgvector 0.8.6's SQL surface.
//!
//! Values are converted between half and single precision exactly as pgvector's x86-64 build
//! does (F16C `vcvtps2ph` with round-to-nearest-even, `vcvtph2ps`); `half::f16` uses the same
//! rounding, in hardware where the CPU has F16C and in software otherwise.
//!
//! The functions are split by theme: text and binary I/O, casts, arithmetic and distances,
//! ordering, and the `avg` aggregate's state handling.

mod aggregate;
mod casts;
mod compare;
mod distance;
mod io;
mod math;

use half::f16;
use pgrx::{ereport, PgSqlErrorCode};

use crate::fmgr;
use crate::types::layout::{HalfvecRef, HALFVEC_MAX_DIM};

/// Rejects two halfvecs of different lengths (binary operators and distances).
fn check_same_dims(a: HalfvecRef, b: HalfvecRef) {
    if a.dim() != b.dim() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("different halfvec dimensions {} and {}", a.dim(), b.dim())
        );
    }
}

/// Rejects a dimension count that a typmod of `typmod` does not allow (`-1` allows any).
fn check_expected_dim(typmod: i32, dim: i32) {
    if typmod != -1 && typmod != dim {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("expected {typmod} dimensions, not {dim}")
        );
    }
}

/// Rejects a dimension count outside 1..=HALFVEC_MAX_DIM.
fn check_dim(dim: i32) {
    if dim < 1 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "halfvec must have at least 1 dimension"
        );
    }
    if dim > HALFVEC_MAX_DIM as i32 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("halfvec cannot have more than {HALFVEC_MAX_DIM} dimensions")
        );
    }
}

/// Rejects a NaN or infinite element.
fn check_element(value: f16) {
    if value.is_nan() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "NaN not allowed in halfvec"
        );
    }
    if value.is_infinite() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "infinite value not allowed in halfvec"
        );
    }
}

/// Rounds a float4 to the nearest half; finite values beyond the half range become infinite.
#[inline]
fn to_half(value: f32) -> f16 {
    f16::from_f32(value)
}

/// Rounds a float4 to the nearest half, and raises "out of range" when a finite value rounds to
/// infinity (an infinite or NaN input passes through for the caller's element check).
fn to_half_in_range(value: f32) -> f16 {
    let h = to_half(value);
    if h.is_infinite() && !value.is_infinite() {
        let mut text = String::new();
        fmgr::push_float4_shortest(&mut text, value);
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{text}\" is out of range for type halfvec")
        );
    }
    h
}

/// Raises Postgres's "value out of range: overflow" error.
// Some server versions declare the C function noreturn, others do not.
#[allow(unreachable_code)]
fn overflow_error() -> ! {
    // SAFETY: float_overflow_error only raises an ERROR; pgrx turns it into an unwinding panic.
    unsafe { pgrx::pg_sys::float_overflow_error() };
    unreachable!("float_overflow_error returned")
}

/// Raises Postgres's "value out of range: underflow" error.
#[allow(unreachable_code)]
fn underflow_error() -> ! {
    // SAFETY: as for float_overflow_error.
    unsafe { pgrx::pg_sys::float_underflow_error() };
    unreachable!("float_underflow_error returned")
}
