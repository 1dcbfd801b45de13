//! Float kernels: dense `vector` and `halfvec` (pgvector's `Vector*` and `Halfvec*F16c` loops),
//! and the scalar merge loops of `sparsevec` compiled with FMA.

use core::arch::x86_64::*;

use half::f16;

use crate::portable;

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

#[inline]
#[target_feature(enable = "avx")]
fn load8(x: &[f32; 8]) -> __m256 {
    // SAFETY: `x` is 8 readable floats; `loadu` needs no alignment.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

#[inline]
#[target_feature(enable = "avx")]
fn load4(x: &[f32]) -> __m128 {
    let x: &[f32; 4] = x[..4].try_into().unwrap();
    // SAFETY: `x` is 4 readable floats; `loadu` needs no alignment.
    unsafe { _mm_loadu_ps(x.as_ptr()) }
}

/// Converts 8 halves to floats (`vcvtph2ps`, exact).
#[inline]
#[target_feature(enable = "avx,f16c")]
fn load8h(x: &[f16; 8]) -> __m256 {
    // `f16` is `repr(transparent)` over `u16`.
    // SAFETY: `x` is 16 readable bytes; `loadu` needs no alignment.
    let raw = unsafe { _mm_loadu_si128(x.as_ptr().cast::<__m128i>()) };
    _mm256_cvtph_ps(raw)
}

/// Converts one half to a float (`vcvtph2ps`, exact).
#[inline]
#[target_feature(enable = "avx,f16c")]
fn cvt1(x: f16) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(x.to_bits()))))
}

/// Lane `j` = `v[j + 4] + v[j]`.
#[inline]
#[target_feature(enable = "avx")]
fn fold8(v: __m256) -> __m128 {
    _mm_add_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v))
}

/// `(v[3] + v[1]) + (v[2] + v[0])`.
#[inline]
#[target_feature(enable = "avx")]
fn hsum4(v: __m128) -> f32 {
    let pair = _mm_add_ps(_mm_movehl_ps(v, v), v);
    let odd = _mm_shuffle_ps::<0x55>(pair, pair);
    _mm_cvtss_f32(_mm_add_ss(odd, pair))
}

#[inline]
#[target_feature(enable = "avx")]
fn abs_mask() -> __m256 {
    _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff))
}

// ---------------------------------------------------------------------------
// Dense float kernels.
// ---------------------------------------------------------------------------

/// Generates the vector part (steps 1 and 2 in `portable.rs`) of an
/// auto-vectorised float loop. `$main` computes the new 8-lane accumulator
/// from `$acc8`, `$x8`, `$y8`; `$step` the new 4-lane accumulator from
/// `$acc4`, `$x4`, `$y4`.
macro_rules! vector_prefix {
    (
        $(#[$meta:meta])*
        fn $name:ident;
        main |$acc8:ident, $x8:ident, $y8:ident| $main:expr;
        step |$acc4:ident, $x4:ident, $y4:ident| $step:expr;
    ) => {
        $(#[$meta])*
        #[inline]
        #[target_feature(enable = "avx,fma")]
        fn $name(a: &[f32], b: &[f32]) -> (Option<f32>, usize) {
            let n = a.len().min(b.len());
            let (a, b) = (&a[..n], &b[..n]);
            let mut acc4 = _mm_setzero_ps();
            let mut sum = None;
            let mut i = 0;
            if n >= 8 {
                let (ac, _) = a.as_chunks::<8>();
                let (bc, _) = b.as_chunks::<8>();
                let mut $acc8 = _mm256_setzero_ps();
                for (ca, cb) in ac.iter().zip(bc) {
                    let $x8 = load8(ca);
                    let $y8 = load8(cb);
                    $acc8 = $main;
                }
                i = ac.len() * 8;
                acc4 = fold8($acc8);
                sum = Some(hsum4(acc4));
            }
            if n - i >= 4 {
                let $x4 = load4(&a[i..]);
                let $y4 = load4(&b[i..]);
                let $acc4 = acc4;
                acc4 = $step;
                sum = Some(hsum4(acc4));
                i += 4;
            }
            (sum, i)
        }
    };
}

vector_prefix! {
    /// 8 lanes `acc + d * d` (no FMA), 4-lane step `fma(d, d, acc)`.
    fn l2_prefix;
    main |acc, x, y| {
        let d = _mm256_sub_ps(x, y);
        _mm256_add_ps(acc, _mm256_mul_ps(d, d))
    };
    step |acc, x, y| {
        let d = _mm_sub_ps(x, y);
        _mm_fmadd_ps(d, d, acc)
    };
}

vector_prefix! {
    /// 8 lanes `acc + x * y` (no FMA), 4-lane step `fma(x, y, acc)`.
    fn dot_prefix;
    main |acc, x, y| _mm256_add_ps(acc, _mm256_mul_ps(x, y));
    step |acc, x, y| _mm_fmadd_ps(x, y, acc);
}

vector_prefix! {
    /// 8 lanes `acc + |x - y|`, 4-lane step `|x - y| + acc`.
    fn l1_prefix;
    main |acc, x, y| _mm256_add_ps(acc, _mm256_and_ps(_mm256_sub_ps(x, y), abs_mask()));
    step |acc, x, y| {
        _mm_add_ps(_mm_and_ps(_mm_sub_ps(x, y), _mm256_castps256_ps128(abs_mask())), acc)
    };
}

vector_prefix! {
    /// 8 lanes `acc + |x|`, 4-lane step `|x| + acc` (`b` is ignored).
    fn abs_prefix;
    main |acc, x, _y| _mm256_add_ps(acc, _mm256_and_ps(x, abs_mask()));
    step |acc, x, _y| _mm_add_ps(_mm_and_ps(x, _mm256_castps256_ps128(abs_mask())), acc);
}

#[target_feature(enable = "avx,fma")]
fn f32_l2_squared(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (sum, start) = l2_prefix(a, b);
    let mut s = sum.unwrap_or(0.0);
    for (x, y) in a[start..].iter().zip(&b[start..]) {
        let d = x - y;
        s += d * d;
    }
    s
}

#[target_feature(enable = "avx,fma")]
fn f32_inner_product(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (sum, start) = dot_prefix(a, b);
    let mut s = sum.unwrap_or(0.0);
    for (x, y) in a[start..].iter().zip(&b[start..]) {
        s += x * y;
    }
    s
}

/// Generates a kernel of four independent pairs from a single kernel's steps: `main` (the new
/// 8-lane accumulator), `step` (the 4-lane step) and `tail` (one scalar term). The pairs'
/// 8-lane loops are interleaved, so that one pair's additions wait on another's less; each pair
/// goes through the single kernel's operations in its order, so each result keeps its bits.
macro_rules! four_pairs {
    (
        $(#[$meta:meta])*
        fn $name:ident = $single:ident;
        main |$acc8:ident, $x8:ident, $y8:ident| $main:expr;
        step |$acc4:ident, $x4:ident, $y4:ident| $step:expr;
        tail |$x:ident, $y:ident| $tail:expr;
    ) => {
        $(#[$meta])*
        #[target_feature(enable = "avx,fma")]
        fn $name(pairs: [(&[f32], &[f32]); 4]) -> [f32; 4] {
            /// The single kernel's 4-lane step and scalar tail after its 8-lane accumulator
            /// (`None` below 8 elements).
            #[inline]
            #[target_feature(enable = "avx,fma")]
            fn finish(a: &[f32], b: &[f32], acc8: Option<__m256>) -> f32 {
                let n = a.len().min(b.len());
                let (a, b) = (&a[..n], &b[..n]);
                let mut acc4 = _mm_setzero_ps();
                let mut sum = None;
                let mut i = 0;
                if let Some(acc8) = acc8 {
                    i = n / 8 * 8;
                    acc4 = fold8(acc8);
                    sum = Some(hsum4(acc4));
                }
                if n - i >= 4 {
                    let ($acc4, $x4, $y4) = (acc4, load4(&a[i..]), load4(&b[i..]));
                    acc4 = $step;
                    sum = Some(hsum4(acc4));
                    i += 4;
                }
                let mut s = sum.unwrap_or(0.0);
                for ($x, $y) in a[i..].iter().zip(&b[i..]) {
                    s += $tail;
                }
                s
            }

            let n = pairs[0].0.len();
            if pairs.iter().any(|(a, b)| a.len() != n || b.len() != n) {
                return pairs.map(|(a, b)| $single(a, b));
            }
            if n < 8 {
                return pairs.map(|(a, b)| finish(a, b, None));
            }
            let chunks = pairs.map(|(a, b)| (a.as_chunks::<8>().0, b.as_chunks::<8>().0));
            let mut acc = [_mm256_setzero_ps(); 4];
            for i in 0..n / 8 {
                for (slot, (a, b)) in acc.iter_mut().zip(&chunks) {
                    let ($acc8, $x8, $y8) = (*slot, load8(&a[i]), load8(&b[i]));
                    *slot = $main;
                }
            }
            let mut out = [0f32; 4];
            for ((o, (a, b)), acc) in out.iter_mut().zip(pairs).zip(acc) {
                *o = finish(a, b, Some(acc));
            }
            out
        }
    };
}

four_pairs! {
    /// Four `f32_l2_squared` at once.
    fn f32_l2_squared_x4 = f32_l2_squared;
    main |acc, x, y| {
        let d = _mm256_sub_ps(x, y);
        _mm256_add_ps(acc, _mm256_mul_ps(d, d))
    };
    step |acc, x, y| {
        let d = _mm_sub_ps(x, y);
        _mm_fmadd_ps(d, d, acc)
    };
    tail |x, y| {
        let d = x - y;
        d * d
    };
}

four_pairs! {
    /// Four `f32_inner_product` at once.
    fn f32_inner_product_x4 = f32_inner_product;
    main |acc, x, y| _mm256_add_ps(acc, _mm256_mul_ps(x, y));
    step |acc, x, y| _mm_fmadd_ps(x, y, acc);
    tail |x, y| x * y;
}

#[target_feature(enable = "avx,fma")]
fn f32_l1(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (sum, start) = l1_prefix(a, b);
    let mut s = sum.unwrap_or(0.0);
    for (x, y) in a[start..].iter().zip(&b[start..]) {
        s += (x - y).abs();
    }
    s
}

/// FMA in every step, three accumulators `[a·b, a·a, b·b]`.
#[target_feature(enable = "avx,fma")]
fn f32_cosine_parts(a: &[f32], b: &[f32]) -> [f32; 3] {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut ab4 = _mm_setzero_ps();
    let mut aa4 = _mm_setzero_ps();
    let mut bb4 = _mm_setzero_ps();
    let mut sums = [0.0f32; 3];
    let mut i = 0;
    if n >= 8 {
        let (ac, _) = a.as_chunks::<8>();
        let (bc, _) = b.as_chunks::<8>();
        let mut ab = _mm256_setzero_ps();
        let mut aa = _mm256_setzero_ps();
        let mut bb = _mm256_setzero_ps();
        for (ca, cb) in ac.iter().zip(bc) {
            let x = load8(ca);
            let y = load8(cb);
            ab = _mm256_fmadd_ps(x, y, ab);
            aa = _mm256_fmadd_ps(x, x, aa);
            bb = _mm256_fmadd_ps(y, y, bb);
        }
        i = ac.len() * 8;
        ab4 = fold8(ab);
        aa4 = fold8(aa);
        bb4 = fold8(bb);
        sums = [hsum4(ab4), hsum4(aa4), hsum4(bb4)];
    }
    if n - i >= 4 {
        let x = load4(&a[i..]);
        let y = load4(&b[i..]);
        ab4 = _mm_fmadd_ps(x, y, ab4);
        aa4 = _mm_fmadd_ps(x, x, aa4);
        bb4 = _mm_fmadd_ps(y, y, bb4);
        sums = [hsum4(ab4), hsum4(aa4), hsum4(bb4)];
        i += 4;
    }
    for (&x, &y) in a[i..].iter().zip(&b[i..]) {
        sums[0] = x.mul_add(y, sums[0]);
        sums[1] = x.mul_add(x, sums[1]);
        sums[2] = y.mul_add(y, sums[2]);
    }
    sums
}

/// `p1 + p0` of a 2-lane double vector.
#[inline]
#[target_feature(enable = "avx")]
fn hsum2(p: __m128d) -> f64 {
    _mm_cvtsd_f64(_mm_add_sd(_mm_unpackhi_pd(p, p), p))
}

/// Double sum of squares; order documented on `portable::f32_sum_squares`.
#[target_feature(enable = "avx,fma")]
fn f32_sum_squares(x: &[f32]) -> f64 {
    let n = x.len();
    let mut p = _mm_setzero_pd();
    let mut s = 0.0f64;
    let mut i = 0;
    if n >= 8 {
        let (xc, _) = x.as_chunks::<8>();
        let mut acc = _mm256_setzero_pd();
        for c in xc {
            let v = load8(c);
            let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
            let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v));
            let pair = _mm256_fmadd_pd(lo, lo, _mm256_mul_pd(hi, hi));
            acc = _mm256_add_pd(acc, pair);
        }
        i = xc.len() * 8;
        p = _mm_add_pd(_mm256_extractf128_pd::<1>(acc), _mm256_castpd256_pd128(acc));
        s = hsum2(p);
    }
    if n - i >= 4 {
        let v = load4(&x[i..]);
        let lo = _mm_cvtps_pd(v);
        let hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
        let q = _mm_fmadd_pd(lo, lo, p);
        let r = _mm_fmadd_pd(hi, hi, q);
        s = hsum2(r);
        i += 4;
    }
    for &v in &x[i..] {
        let v = f64::from(v);
        s += v * v;
    }
    s
}

// ---------------------------------------------------------------------------
// Half-precision kernels (`Halfvec*F16c`).
// ---------------------------------------------------------------------------

/// Sequential double sum of squares (order of `portable::f16_sum_squares`);
/// only the conversions and squares are vectorised.
#[target_feature(enable = "avx,fma,f16c")]
fn f16_sum_squares(x: &[f16]) -> f64 {
    let (chunks, tail) = x.as_chunks::<8>();
    let mut s = 0.0f64;
    for c in chunks {
        let v = load8h(c);
        let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v));
        let mut sq = [0.0f64; 8];
        let (sq_lo, sq_hi) = sq.split_at_mut(4);
        store4d(sq_lo, _mm256_mul_pd(lo, lo));
        store4d(sq_hi, _mm256_mul_pd(hi, hi));
        for q in sq {
            s += q;
        }
    }
    for &v in tail {
        let v = f64::from(cvt1(v));
        s += v * v;
    }
    s
}

#[inline]
#[target_feature(enable = "avx")]
fn store4d(out: &mut [f64], v: __m256d) {
    let out: &mut [f64; 4] = (&mut out[..4]).try_into().unwrap();
    // SAFETY: `out` is 4 writable doubles; `storeu` needs no alignment.
    unsafe { _mm256_storeu_pd(out.as_mut_ptr(), v) }
}

#[target_feature(enable = "avx,fma,f16c")]
fn f16_l2_squared(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<8>();
    let (bc, bt) = b[..n].as_chunks::<8>();
    let mut acc = _mm256_setzero_ps();
    for (x, y) in ac.iter().zip(bc) {
        let d = _mm256_sub_ps(load8h(x), load8h(y));
        acc = _mm256_fmadd_ps(d, d, acc);
    }
    let mut s = hsum4(fold8(acc));
    for (&x, &y) in at.iter().zip(bt) {
        let d = cvt1(x) - cvt1(y);
        s = d.mul_add(d, s);
    }
    s
}

#[target_feature(enable = "avx,fma,f16c")]
fn f16_inner_product(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<8>();
    let (bc, bt) = b[..n].as_chunks::<8>();
    let mut acc = _mm256_setzero_ps();
    for (x, y) in ac.iter().zip(bc) {
        acc = _mm256_fmadd_ps(load8h(x), load8h(y), acc);
    }
    let mut s = hsum4(fold8(acc));
    for (&x, &y) in at.iter().zip(bt) {
        s = cvt1(x).mul_add(cvt1(y), s);
    }
    s
}

#[target_feature(enable = "avx,fma,f16c")]
fn f16_l1(a: &[f16], b: &[f16]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<8>();
    let (bc, bt) = b[..n].as_chunks::<8>();
    let mut acc = _mm256_setzero_ps();
    for (x, y) in ac.iter().zip(bc) {
        let d = _mm256_sub_ps(load8h(x), load8h(y));
        acc = _mm256_add_ps(acc, _mm256_and_ps(d, abs_mask()));
    }
    let mut s = hsum4(fold8(acc));
    for (&x, &y) in at.iter().zip(bt) {
        s += (cvt1(x) - cvt1(y)).abs();
    }
    s
}

#[target_feature(enable = "avx,fma,f16c")]
fn f16_cosine_parts(a: &[f16], b: &[f16]) -> [f32; 3] {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].as_chunks::<8>();
    let (bc, bt) = b[..n].as_chunks::<8>();
    let mut ab = _mm256_setzero_ps();
    let mut aa = _mm256_setzero_ps();
    let mut bb = _mm256_setzero_ps();
    for (x, y) in ac.iter().zip(bc) {
        let (x, y) = (load8h(x), load8h(y));
        ab = _mm256_fmadd_ps(x, y, ab);
        aa = _mm256_fmadd_ps(x, x, aa);
        bb = _mm256_fmadd_ps(y, y, bb);
    }
    let mut sums = [hsum4(fold8(ab)), hsum4(fold8(aa)), hsum4(fold8(bb))];
    for (&x, &y) in at.iter().zip(bt) {
        let (x, y) = (cvt1(x), cvt1(y));
        sums[0] = x.mul_add(y, sums[0]);
        sums[1] = x.mul_add(x, sums[1]);
        sums[2] = y.mul_add(y, sums[2]);
    }
    sums
}

// ---------------------------------------------------------------------------
// Sparse kernels: the scalar merge loops of `portable.rs` compiled with FMA
// enabled, and SIMD for the trailing part of `b`.
// ---------------------------------------------------------------------------

#[target_feature(enable = "avx,fma")]
fn sparse_l2_squared(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    portable::sparse_l2_squared_with(ai, ax, bi, bx, |x, y| dot_prefix(x, y))
}

#[target_feature(enable = "avx,fma")]
fn sparse_inner_product(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    portable::sparse_inner_product_impl(ai, ax, bi, bx)
}

#[target_feature(enable = "avx,fma")]
fn sparse_l1(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32 {
    portable::sparse_l1_with(ai, ax, bi, bx, |x| abs_prefix(x, x))
}

/// Plain `fn` entry points of this module's kernels, stored in the table that
/// [`super::kernels`] builds only after detecting the features they need.
pub(super) mod entry {
    use half::f16;

    crate::x86::entries::entries! {
        f32_l2_squared(a: &[f32], b: &[f32]) -> f32;
        f32_l2_squared_x4(pairs: [(&[f32], &[f32]); 4]) -> [f32; 4];
        f32_inner_product_x4(pairs: [(&[f32], &[f32]); 4]) -> [f32; 4];
        f32_inner_product(a: &[f32], b: &[f32]) -> f32;
        f32_l1(a: &[f32], b: &[f32]) -> f32;
        f32_cosine_parts(a: &[f32], b: &[f32]) -> [f32; 3];
        f32_sum_squares(x: &[f32]) -> f64;
        f16_sum_squares(x: &[f16]) -> f64;
        f16_l2_squared(a: &[f16], b: &[f16]) -> f32;
        f16_inner_product(a: &[f16], b: &[f16]) -> f32;
        f16_l1(a: &[f16], b: &[f16]) -> f32;
        f16_cosine_parts(a: &[f16], b: &[f16]) -> [f32; 3];
        sparse_l2_squared(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32;
        sparse_inner_product(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32;
        sparse_l1(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f32;
    }
}
