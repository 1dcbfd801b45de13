//! Bit-string kernels (Hamming and Jaccard counts).

use core::arch::x86_64::*;

use crate::portable;

// ---------------------------------------------------------------------------
// Bit strings.
// ---------------------------------------------------------------------------

#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load64(x: &[u8; 64]) -> __m512i {
    // SAFETY: `x` is 64 readable bytes; `loadu` needs no alignment.
    unsafe { _mm512_loadu_si512(x.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
fn bits_hamming_avx512(a: &[u8], b: &[u8]) -> u64 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<64>();
    let (bc, bt) = b[..n].as_chunks::<64>();
    let mut acc = _mm512_setzero_si512();
    for (x, y) in ac.iter().zip(bc) {
        let v = _mm512_xor_si512(load64(x), load64(y));
        acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(v));
    }
    _mm512_reduce_add_epi64(acc) as u64 + portable::bits_hamming_impl(at, bt)
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
fn bits_jaccard_counts_avx512(a: &[u8], b: &[u8]) -> [u64; 3] {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<64>();
    let (bc, bt) = b[..n].as_chunks::<64>();
    let mut ab = _mm512_setzero_si512();
    let mut aa = _mm512_setzero_si512();
    let mut bb = _mm512_setzero_si512();
    for (x, y) in ac.iter().zip(bc) {
        let (x, y) = (load64(x), load64(y));
        ab = _mm512_add_epi64(ab, _mm512_popcnt_epi64(_mm512_and_si512(x, y)));
        aa = _mm512_add_epi64(aa, _mm512_popcnt_epi64(x));
        bb = _mm512_add_epi64(bb, _mm512_popcnt_epi64(y));
    }
    let [tab, taa, tbb] = portable::bits_jaccard_counts_impl(at, bt);
    [
        _mm512_reduce_add_epi64(ab) as u64 + tab,
        _mm512_reduce_add_epi64(aa) as u64 + taa,
        _mm512_reduce_add_epi64(bb) as u64 + tbb,
    ]
}

#[target_feature(enable = "popcnt")]
fn bits_hamming_popcnt(a: &[u8], b: &[u8]) -> u64 {
    portable::bits_hamming_impl(a, b)
}

#[target_feature(enable = "popcnt")]
fn bits_jaccard_counts_popcnt(a: &[u8], b: &[u8]) -> [u64; 3] {
    portable::bits_jaccard_counts_impl(a, b)
}

/// Plain `fn` entry points of this module's kernels, stored in the table that
/// [`super::kernels`] builds only after detecting the features they need.
pub(super) mod entry {

    crate::x86::entries::entries! {
        bits_hamming_avx512(a: &[u8], b: &[u8]) -> u64;
        bits_jaccard_counts_avx512(a: &[u8], b: &[u8]) -> [u64; 3];
        bits_hamming_popcnt(a: &[u8], b: &[u8]) -> u64;
        bits_jaccard_counts_popcnt(a: &[u8], b: &[u8]) -> [u64; 3];
    }
}
