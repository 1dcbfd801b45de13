//! Dot products of quantized codes stored as bit planes (for RaBitQ-style
//! quantizers).
//!
//! # Layout
//!
//! A vector of unsigned `bits`-bit integers (one per dimension, `1 <= bits
//! <= 8`) over `words` 64-bit words (so up to `64 * words` dimensions; the
//! kernels count every element, so padding elements should be zero) is
//! stored as `bits` consecutive *planes*.
//! Plane `j` is `8 * words` bytes of little-endian `u64` words, and bit `i`
//! of plane `j` (bit `i % 64` of word `i / 64`, i.e. bit `i % 8` of byte
//! `i / 8`) is bit `j` of element `i`. The whole vector is therefore
//! `bits * 8 * words` bytes. Slices need no alignment.
//!
//! # Kernels
//!
//! The results are exact integers, so every implementation returns the same
//! value. [`bitplane_dot`] and [`bitplane_sum`] go through the kernel table
//! selected once at first use ([`crate::active_kernels`]): AVX-512 VPOPCNTDQ,
//! else AVX2 (both only within the crate's SIMD table, i.e. on x86-64 CPUs
//! that also have AVX, FMA and F16C, as every AVX2 CPU in practice does),
//! else a portable `u64` loop; [`byte_dot`] uses AVX-512 VNNI where the CPU
//! has it, else AVX2. [`implementations`] lists every
//! implementation this CPU supports, for tests and benchmarks.
//!
//! # Preconditions
//!
//! `1 <= bits <= 8` for both operands and slices of at least
//! `bits * 8 * words` bytes are only `debug_assert`ed; longer slices are
//! fine (the extra bytes are ignored). In release builds other widths give
//! unspecified results, and a slice that is too short makes the kernels
//! panic rather than read out of bounds.

use std::sync::OnceLock;

use crate::active_kernels;

/// `Σ_i u_i · v_i`, where `u` is a `code_bits`-bit code and `v` a
/// `query_bits`-bit query, both stored as bit planes over `words` 64-bit
/// words (see the [module documentation](self)).
///
/// Equals `Σ_j Σ_k 2^(j+k) · popcount(code_plane_j AND query_plane_k)`.
/// `words == 0` gives 0.
#[inline]
pub fn bitplane_dot(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
) -> u64 {
    (active_kernels().bitplane_dot)(code, code_bits, query, query_bits, words)
}

/// `Σ_i u_i` of a `bits`-bit code stored as bit planes over `words` words:
/// `Σ_j 2^j · popcount(plane_j)`.
#[inline]
pub fn bitplane_sum(code: &[u8], bits: u32, words: usize) -> u64 {
    (active_kernels().bitplane_sum)(code, bits, words)
}

/// `Σ_i a_i · b_i` of two byte codes (one unsigned 8-bit element per byte), over the
/// shorter slice's length. Codes kept only in memory use this layout: at 8 bits it costs one
/// multiply per element where the bit-plane layout needs 64 plane pairs.
#[inline]
pub fn byte_dot(a: &[u8], b: &[u8]) -> u64 {
    (active_kernels().byte_dot)(a, b)
}

/// One step of an extended-RaBitQ level search: with `yᵢ = ⌊clamp(t·aᵢ, 0, cap)⌋ + ½` for
/// the magnitudes `a`, returns `[Σ yᵢ·aᵢ, Σ yᵢ²]` in `f32`. `cap` must be in `[0, 2^31)`. Every implementation
/// adds in the same order (eight lanes of element sums, then the lanes), so the results, and
/// the codes chosen from them, are the same bits on every CPU.
#[inline]
pub fn level_sums(a: &[f32], t: f32, cap: f32) -> [f32; 2] {
    (active_kernels().level_sums)(a, t, cap)
}

pub use crate::table::CodeKernels;

/// Every implementation of the bit-plane kernels that this CPU supports,
/// from the portable one to the fastest one (the last entry is the one that
/// [`bitplane_dot`] and [`bitplane_sum`] use). All return identical results;
/// this list lets tests and benchmarks reach each of them.
pub fn implementations() -> &'static [CodeKernels] {
    static ALL: OnceLock<Vec<CodeKernels>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = vec![crate::portable::CODE_KERNELS];
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx2());
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx512());
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx512_vnni());
        all
    })
}
