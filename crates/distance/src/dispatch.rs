//! Runtime selection of the kernel implementation.

use std::sync::OnceLock;

use crate::portable;
use crate::table::Kernels;

static PORTABLE: Kernels = Kernels {
    name: "portable",
    f32_l2_squared: portable::f32_l2_squared,
    f32_l2_squared_x4: portable::f32_l2_squared_x4,
    f32_inner_product_x4: portable::f32_inner_product_x4,
    f32_inner_product: portable::f32_inner_product,
    f32_l1: portable::f32_l1,
    f32_cosine_parts: portable::f32_cosine_parts,
    f32_sum_squares: portable::f32_sum_squares,
    f16_sum_squares: portable::f16_sum_squares,
    f16_l2_squared: portable::f16_l2_squared,
    f16_inner_product: portable::f16_inner_product,
    f16_l1: portable::f16_l1,
    f16_cosine_parts: portable::f16_cosine_parts,
    sparse_l2_squared: portable::sparse_l2_squared,
    sparse_inner_product: portable::sparse_inner_product,
    sparse_l1: portable::sparse_l1,
    bits_hamming: portable::bits_hamming,
    bits_jaccard_counts: portable::bits_jaccard_counts,
    bitplane_dot: portable::bitplane_dot,
    bitplane_sum: portable::bitplane_sum,
    byte_dot: portable::byte_dot,
    level_sums: portable::level_sums,
};

/// The portable kernels, which emulate the reference operation order on any
/// CPU (slow where they need `mul_add` without hardware FMA).
pub fn portable_kernels() -> &'static Kernels {
    &PORTABLE
}

/// The SIMD kernels, if this CPU supports them (x86-64 with AVX, FMA and
/// F16C; the bit-string kernels additionally use AVX-512 VPOPCNTDQ or POPCNT
/// when present).
pub fn simd_kernels() -> Option<&'static Kernels> {
    static SIMD: OnceLock<Option<Kernels>> = OnceLock::new();
    SIMD.get_or_init(detect_simd).as_ref()
}

/// The kernels used by the public functions of this crate: the SIMD table if
/// available, the portable one otherwise. Detection runs once and is cached.
#[inline]
pub fn active_kernels() -> &'static Kernels {
    static ACTIVE: OnceLock<&'static Kernels> = OnceLock::new();
    ACTIVE.get_or_init(|| simd_kernels().unwrap_or(&PORTABLE))
}

#[cfg(target_arch = "x86_64")]
fn detect_simd() -> Option<Kernels> {
    crate::x86::kernels()
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_simd() -> Option<Kernels> {
    None
}
