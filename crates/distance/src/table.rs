//! The kernel table: one function pointer per raw kernel, filled by the portable module or
//! by a SIMD module (`x86`), chosen at run time by `dispatch`.

use half::f16;

/// Signature of the sparse kernels: `(a_indices, a_values, b_indices, b_values)`.
pub type SparseKernel = fn(&[i32], &[f32], &[i32], &[f32]) -> f32;
/// Four independent pairs of dense float vectors.
pub type Pairs4<'a> = [(&'a [f32], &'a [f32]); 4];
/// Signature of the four-pair kernels.
pub type Pairs4Kernel = fn(Pairs4<'_>) -> [f32; 4];
/// Signature of the Hamming kernel.
pub type HammingKernel = fn(&[u8], &[u8]) -> u64;
/// Signature of the Jaccard counting kernel.
pub type JaccardKernel = fn(&[u8], &[u8]) -> [u64; 3];
/// Signature of [`crate::codes::bitplane_dot`]: `(code, code_bits, query, query_bits, words)`.
pub type BitplaneDotKernel = fn(&[u8], u32, &[u8], u32, usize) -> u64;
/// Signature of [`crate::codes::bitplane_sum`]: `(code, bits, words)`.
pub type BitplaneSumKernel = fn(&[u8], u32, usize) -> u64;
/// Signature of [`crate::codes::byte_dot`]: `(a, b)`.
pub type ByteDotKernel = fn(&[u8], &[u8]) -> u64;
/// Signature of [`crate::codes::level_sums`]: `(a, t, cap)`.
pub type LevelSumsKernel = fn(&[f32], f32, f32) -> [f32; 2];

/// Raw kernels: the accumulation loops of pgvector, before the per-function
/// finishing steps (casts, `sqrt`, clamping) that the public modules apply.
///
/// All tables compute bit-identical results; they differ only in speed.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Human-readable name of the implementation, e.g. `"avx-fma-f16c+popcnt"`.
    pub name: &'static str,
    /// `VectorL2SquaredDistance` (float accumulation).
    pub f32_l2_squared: fn(&[f32], &[f32]) -> f32,
    /// Four `f32_l2_squared` of independent pairs, each with the single kernel's bits (the
    /// SIMD version overlaps them).
    pub f32_l2_squared_x4: Pairs4Kernel,
    /// `VectorInnerProduct` (float accumulation).
    pub f32_inner_product: fn(&[f32], &[f32]) -> f32,
    /// Four `f32_inner_product` of independent pairs, each with the single kernel's bits.
    pub f32_inner_product_x4: Pairs4Kernel,
    /// `VectorL1Distance` (float accumulation).
    pub f32_l1: fn(&[f32], &[f32]) -> f32,
    /// The three float sums of `VectorCosineSimilarity`: `[a·b, a·a, b·b]`.
    pub f32_cosine_parts: fn(&[f32], &[f32]) -> [f32; 3],
    /// The double sum of squares of `vector_norm` / `l2_normalize`
    /// (also `sparsevec_l2_norm` over the stored values).
    pub f32_sum_squares: fn(&[f32]) -> f64,
    /// The sequential double sum of squares of `halfvec_l2_norm` and
    /// `halfvec_l2_normalize`.
    pub f16_sum_squares: fn(&[f16]) -> f64,
    /// `HalfvecL2SquaredDistanceF16c`.
    pub f16_l2_squared: fn(&[f16], &[f16]) -> f32,
    /// `HalfvecInnerProductF16c`.
    pub f16_inner_product: fn(&[f16], &[f16]) -> f32,
    /// `HalfvecL1DistanceF16c`.
    pub f16_l1: fn(&[f16], &[f16]) -> f32,
    /// The three float sums of `HalfvecCosineSimilarityF16c`.
    pub f16_cosine_parts: fn(&[f16], &[f16]) -> [f32; 3],
    /// `SparsevecL2SquaredDistance(a_indices, a_values, b_indices, b_values)`.
    pub sparse_l2_squared: SparseKernel,
    /// `SparsevecInnerProduct(a_indices, a_values, b_indices, b_values)`.
    pub sparse_inner_product: SparseKernel,
    /// The float accumulation of `sparsevec_l1_distance`.
    pub sparse_l1: SparseKernel,
    /// Number of differing bits of two equally long byte strings.
    pub bits_hamming: HammingKernel,
    /// `[popcount(a & b), popcount(a), popcount(b)]` of two byte strings.
    pub bits_jaccard_counts: JaccardKernel,
    /// [`crate::codes::bitplane_dot`]: dot product of two bit-plane codes.
    pub bitplane_dot: BitplaneDotKernel,
    /// [`crate::codes::bitplane_sum`]: element sum of a bit-plane code.
    pub bitplane_sum: BitplaneSumKernel,
    /// [`crate::codes::byte_dot`]: dot product of two byte codes.
    pub byte_dot: ByteDotKernel,
    /// [`crate::codes::level_sums`]: the sums of a scaled level search step.
    pub level_sums: LevelSumsKernel,
}

/// One implementation of the bit-plane kernels.
#[derive(Clone, Copy, Debug)]
pub struct CodeKernels {
    /// Name of the implementation: `"portable"`, `"avx2"`, `"avx512vpopcntdq"` or
    /// `"avx512vpopcntdq+vnni"`.
    pub name: &'static str,
    /// Same contract as [`crate::codes::bitplane_dot`].
    pub bitplane_dot: BitplaneDotKernel,
    /// Same contract as [`crate::codes::bitplane_sum`].
    pub bitplane_sum: BitplaneSumKernel,
    /// Same contract as [`crate::codes::byte_dot`].
    pub byte_dot: ByteDotKernel,
    /// Same contract as [`crate::codes::level_sums`].
    pub level_sums: LevelSumsKernel,
}
