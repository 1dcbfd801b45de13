//! Finishing steps shared by the vector, halfvec and sparsevec functions.

use core::f64::consts::PI;

/// `1 - similarity` with the similarity clamped to `[-1, 1]`; NaN propagates
/// (e.g. a zero vector gives `0 / 0 = NaN`).
#[inline]
pub(crate) fn cosine_distance(similarity: f64) -> f64 {
    // `clamp` keeps NaN, like pgvector's two comparisons.
    1.0 - similarity.clamp(-1.0, 1.0)
}

/// `similarity / sqrt(norma * normb)`, all in double precision.
#[inline]
pub(crate) fn cosine_similarity([ab, aa, bb]: [f32; 3]) -> f64 {
    f64::from(ab) / (f64::from(aa) * f64::from(bb)).sqrt()
}

/// `acos(clamp(ip, -1, 1)) / pi`; the clamp happens on the float value.
#[inline]
pub(crate) fn spherical_distance(ip: f32) -> f64 {
    // Widening is exact, so clamping the double equals clamping the float.
    f64::from(ip).clamp(-1.0, 1.0).acos() / PI
}
