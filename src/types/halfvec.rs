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
use crate::types::checks;
use crate::types::layout::{HalfvecRef, HALFVEC_MAX_DIM};

use checks::{check_expected_dim, float_overflow, float_underflow};

/// The name pgvector's messages give the type.
const TYPE_NAME: &str = "halfvec";

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

/// Rejects a dimension count outside 1..=HALFVEC_MAX_DIM.
fn check_dim(dim: i32) {
    checks::check_dim(TYPE_NAME, HALFVEC_MAX_DIM, dim);
}

/// Rejects a NaN or infinite element (widening keeps both kinds as they are).
fn check_element(value: f16) {
    checks::check_finite(TYPE_NAME, value.to_f32());
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
        checks::out_of_range(TYPE_NAME, &text);
    }
    h
}
