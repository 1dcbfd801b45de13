//! Kernels of pgvector's `vector` type (`vector.c`).
//!
//! Order of operations in the reference build (see `portable.rs` for the
//! exact shape): the float sums use 8 lanes over chunks of 8, a fixed
//! horizontal reduction, a 4-lane step for 4..7 remaining elements and a
//! scalar tail. `l2_squared_distance` and `inner_product` use separate
//! multiply and add except in the 4-lane step (FMA); `cosine_distance` uses
//! FMA everywhere; `l1_distance` has no multiplications. `norm` sums squares
//! in double precision with 4 double lanes.

use crate::{active_kernels, finish};

/// `vector_l2_squared_distance(a, b)` (operator `<->` squared).
pub fn l2_squared_distance(a: &[f32], b: &[f32]) -> f64 {
    f64::from((active_kernels().f32_l2_squared)(a, b))
}

/// `l2_distance(a, b)` (operator `<->`).
pub fn l2_distance(a: &[f32], b: &[f32]) -> f64 {
    f64::from((active_kernels().f32_l2_squared)(a, b)).sqrt()
}

/// `l2_squared_distance` of four pairs at once (faster than four calls on SIMD CPUs, same
/// results).
pub fn l2_squared_distance_x4(pairs: [(&[f32], &[f32]); 4]) -> [f64; 4] {
    (active_kernels().f32_l2_squared_x4)(pairs).map(f64::from)
}

/// `l2_distance` of four pairs at once.
pub fn l2_distance_x4(pairs: [(&[f32], &[f32]); 4]) -> [f64; 4] {
    l2_squared_distance_x4(pairs).map(f64::sqrt)
}

/// `inner_product(a, b)`.
pub fn inner_product(a: &[f32], b: &[f32]) -> f64 {
    f64::from((active_kernels().f32_inner_product)(a, b))
}

/// `vector_negative_inner_product(a, b)` (operator `<#>`); the float sum is
/// negated, so a zero product gives `-0`.
pub fn negative_inner_product(a: &[f32], b: &[f32]) -> f64 {
    f64::from(-(active_kernels().f32_inner_product)(a, b))
}

/// `cosine_distance(a, b)` (operator `<=>`); NaN if either vector is zero.
pub fn cosine_distance(a: &[f32], b: &[f32]) -> f64 {
    finish::cosine_distance(cosine_similarity(a, b))
}

/// The unclamped `VectorCosineSimilarity(a, b)` (double precision).
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    finish::cosine_similarity((active_kernels().f32_cosine_parts)(a, b))
}

/// `vector_spherical_distance(a, b)`: `acos(clamp(a·b)) / pi`.
pub fn spherical_distance(a: &[f32], b: &[f32]) -> f64 {
    finish::spherical_distance((active_kernels().f32_inner_product)(a, b))
}

/// `negative_inner_product` of four pairs at once (same results as four calls).
pub fn negative_inner_product_x4(pairs: [(&[f32], &[f32]); 4]) -> [f64; 4] {
    (active_kernels().f32_inner_product_x4)(pairs).map(|ip| f64::from(-ip))
}

/// `spherical_distance` of four pairs at once (same results as four calls).
pub fn spherical_distance_x4(pairs: [(&[f32], &[f32]); 4]) -> [f64; 4] {
    (active_kernels().f32_inner_product_x4)(pairs).map(finish::spherical_distance)
}

/// `l1_distance(a, b)` (operator `<+>`).
pub fn l1_distance(a: &[f32], b: &[f32]) -> f64 {
    f64::from((active_kernels().f32_l1)(a, b))
}

/// `vector_norm(a)`, the L2 norm (double precision sum of squares).
pub fn norm(a: &[f32]) -> f64 {
    (active_kernels().f32_sum_squares)(a).sqrt()
}

/// `l2_normalize(a)` into `out`: `out[i] = (float) (a[i] / norm(a))`, or all
/// zeros if the norm is not positive. The division cannot overflow since
/// every `|a[i]| <= norm(a)`.
pub fn l2_normalize_into(a: &[f32], out: &mut [f32]) {
    assert_eq!(a.len(), out.len(), "output length must match input length");
    let norm = norm(a);
    if norm > 0.0 {
        for (o, &x) in out.iter_mut().zip(a) {
            *o = (f64::from(x) / norm) as f32;
        }
    } else {
        out.fill(0.0);
    }
}

/// `l2_normalize(a)`; see [`l2_normalize_into`].
pub fn l2_normalize(a: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; a.len()];
    l2_normalize_into(a, &mut out);
    out
}
