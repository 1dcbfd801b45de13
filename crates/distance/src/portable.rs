//! Portable kernels that reproduce, operation by operation, the order in
//! which pgvector 0.8.6's reference build evaluates each sum.
//!
//! Naming used in the comments:
//! * `fold8(v)`: the 8 lanes folded to 4, lane `j` = `v[j + 4] + v[j]`
//!   (upper 128-bit half plus lower half);
//! * `hsum4(v)`: `(v[3] + v[1]) + (v[2] + v[0])` (movhlps + add, then
//!   shufps 0x55 + add).
//!
//! The dense float loops of `vector.c` were auto-vectorised by GCC with this
//! shape (`n` = number of elements):
//! 1. if `n >= 8`: 8 lane accumulators over `n / 8` chunks, then
//!    `acc4 = fold8(acc8)`, `s = hsum4(acc4)`;
//! 2. if `4..=7` elements remain (also for `n` in `4..=7`, with `acc4 = 0`):
//!    one more 4-lane step on `acc4`, then `s = hsum4(acc4)`;
//! 3. the remaining `0..=3` elements are added to `s` one at a time.
//!
//! Which of those steps use a fused multiply-add differs per function and is
//! documented on each kernel. This module is also the fallback
//! implementation for CPUs without the SIMD features.

use half::f16;

use crate::planes::planes;
use crate::table::CodeKernels;

/// `fold8`: lane `j` = `v[j + 4] + v[j]`.
#[inline(always)]
fn fold8(v: &[f32; 8]) -> [f32; 4] {
    [v[4] + v[0], v[5] + v[1], v[6] + v[2], v[7] + v[3]]
}

/// `hsum4`: `(v[3] + v[1]) + (v[2] + v[0])`.
#[inline(always)]
fn hsum4(v: &[f32; 4]) -> f32 {
    let lo = v[2] + v[0];
    let hi = v[3] + v[1];
    hi + lo
}

/// Steps 1 and 2 of the auto-vectorised float loops.
///
/// `main(acc8, i)` adds elements `i..i + 8` into the 8 lanes, `step4(acc4, i)`
/// adds elements `i..i + 4` into 4 lanes. Returns the reduced sum of the
/// vectorised prefix (`None` if no vector step ran) and the index where the
/// scalar tail starts.
#[inline(always)]
fn vector_prefix(
    n: usize,
    mut main: impl FnMut(&mut [f32; 8], usize),
    mut step4: impl FnMut(&mut [f32; 4], usize),
) -> (Option<f32>, usize) {
    let mut acc4 = [0.0f32; 4];
    let mut sum = None;
    let mut i = 0;
    if n >= 8 {
        let mut acc8 = [0.0f32; 8];
        while i + 8 <= n {
            main(&mut acc8, i);
            i += 8;
        }
        acc4 = fold8(&acc8);
        sum = Some(hsum4(&acc4));
    }
    if n - i >= 4 {
        step4(&mut acc4, i);
        sum = Some(hsum4(&acc4));
        i += 4;
    }
    (sum, i)
}

/// `VectorL2SquaredDistance`: 8 lanes `acc + d * d` (separate multiply and
/// add), 4-lane step `fma(d, d, acc)`, scalar tail `s + d * d`.
pub(crate) fn f32_l2_squared(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (sum, start) = vector_prefix(
        n,
        |acc, i| {
            for j in 0..8 {
                let d = a[i + j] - b[i + j];
                acc[j] += d * d;
            }
        },
        |acc, i| {
            for j in 0..4 {
                let d = a[i + j] - b[i + j];
                acc[j] = d.mul_add(d, acc[j]);
            }
        },
    );
    let mut s = sum.unwrap_or(0.0);
    for i in start..n {
        let d = a[i] - b[i];
        s += d * d;
    }
    s
}

/// Four `f32_l2_squared` (the SIMD table interleaves them).
pub(crate) fn f32_l2_squared_x4(pairs: [(&[f32], &[f32]); 4]) -> [f32; 4] {
    pairs.map(|(a, b)| f32_l2_squared(a, b))
}

/// Vector part of the `Σ x·y` loops (`VectorInnerProduct`, the norms of
/// `sparsevec_cosine_distance`, the trailing part of
/// `SparsevecL2SquaredDistance`): 8 lanes `acc + x * y` (separate), 4-lane
/// step `fma(x, y, acc)`.
#[inline(always)]
fn dot_prefix(a: &[f32], b: &[f32]) -> (Option<f32>, usize) {
    vector_prefix(
        a.len(),
        |acc, i| {
            for j in 0..8 {
                acc[j] += a[i + j] * b[i + j];
            }
        },
        |acc, i| {
            for j in 0..4 {
                acc[j] = a[i + j].mul_add(b[i + j], acc[j]);
            }
        },
    )
}

/// `VectorInnerProduct`: see [`dot_prefix`], scalar tail `s + x * y`.
pub(crate) fn f32_inner_product(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (sum, start) = dot_prefix(a, b);
    let mut s = sum.unwrap_or(0.0);
    for i in start..n {
        s += a[i] * b[i];
    }
    s
}

/// Four `f32_inner_product` (the SIMD table interleaves them).
pub(crate) fn f32_inner_product_x4(pairs: [(&[f32], &[f32]); 4]) -> [f32; 4] {
    pairs.map(|(a, b)| f32_inner_product(a, b))
}

/// `VectorL1Distance`: plain adds of `|a - b|` everywhere (no FMA).
/// (The reference build's 4-lane step computes `|a - b| + acc`; addition
/// commutes, so `acc += |a - b|` is the same.)
pub(crate) fn f32_l1(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (sum, start) = vector_prefix(
        n,
        |acc, i| {
            for j in 0..8 {
                acc[j] += (a[i + j] - b[i + j]).abs();
            }
        },
        |acc, i| {
            for j in 0..4 {
                acc[j] += (a[i + j] - b[i + j]).abs();
            }
        },
    );
    let mut s = sum.unwrap_or(0.0);
    for i in start..n {
        s += (a[i] - b[i]).abs();
    }
    s
}

/// `VectorCosineSimilarity`'s three float sums `[a·b, a·a, b·b]`: same
/// shape as the other loops, but every step uses FMA (8 lanes, 4-lane step
/// and the scalar tail).
pub(crate) fn f32_cosine_parts(a: &[f32], b: &[f32]) -> [f32; 3] {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let mut acc4 = [[0.0f32; 4]; 3];
    let mut sums = [0.0f32; 3];
    let mut i = 0;
    if n >= 8 {
        let mut acc8 = [[0.0f32; 8]; 3];
        while i + 8 <= n {
            for j in 0..8 {
                let (x, y) = (a[i + j], b[i + j]);
                acc8[0][j] = x.mul_add(y, acc8[0][j]);
                acc8[1][j] = x.mul_add(x, acc8[1][j]);
                acc8[2][j] = y.mul_add(y, acc8[2][j]);
            }
            i += 8;
        }
        for k in 0..3 {
            acc4[k] = fold8(&acc8[k]);
            sums[k] = hsum4(&acc4[k]);
        }
    }
    if n - i >= 4 {
        for j in 0..4 {
            let (x, y) = (a[i + j], b[i + j]);
            acc4[0][j] = x.mul_add(y, acc4[0][j]);
            acc4[1][j] = x.mul_add(x, acc4[1][j]);
            acc4[2][j] = y.mul_add(y, acc4[2][j]);
        }
        for k in 0..3 {
            sums[k] = hsum4(&acc4[k]);
        }
        i += 4;
    }
    for i in i..n {
        let (x, y) = (a[i], b[i]);
        sums[0] = x.mul_add(y, sums[0]);
        sums[1] = x.mul_add(x, sums[1]);
        sums[2] = y.mul_add(y, sums[2]);
    }
    sums
}

/// Square of a float in double precision. Exact: a float has a 24-bit
/// significand, so the product fits a double's 53 bits, and its exponent
/// range stays within the double's normal range. Hence `fma(x, x, c)` and
/// `x * x + c` are the same in this domain.
#[inline(always)]
fn sq(x: f32) -> f64 {
    let x = f64::from(x);
    x * x
}

/// The double sum of squares of `vector_norm`, `l2_normalize`,
/// `sparsevec_l2_norm` and `sparsevec_l2_normalize`:
/// 1. if `n >= 8`: 4 double lanes, per chunk of 8 floats
///    `acc[j] + (x[j]² + x[j + 4]²)`; then `p = [acc[2] + acc[0],
///    acc[3] + acc[1]]`, `s = p[1] + p[0]`;
/// 2. if `4..=7` elements remain (`p = 0` when `n < 8`):
///    `q = [x0² + p[0], x1² + p[1]]`, `r = [x2² + q[0], x3² + q[1]]`,
///    `s = r[1] + r[0]`;
/// 3. scalar tail `s + x²`.
pub(crate) fn f32_sum_squares(x: &[f32]) -> f64 {
    let n = x.len();
    let mut p = [0.0f64; 2];
    let mut s = 0.0f64;
    let mut i = 0;
    if n >= 8 {
        let mut acc = [0.0f64; 4];
        while i + 8 <= n {
            for j in 0..4 {
                acc[j] += sq(x[i + j]) + sq(x[i + 4 + j]);
            }
            i += 8;
        }
        p = [acc[2] + acc[0], acc[3] + acc[1]];
        s = p[1] + p[0];
    }
    if n - i >= 4 {
        let q = [sq(x[i]) + p[0], sq(x[i + 1]) + p[1]];
        let r = [sq(x[i + 2]) + q[0], sq(x[i + 3]) + q[1]];
        s = r[1] + r[0];
        i += 4;
    }
    for &v in &x[i..] {
        s += sq(v);
    }
    s
}

/// Sequential double sum of squares of `halfvec_l2_norm` and
/// `halfvec_l2_normalize`. The reference build uses `fma(x, x, s)`; `x * x`
/// is exact in double precision for a half, so `s + x * x` is identical.
pub(crate) fn f16_sum_squares(x: &[f16]) -> f64 {
    let mut s = 0.0f64;
    for &v in x {
        let v = f64::from(v.to_f32());
        s += v * v;
    }
    s
}

/// Shape of the `Halfvec*F16c` kernels (hand-written intrinsics in
/// pgvector): 8 lanes over `n / 8` chunks, `s = hsum4(fold8(acc8))` (zero
/// when there is no chunk), then a scalar tail over the remaining `0..=7`
/// elements.
#[inline(always)]
fn f16_chunks(n: usize, mut main: impl FnMut(&mut [f32; 8], usize)) -> (f32, usize) {
    let mut acc8 = [0.0f32; 8];
    let mut i = 0;
    while i + 8 <= n {
        main(&mut acc8, i);
        i += 8;
    }
    (hsum4(&fold8(&acc8)), i)
}

/// `HalfvecL2SquaredDistanceF16c`: `fma(d, d, acc)` in the 8 lanes and in
/// the scalar tail.
pub(crate) fn f16_l2_squared(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (mut s, start) = f16_chunks(n, |acc, i| {
        for j in 0..8 {
            let d = a[i + j].to_f32() - b[i + j].to_f32();
            acc[j] = d.mul_add(d, acc[j]);
        }
    });
    for i in start..n {
        let d = a[i].to_f32() - b[i].to_f32();
        s = d.mul_add(d, s);
    }
    s
}

/// `HalfvecInnerProductF16c`: `fma(x, y, acc)` in the 8 lanes and in the
/// scalar tail.
pub(crate) fn f16_inner_product(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (mut s, start) = f16_chunks(n, |acc, i| {
        for j in 0..8 {
            acc[j] = a[i + j].to_f32().mul_add(b[i + j].to_f32(), acc[j]);
        }
    });
    for i in start..n {
        s = a[i].to_f32().mul_add(b[i].to_f32(), s);
    }
    s
}

/// `HalfvecL1DistanceF16c`: plain adds of `|a - b|`.
pub(crate) fn f16_l1(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (mut s, start) = f16_chunks(n, |acc, i| {
        for j in 0..8 {
            acc[j] += (a[i + j].to_f32() - b[i + j].to_f32()).abs();
        }
    });
    for i in start..n {
        s += (a[i].to_f32() - b[i].to_f32()).abs();
    }
    s
}

/// `HalfvecCosineSimilarityF16c`'s `[a·b, a·a, b·b]`: FMA everywhere.
pub(crate) fn f16_cosine_parts(a: &[f16], b: &[f16]) -> [f32; 3] {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let mut acc8 = [[0.0f32; 8]; 3];
    let mut i = 0;
    while i + 8 <= n {
        for j in 0..8 {
            let (x, y) = (a[i + j].to_f32(), b[i + j].to_f32());
            acc8[0][j] = x.mul_add(y, acc8[0][j]);
            acc8[1][j] = x.mul_add(x, acc8[1][j]);
            acc8[2][j] = y.mul_add(y, acc8[2][j]);
        }
        i += 8;
    }
    let mut sums = [0.0f32; 3];
    for k in 0..3 {
        sums[k] = hsum4(&fold8(&acc8[k]));
    }
    for i in i..n {
        let (x, y) = (a[i].to_f32(), b[i].to_f32());
        sums[0] = x.mul_add(y, sums[0]);
        sums[1] = x.mul_add(x, sums[1]);
        sums[2] = y.mul_add(y, sums[2]);
    }
    sums
}

// ---------------------------------------------------------------------------
// Sparse vectors.
//
// The merge loops are scalar in the reference build. The trailing elements of
// `b` (indices after the last index of `a`) go through an auto-vectorised
// loop whose vector part is added to the running sum at once:
// `s = s + prefix` followed by the scalar tail.
//
// pgvector writes each merge as a loop over `a` with an inner loop over `b`
// that restarts at `bpos`. Taken step by step that is a plain two-pointer
// merge, which is how they are written here (the same float operations in the
// same order, with fewer compares and branches per step): for the current
// `a` element, every `b` element with a smaller index is a `b`-only term; a
// `b` element with the same index makes a matched term and both advance;
// otherwise (a larger index, or `b` exhausted) it is an `a`-only term. After
// the last `a` element, the `b` elements left are exactly pgvector's
// `b[bpos..]`.
// ---------------------------------------------------------------------------

/// The merge loop of `SparsevecL2SquaredDistance`, generic over the kernel
/// used for the trailing part of `b` (`Σ x·x` with [`dot_prefix`] shape).
///
/// Matched indices add `d * d` and `b`-only indices add `x * x` with a
/// separate multiply and add; `a`-only indices use `fma(x, x, s)`.
#[inline(always)]
pub(crate) fn sparse_l2_squared_with(
    ai: &[i32],
    ax: &[f32],
    bi: &[i32],
    bx: &[f32],
    prefix: impl Fn(&[f32], &[f32]) -> (Option<f32>, usize),
) -> f32 {
    debug_assert_eq!(ai.len(), ax.len());
    debug_assert_eq!(bi.len(), bx.len());
    let bnnz = bi.len().min(bx.len());
    let (bi, bx) = (&bi[..bnnz], &bx[..bnnz]);
    let mut s = 0.0f32;
    let mut j = 0;
    'a: for (&a_idx, &a_val) in ai.iter().zip(ax) {
        while j < bnnz {
            let b_idx = bi[j];
            if b_idx == a_idx {
                let d = a_val - bx[j];
                s += d * d;
                j += 1;
                continue 'a;
            }
            if b_idx > a_idx {
                break;
            }
            s += bx[j] * bx[j];
            j += 1;
        }
        s = a_val.mul_add(a_val, s);
    }
    let rest = &bx[j..];
    let (sum, start) = prefix(rest, rest);
    if let Some(v) = sum {
        s += v;
    }
    for &x in &rest[start..] {
        s += x * x;
    }
    s
}

/// `SparsevecInnerProduct`: matched indices add `fma(a, b, s)`.
#[inline(always)]
pub(crate) fn sparse_inner_product_impl(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    debug_assert_eq!(ai.len(), ax.len());
    debug_assert_eq!(bi.len(), bx.len());
    let bnnz = bi.len().min(bx.len());
    let (bi, bx) = (&bi[..bnnz], &bx[..bnnz]);
    let mut s = 0.0f32;
    let mut j = 0;
    'a: for (&a_idx, &a_val) in ai.iter().zip(ax) {
        loop {
            // Once `b` is exhausted no index can match any more.
            let Some(&b_idx) = bi.get(j) else {
                break 'a;
            };
            if b_idx == a_idx {
                s = a_val.mul_add(bx[j], s);
                j += 1;
                continue 'a;
            }
            if b_idx > a_idx {
                continue 'a;
            }
            j += 1;
        }
    }
    s
}

/// The float accumulation of `sparsevec_l1_distance`, generic over the kernel
/// for the trailing part of `b` (`Σ |x|`). Plain adds everywhere.
#[inline(always)]
pub(crate) fn sparse_l1_with(
    ai: &[i32],
    ax: &[f32],
    bi: &[i32],
    bx: &[f32],
    prefix: impl Fn(&[f32]) -> (Option<f32>, usize),
) -> f32 {
    debug_assert_eq!(ai.len(), ax.len());
    debug_assert_eq!(bi.len(), bx.len());
    let bnnz = bi.len().min(bx.len());
    let (bi, bx) = (&bi[..bnnz], &bx[..bnnz]);
    let mut s = 0.0f32;
    let mut j = 0;
    'a: for (&a_idx, &a_val) in ai.iter().zip(ax) {
        while j < bnnz {
            let b_idx = bi[j];
            if b_idx == a_idx {
                s += (a_val - bx[j]).abs();
                j += 1;
                continue 'a;
            }
            if b_idx > a_idx {
                break;
            }
            s += bx[j].abs();
            j += 1;
        }
        s += a_val.abs();
    }
    let rest = &bx[j..];
    let (sum, start) = prefix(rest);
    if let Some(v) = sum {
        s += v;
    }
    for &x in &rest[start..] {
        s += x.abs();
    }
    s
}

/// Vector part of `Σ |x|` (trailing part of `sparsevec_l1_distance`):
/// 8 lanes `acc + |x|`, 4-lane step `|x| + acc` (addition commutes).
#[inline(always)]
fn abs_prefix(x: &[f32]) -> (Option<f32>, usize) {
    vector_prefix(
        x.len(),
        |acc, i| {
            for j in 0..8 {
                acc[j] += x[i + j].abs();
            }
        },
        |acc, i| {
            for j in 0..4 {
                acc[j] += x[i + j].abs();
            }
        },
    )
}

pub(crate) fn sparse_l2_squared(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    sparse_l2_squared_with(ai, ax, bi, bx, dot_prefix)
}

pub(crate) fn sparse_inner_product(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    sparse_inner_product_impl(ai, ax, bi, bx)
}

pub(crate) fn sparse_l1(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    sparse_l1_with(ai, ax, bi, bx, abs_prefix)
}

// ---------------------------------------------------------------------------
// Bit strings: integer results, independent of the evaluation order.
// ---------------------------------------------------------------------------

#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_ne_bytes(w)
}

#[inline(always)]
pub(crate) fn bits_hamming_impl(a: &[u8], b: &[u8]) -> u64 {
    debug_assert_eq!(a.len(), b.len());
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut d = 0u64;
    for (x, y) in ca.zip(cb) {
        d += u64::from((word(x) ^ word(y)).count_ones());
    }
    for (x, y) in ra.iter().zip(rb) {
        d += u64::from((x ^ y).count_ones());
    }
    d
}

#[inline(always)]
pub(crate) fn bits_jaccard_counts_impl(a: &[u8], b: &[u8]) -> [u64; 3] {
    debug_assert_eq!(a.len(), b.len());
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let (mut ab, mut aa, mut bb) = (0u64, 0u64, 0u64);
    for (x, y) in ca.zip(cb) {
        let (x, y) = (word(x), word(y));
        ab += u64::from((x & y).count_ones());
        aa += u64::from(x.count_ones());
        bb += u64::from(y.count_ones());
    }
    for (x, y) in ra.iter().zip(rb) {
        ab += u64::from((x & y).count_ones());
        aa += u64::from(x.count_ones());
        bb += u64::from(y.count_ones());
    }
    [ab, aa, bb]
}

pub(crate) fn bits_hamming(a: &[u8], b: &[u8]) -> u64 {
    bits_hamming_impl(a, b)
}

pub(crate) fn bits_jaccard_counts(a: &[u8], b: &[u8]) -> [u64; 3] {
    bits_jaccard_counts_impl(a, b)
}

// ---------------------------------------------------------------------------
// Bit-plane codes (`codes.rs`): integer results, independent of the order.
// ---------------------------------------------------------------------------

/// Number of set bits of `a & b`, both read as little-endian `u64` words.
///
/// Hand-written word loop: this is the innermost loop of the hot code
/// kernel (one query against thousands of codes per graph search).
#[inline(always)]
fn and_count(a: &[u8], b: &[u8]) -> u64 {
    let (a, _) = a.as_chunks::<8>();
    let (b, _) = b.as_chunks::<8>();
    a.iter()
        .zip(b)
        .map(|(x, y)| u64::from((u64::from_le_bytes(*x) & u64::from_le_bytes(*y)).count_ones()))
        .sum()
}

/// `bitplane_dot` as one plane pair at a time: `Σ_j Σ_k 2^(j+k) ·
/// popcount(code_j & query_k)`. Also the POPCNT kernel of `x86.rs`.
#[inline(always)]
pub(crate) fn bitplane_dot_impl(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
) -> u64 {
    let code = planes(code, code_bits, words);
    let query = planes(query, query_bits, words);
    if words == 0 {
        return 0;
    }
    let stride = 8 * words;
    let mut total = 0u64;
    for (j, c) in code.chunks_exact(stride).enumerate() {
        for (k, q) in query.chunks_exact(stride).enumerate() {
            total += and_count(c, q) << (j + k);
        }
    }
    total
}

/// `bitplane_sum`: `Σ_j 2^j · popcount(plane_j)`.
#[inline(always)]
pub(crate) fn bitplane_sum_impl(code: &[u8], bits: u32, words: usize) -> u64 {
    let code = planes(code, bits, words);
    if words == 0 {
        return 0;
    }
    let mut total = 0u64;
    for (j, plane) in code.chunks_exact(8 * words).enumerate() {
        total += and_count(plane, plane) << j;
    }
    total
}

pub(crate) fn bitplane_dot(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
) -> u64 {
    bitplane_dot_impl(code, code_bits, query, query_bits, words)
}

pub(crate) fn bitplane_sum(code: &[u8], bits: u32, words: usize) -> u64 {
    bitplane_sum_impl(code, bits, words)
}

/// `byte_dot`: `Σ a_i · b_i` over the common length, in 32-bit partial sums of at most
/// 4,096 products (each below 2^16), so that none can overflow.
#[inline(always)]
pub(crate) fn byte_dot_impl(a: &[u8], b: &[u8]) -> u64 {
    let n = a.len().min(b.len());
    a[..n]
        .chunks(4096)
        .zip(b[..n].chunks(4096))
        .map(|(x, y)| {
            let part: u32 = x
                .iter()
                .zip(y)
                .map(|(&p, &q)| u32::from(p) * u32::from(q))
                .sum();
            u64::from(part)
        })
        .sum()
}

pub(crate) fn byte_dot(a: &[u8], b: &[u8]) -> u64 {
    byte_dot_impl(a, b)
}

/// `level_sums` in eight lanes, each summed in element order, then the lanes in order.
#[inline(always)]
pub(crate) fn level_sums_impl(a: &[f32], t: f32, cap: f32) -> [f32; 2] {
    assert!(
        (0.0..2_147_483_648.0).contains(&cap),
        "cap {cap} out of range"
    );
    // The floor of a value clamped to [0, cap] is its truncation; converting without Rust's
    // saturation checks lets the loop vectorize (with them, every element went through scalar
    // code).
    let level = |x: f32| -> f32 {
        let x = x.max(0.0).min(cap);
        // SAFETY: `x` is finite and within [0, cap], and cap < 2^31, so it fits an i32.
        (unsafe { x.to_int_unchecked::<i32>() }) as f32 + 0.5
    };
    let (mut ip, mut sq) = ([0f32; 8], [0f32; 8]);
    let (chunks, rest) = a.as_chunks::<8>();
    for chunk in chunks {
        for i in 0..8 {
            let y = level(t * chunk[i]);
            ip[i] += y * chunk[i];
            sq[i] += y * y;
        }
    }
    for &v in rest {
        let y = level(t * v);
        ip[0] += y * v;
        sq[0] += y * y;
    }
    [ip.iter().sum(), sq.iter().sum()]
}

pub(crate) fn level_sums(a: &[f32], t: f32, cap: f32) -> [f32; 2] {
    level_sums_impl(a, t, cap)
}

/// The portable code kernels: the fallback of every CPU, and the reference of the SIMD ones.
pub(crate) const CODE_KERNELS: CodeKernels = CodeKernels {
    name: "portable",
    bitplane_dot,
    bitplane_sum,
    byte_dot,
    level_sums,
};
