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
use crate::table::{BitplaneDotKernel, BitplaneSumKernel, ByteDotKernel, LevelSumsKernel};

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

/// One implementation of the bit-plane kernels.
#[derive(Clone, Copy, Debug)]
pub struct CodeKernels {
    /// Name of the implementation: `"portable"`, `"avx2"`, `"avx512vpopcntdq"` or
    /// `"avx512vpopcntdq+vnni"`.
    pub name: &'static str,
    /// Same contract as [`bitplane_dot`].
    pub bitplane_dot: BitplaneDotKernel,
    /// Same contract as [`bitplane_sum`].
    pub bitplane_sum: BitplaneSumKernel,
    /// Same contract as [`byte_dot`].
    pub byte_dot: ByteDotKernel,
    /// Same contract as [`level_sums`].
    pub level_sums: LevelSumsKernel,
}

/// Every implementation of the bit-plane kernels that this CPU supports,
/// from the portable one to the fastest one (the last entry is the one that
/// [`bitplane_dot`] and [`bitplane_sum`] use). All return identical results;
/// this list lets tests and benchmarks reach each of them.
pub fn implementations() -> &'static [CodeKernels] {
    static ALL: OnceLock<Vec<CodeKernels>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = vec![PORTABLE];
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx2());
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx512());
        #[cfg(target_arch = "x86_64")]
        all.extend(crate::x86::code_kernels_avx512_vnni());
        all
    })
}

/// The portable implementation.
pub(crate) const PORTABLE: CodeKernels = CodeKernels {
    name: "portable",
    bitplane_dot: crate::portable::bitplane_dot,
    bitplane_sum: crate::portable::bitplane_sum,
    byte_dot: crate::portable::byte_dot,
    level_sums: crate::portable::level_sums,
};

/// The first `bits * 8 * words` bytes of `bytes`: the planes the kernels may
/// read. Panics if `bytes` is shorter (or the size overflows), so that no
/// kernel can read out of bounds whatever its arguments.
#[inline(always)]
pub(crate) fn planes(bytes: &[u8], bits: u32, words: usize) -> &[u8] {
    debug_assert!((1..=8).contains(&bits), "bits = {bits}, expected 1..=8");
    let len = words
        .checked_mul(8)
        .and_then(|plane| plane.checked_mul(bits as usize))
        .expect("bit-plane size overflows usize");
    debug_assert!(
        bytes.len() >= len,
        "{} bytes, {bits} planes of {words} words need {len}",
        bytes.len()
    );
    &bytes[..len]
}

/// Calls `$fixed::<CODE_BITS, QUERY_BITS>($args)` for the common pairs of
/// bit widths (codes of 1, 2, 4 or 8 bits against queries of 4 or 8 bits or
/// against codes of the same width), where the planes are unrolled and kept
/// in registers, and evaluates `$dynamic` for the other pairs.
macro_rules! by_bit_widths {
    ($code_bits:expr, $query_bits:expr, $fixed:ident($($arg:expr),* $(,)?), $dynamic:expr) => {
        match ($code_bits, $query_bits) {
            (1, 1) => $fixed::<1, 1>($($arg),*),
            (1, 4) => $fixed::<1, 4>($($arg),*),
            (1, 8) => $fixed::<1, 8>($($arg),*),
            (2, 2) => $fixed::<2, 2>($($arg),*),
            (2, 4) => $fixed::<2, 4>($($arg),*),
            (2, 8) => $fixed::<2, 8>($($arg),*),
            (4, 4) => $fixed::<4, 4>($($arg),*),
            (4, 8) => $fixed::<4, 8>($($arg),*),
            (8, 4) => $fixed::<8, 4>($($arg),*),
            (8, 8) => $fixed::<8, 8>($($arg),*),
            _ => $dynamic,
        }
    };
}
pub(crate) use by_bit_widths;
