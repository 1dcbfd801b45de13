//! Kernels of pgvector's `sparsevec` type (`sparsevec.c`).
//!
//! The distance loops merge the two sorted index lists with scalar float
//! arithmetic in the order of the C source (the reference build fuses the
//! `a`-only squares of the L2 distance and the products of the inner product
//! into FMAs). The elements of `b` after the last index of `a` go through an
//! auto-vectorised loop whose vector part is added to the running sum at
//! once. The norms in `cosine_distance` use the same loop shape as
//! `f32::inner_product`, and `norm` the same as `f32::norm`.

use crate::{active_kernels, finish};

/// A borrowed sparse vector: strictly increasing indices (0-based, as stored
/// by pgvector) and their non-zero values. The dimension is not needed by
/// any kernel.
#[derive(Clone, Copy, Debug)]
pub struct SparseRef<'a> {
    /// Indices, strictly increasing.
    pub indices: &'a [i32],
    /// Values, one per index.
    pub values: &'a [f32],
}

impl<'a> SparseRef<'a> {
    /// Pairs `indices` with `values` (equal lengths expected).
    pub fn new(indices: &'a [i32], values: &'a [f32]) -> Self {
        debug_assert_eq!(indices.len(), values.len());
        debug_assert!(indices.windows(2).all(|w| w[0] < w[1]));
        Self { indices, values }
    }
}

/// `sparsevec_l2_squared_distance(a, b)`.
pub fn l2_squared_distance(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    f64::from((active_kernels().sparse_l2_squared)(
        a.indices, a.values, b.indices, b.values,
    ))
}

/// `sparsevec_l2_distance(a, b)` (operator `<->`).
pub fn l2_distance(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    l2_squared_distance(a, b).sqrt()
}

fn dot(a: SparseRef<'_>, b: SparseRef<'_>) -> f32 {
    (active_kernels().sparse_inner_product)(a.indices, a.values, b.indices, b.values)
}

/// `sparsevec_inner_product(a, b)`.
pub fn inner_product(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    f64::from(dot(a, b))
}

/// `sparsevec_negative_inner_product(a, b)` (operator `<#>`).
pub fn negative_inner_product(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    f64::from(-dot(a, b))
}

/// `sparsevec_cosine_distance(a, b)` (operator `<=>`).
pub fn cosine_distance(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    let k = active_kernels();
    let similarity = dot(a, b);
    let norma = (k.f32_inner_product)(a.values, a.values);
    let normb = (k.f32_inner_product)(b.values, b.values);
    finish::cosine_distance(finish::cosine_similarity([similarity, norma, normb]))
}

/// `sparsevec_l1_distance(a, b)` (operator `<+>`).
pub fn l1_distance(a: SparseRef<'_>, b: SparseRef<'_>) -> f64 {
    f64::from((active_kernels().sparse_l1)(
        a.indices, a.values, b.indices, b.values,
    ))
}

/// `sparsevec_l2_norm(a)` (SQL `l2_norm(sparsevec)`).
pub fn norm(a: SparseRef<'_>) -> f64 {
    (active_kernels().f32_sum_squares)(a.values).sqrt()
}

/// `sparsevec_l2_normalize(a)`: the indices and values of the result.
///
/// Values become `(float) (x / norm)`; elements that underflow to zero are
/// dropped. A vector whose norm is not positive yields no elements.
pub fn l2_normalize(a: SparseRef<'_>) -> (Vec<i32>, Vec<f32>) {
    let norm = norm(a);
    let mut indices = Vec::new();
    let mut values = Vec::new();
    if norm > 0.0 {
        indices.reserve(a.values.len());
        values.reserve(a.values.len());
        for (&i, &x) in a.indices.iter().zip(a.values) {
            let v = (f64::from(x) / norm) as f32;
            if v != 0.0 {
                indices.push(i);
                values.push(v);
            }
        }
    }
    (indices, values)
}
