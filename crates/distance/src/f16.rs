//! Kernels of pgvector's `halfvec` type (`halfvec.c`, `halfutils.c`).
//!
//! pgvector dispatches at run time to hand-written F16C kernels when the
//! CPU has AVX, F16C and FMA. The reference build is compiled for such CPUs
//! throughout (its fallback kernels themselves use F16C and FMA
//! instructions), so the F16C order is the only one it can produce, and it
//! is what these functions compute on every CPU: 8 lanes over chunks of 8
//! (FMA for the products, plain adds for L1), reduced with a fixed tree,
//! then a scalar tail (FMA again for the products). The norms are sequential
//! double-precision sums.

use half::f16;

use crate::{active_kernels, finish};

/// `halfvec_l2_squared_distance(a, b)`.
pub fn l2_squared_distance(a: &[f16], b: &[f16]) -> f64 {
    f64::from((active_kernels().f16_l2_squared)(a, b))
}

/// `halfvec_l2_distance(a, b)` (operator `<->`).
pub fn l2_distance(a: &[f16], b: &[f16]) -> f64 {
    f64::from((active_kernels().f16_l2_squared)(a, b)).sqrt()
}

/// `halfvec_inner_product(a, b)`.
pub fn inner_product(a: &[f16], b: &[f16]) -> f64 {
    f64::from((active_kernels().f16_inner_product)(a, b))
}

/// `halfvec_negative_inner_product(a, b)` (operator `<#>`).
pub fn negative_inner_product(a: &[f16], b: &[f16]) -> f64 {
    f64::from(-(active_kernels().f16_inner_product)(a, b))
}

/// `halfvec_cosine_distance(a, b)` (operator `<=>`).
pub fn cosine_distance(a: &[f16], b: &[f16]) -> f64 {
    finish::cosine_distance(cosine_similarity(a, b))
}

/// The unclamped `HalfvecCosineSimilarity(a, b)` (double precision).
pub fn cosine_similarity(a: &[f16], b: &[f16]) -> f64 {
    finish::cosine_similarity((active_kernels().f16_cosine_parts)(a, b))
}

/// `halfvec_spherical_distance(a, b)`.
pub fn spherical_distance(a: &[f16], b: &[f16]) -> f64 {
    finish::spherical_distance((active_kernels().f16_inner_product)(a, b))
}

/// `halfvec_l1_distance(a, b)` (operator `<+>`).
pub fn l1_distance(a: &[f16], b: &[f16]) -> f64 {
    f64::from((active_kernels().f16_l1)(a, b))
}

/// `halfvec_l2_norm(a)` (SQL `l2_norm(halfvec)`).
pub fn norm(a: &[f16]) -> f64 {
    (active_kernels().f16_sum_squares)(a).sqrt()
}

/// `halfvec_l2_normalize(a)` into `out`: each element is
/// `half((float) (a[i] / norm))` (round to nearest even at both steps), or
/// all zeros if the norm is not positive. Cannot overflow since
/// `|a[i]| <= norm`.
pub fn l2_normalize_into(a: &[f16], out: &mut [f16]) {
    assert_eq!(a.len(), out.len(), "output length must match input length");
    let norm = norm(a);
    if norm > 0.0 {
        for (o, &x) in out.iter_mut().zip(a) {
            *o = f16::from_f32((f64::from(x.to_f32()) / norm) as f32);
        }
    } else {
        out.fill(f16::ZERO);
    }
}

/// `halfvec_l2_normalize(a)`; see [`l2_normalize_into`].
pub fn l2_normalize(a: &[f16]) -> Vec<f16> {
    let mut out = vec![f16::ZERO; a.len()];
    l2_normalize_into(a, &mut out);
    out
}
