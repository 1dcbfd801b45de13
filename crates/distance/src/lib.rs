//! Distance kernels for `vector`, bit-identical to pgvector 0.8.6 as shipped.
//!
//! # Contract
//!
//! Every public function returns exactly the value (same bits, up to NaN
//! payloads) that the corresponding pgvector 0.8.6 SQL function returns when
//! run from the reference x86-64 build (GCC 14, `-fassociative-math`,
//! auto-vectorised for AVX2 + FMA). pgvector's C loops are plain sums, but
//! that build reassociated them, so the result is defined by the compiled
//! operation order: 8-lane partial sums, a fixed horizontal reduction, a
//! 4-lane FMA step for remainders of 4..7 elements, then a scalar tail.
//! The exact order per function is documented in the module that implements
//! it and in `README.md`.
//!
//! Callers pass slices that are already validated (equal lengths, sorted
//! sparse indices, finite values); lengths are only `debug_assert`ed.
//!
//! # Dispatch
//!
//! The kernels run through a table of function pointers selected once at
//! first use ([`active_kernels`]): an AVX + FMA + F16C implementation with
//! `core::arch` intrinsics (plus AVX-512 VPOPCNTDQ for bit strings, and
//! AVX-512 VPOPCNTDQ or AVX2 for the bit-plane codes of [`codes`]) when the
//! CPU has them, otherwise a portable implementation that emulates the very
//! same operation order (using `mul_add` wherever the reference build used
//! FMA), so every CPU produces the same bits.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub use half;

pub mod bits;
pub mod codes;
pub mod f16;
pub mod f32;
pub mod prefetch;
pub mod reference;
pub mod sparse;

mod dispatch;
mod finish;
mod planes;
mod portable;
mod table;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use dispatch::{active_kernels, portable_kernels, simd_kernels};
pub use table::{
    BitplaneDotKernel, BitplaneSumKernel, ByteDotKernel, CodeKernels, HammingKernel, JaccardKernel,
    Kernels, LevelSumsKernel, Pairs4, Pairs4Kernel, SparseKernel,
};
