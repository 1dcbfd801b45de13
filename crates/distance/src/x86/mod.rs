//! x86-64 SIMD kernels (AVX + FMA + F16C, optional AVX-512 VPOPCNTDQ; AVX2
//! or AVX-512 VPOPCNTDQ for the bit-plane codes; AVX-512 VNNI or AVX2 for
//! the byte codes).
//!
//! Each kernel performs exactly the operations of the corresponding portable
//! kernel in `portable.rs` (which documents the order), using the same
//! instructions as pgvector's reference build, so the results are identical.

use crate::portable;
use crate::table::{HammingKernel, JaccardKernel, Kernels};

/// Builds the SIMD kernel table if the CPU (and OS) support AVX, FMA and
/// F16C. pgvector's reference build needs the same features.
pub(crate) fn kernels() -> Option<Kernels> {
    let float = std::is_x86_feature_detected!("avx")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c");
    if !float {
        return None;
    }
    let avx512_popcount = std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512vpopcntdq");
    let popcnt = std::is_x86_feature_detected!("popcnt");
    let (bits_hamming, bits_jaccard_counts, bits_name): (HammingKernel, JaccardKernel, &str) =
        if avx512_popcount {
            (
                bits::entry::bits_hamming_avx512,
                bits::entry::bits_jaccard_counts_avx512,
                "avx-fma-f16c+avx512vpopcntdq",
            )
        } else if popcnt {
            (
                bits::entry::bits_hamming_popcnt,
                bits::entry::bits_jaccard_counts_popcnt,
                "avx-fma-f16c+popcnt",
            )
        } else {
            (
                portable::bits_hamming,
                portable::bits_jaccard_counts,
                "avx-fma-f16c",
            )
        };
    let codes = codes::code_kernels_avx512_vnni()
        .or_else(codes::code_kernels_avx512)
        .or_else(codes::code_kernels_avx2)
        .unwrap_or(portable::CODE_KERNELS);
    Some(Kernels {
        name: bits_name,
        f32_l2_squared: dense::entry::f32_l2_squared,
        f32_l2_squared_x4: dense::entry::f32_l2_squared_x4,
        f32_inner_product_x4: dense::entry::f32_inner_product_x4,
        f32_inner_product: dense::entry::f32_inner_product,
        f32_l1: dense::entry::f32_l1,
        f32_cosine_parts: dense::entry::f32_cosine_parts,
        f32_sum_squares: dense::entry::f32_sum_squares,
        f16_sum_squares: dense::entry::f16_sum_squares,
        f16_l2_squared: dense::entry::f16_l2_squared,
        f16_inner_product: dense::entry::f16_inner_product,
        f16_l1: dense::entry::f16_l1,
        f16_cosine_parts: dense::entry::f16_cosine_parts,
        sparse_l2_squared: dense::entry::sparse_l2_squared,
        sparse_inner_product: dense::entry::sparse_inner_product,
        sparse_l1: dense::entry::sparse_l1,
        bits_hamming,
        bits_jaccard_counts,
        bitplane_dot: codes.bitplane_dot,
        bitplane_sum: codes.bitplane_sum,
        byte_dot: codes.byte_dot,
        level_sums: codes.level_sums,
    })
}

mod bits;
mod codes;
mod dense;
mod entries;

pub(crate) use codes::{code_kernels_avx2, code_kernels_avx512, code_kernels_avx512_vnni};
