//! Kernels of pgvector's `bit` support (`bitvec.c`, `bitutils.c`).
//!
//! The results are integer counts, so they do not depend on the evaluation
//! order; AVX-512 VPOPCNTDQ (or POPCNT) is used when available, like
//! pgvector's own dispatch.
//!
//! Inputs are the data bytes of two `bit(n)` values of the same length `n`.
//! As in pgvector, every byte is counted, so the padding bits of the last
//! byte must be zero (PostgreSQL guarantees this for `bit`/`varbit`).

use crate::active_kernels;

fn check(a: &[u8], b: &[u8], bit_len: usize) {
    debug_assert_eq!(a.len(), b.len());
    debug_assert_eq!(a.len(), bit_len.div_ceil(8));
}

/// `hamming_distance(a, b)` (operator `<~>`): number of differing bits.
pub fn hamming_distance(a: &[u8], b: &[u8], bit_len: usize) -> f64 {
    check(a, b, bit_len);
    (active_kernels().bits_hamming)(a, b) as f64
}

/// `jaccard_distance(a, b)` (operator `<%>`): `1 - |a ∧ b| / |a ∨ b|`, or
/// `1` when `a ∧ b` is empty.
pub fn jaccard_distance(a: &[u8], b: &[u8], bit_len: usize) -> f64 {
    check(a, b, bit_len);
    let [ab, aa, bb] = (active_kernels().bits_jaccard_counts)(a, b);
    if ab == 0 {
        1.0
    } else {
        1.0 - (ab as f64 / (aa + bb - ab) as f64)
    }
}
