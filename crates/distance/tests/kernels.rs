//! Kernels against the scalar references (within a tolerance) and the SIMD
//! kernels against the portable ones (bit for bit), over every length
//! 0..=64 and sampled lengths up to 2000.

mod common;

use common::*;
use proptest::prelude::*;
use vector_distance::half::f16;
use vector_distance::sparse::SparseRef;
use vector_distance::{bits, f16 as h, f32 as v, reference, sparse, Kernels};

/// Unit roundoff of `f32`.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Every length up to 64, then a sample up to 2000 (including the lengths
/// around the benchmark sizes).
fn lengths() -> Vec<usize> {
    let mut out: Vec<usize> = (0..=64).collect();
    out.extend((65..=2000).step_by(41));
    out.extend([127, 128, 129, 767, 768, 769, 1535, 1536, 1537, 1999, 2000]);
    out
}

/// Error bound factor for a float sum whose longest dependency chain has
/// about `n / 8` additions (the 8-lane loops) or `n` (sequential loops).
fn chain(n: usize) -> f64 {
    (n / 8 + 12) as f64 * 2.0 * U
}

fn seq_chain(n: usize) -> f64 {
    (n + 12) as f64 * 2.0 * U
}

/// Absolute slack for products that underflow in float precision.
fn tiny(n: usize) -> f64 {
    1e-44 * (n as f64 + 1.0)
}

#[track_caller]
fn assert_close(what: &str, n: usize, actual: f64, expected: f64, tol: f64) {
    assert!(
        (actual - expected).abs() <= tol || (actual.is_nan() && expected.is_nan()),
        "{what} (n = {n}): got {actual:e}, reference {expected:e}, tolerance {tol:e}"
    );
}

fn same_bits32(x: f32, y: f32) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

fn same_bits64(x: f64, y: f64) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

// ---------------------------------------------------------------------------
// Tolerance tests against the references.
// ---------------------------------------------------------------------------

fn check_f32_against_reference(a: &[f32], b: &[f32], what: &str) {
    let n = a.len();
    let abs_prod: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x * y).abs()).sum();
    let abs_diff = reference::l1_distance(a, b);
    let l2sq = reference::l2_squared_distance(a, b);
    assert_close(
        &format!("{what} l2_squared"),
        n,
        v::l2_squared_distance(a, b),
        l2sq,
        chain(n) * l2sq + tiny(n),
    );
    assert_close(
        &format!("{what} l2"),
        n,
        v::l2_distance(a, b),
        l2sq.sqrt(),
        chain(n) * l2sq.sqrt() + tiny(n).sqrt(),
    );
    let ip = reference::inner_product(a, b);
    let ip_tol = chain(n) * abs_prod + tiny(n);
    assert_close(&format!("{what} ip"), n, v::inner_product(a, b), ip, ip_tol);
    assert_close(
        &format!("{what} negative ip"),
        n,
        v::negative_inner_product(a, b),
        -ip,
        ip_tol,
    );
    assert_close(
        &format!("{what} l1"),
        n,
        v::l1_distance(a, b),
        abs_diff,
        chain(n) * abs_diff + tiny(n),
    );
    let norm = reference::norm(a);
    assert_close(&format!("{what} norm"), n, v::norm(a), norm, 1e-12 * norm);
    let normalized = v::l2_normalize(a);
    for (i, (&x, &y)) in normalized.iter().zip(a).enumerate() {
        let expected = if norm > 0.0 { f64::from(y) / norm } else { 0.0 };
        assert_close(
            &format!("{what} l2_normalize[{i}]"),
            n,
            f64::from(x),
            expected,
            4.0 * U * expected.abs() + 1e-45,
        );
    }
}

fn check_f32_angles(a: &[f32], b: &[f32], what: &str) {
    let n = a.len();
    let cos_ref = reference::cosine_distance(a, b);
    let ours = v::cosine_distance(a, b);
    if n == 0 || reference::norm(a) == 0.0 || reference::norm(b) == 0.0 {
        assert!(ours.is_nan(), "{what} cosine of a zero vector must be NaN");
    } else {
        assert_close(&format!("{what} cosine"), n, ours, cos_ref, 8.0 * chain(n));
    }
    let abs_prod: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x * y).abs()).sum();
    let err = chain(n) * abs_prod + tiny(n);
    let tol = 2.0 * (2.0 * err).sqrt() / core::f64::consts::PI + 1e-15;
    assert_close(
        &format!("{what} spherical"),
        n,
        v::spherical_distance(a, b),
        reference::spherical_distance(a, b),
        tol,
    );
}

#[test]
fn f32_kernels_match_reference() {
    for n in lengths() {
        for (k, dist) in ["u", "w", "z", "i", "s"].into_iter().enumerate() {
            let seed = (n * 16 + k) as u64;
            let (a, b) = (gen_f32(dist, n, seed), gen_f32(dist, n, seed + 7));
            check_f32_against_reference(&a, &b, dist);
            if dist != "s" {
                // Squares of the tiny values underflow in float precision,
                // which makes the cosine 0/0 by design.
                check_f32_angles(&a, &b, dist);
            }
        }
        let (a, b) = (gen_f32("n", n, 5), gen_f32("n", n, 6));
        check_f32_angles(&a, &b, "n");
    }
}

#[test]
fn f16_kernels_match_reference() {
    for n in lengths() {
        for (k, dist) in ["u", "w", "z", "i", "h"].into_iter().enumerate() {
            let seed = (n * 16 + k) as u64;
            let (a, b) = (gen_f16(dist, n, seed), gen_f16(dist, n, seed + 7));
            let (wa, wb) = (reference::widen(&a), reference::widen(&b));
            let abs_prod: f64 = wa
                .iter()
                .zip(&wb)
                .map(|(x, y)| f64::from(x * y).abs())
                .sum();
            let l2sq = reference::l2_squared_distance(&wa, &wb);
            assert_close(
                &format!("f16 {dist} l2_squared"),
                n,
                h::l2_squared_distance(&a, &b),
                l2sq,
                chain(n) * l2sq,
            );
            assert_close(
                &format!("f16 {dist} l2"),
                n,
                h::l2_distance(&a, &b),
                l2sq.sqrt(),
                chain(n) * l2sq.sqrt(),
            );
            let ip = reference::inner_product(&wa, &wb);
            assert_close(
                &format!("f16 {dist} ip"),
                n,
                h::inner_product(&a, &b),
                ip,
                chain(n) * abs_prod,
            );
            assert_close(
                &format!("f16 {dist} negative ip"),
                n,
                h::negative_inner_product(&a, &b),
                -ip,
                chain(n) * abs_prod,
            );
            let l1 = reference::l1_distance(&wa, &wb);
            assert_close(
                &format!("f16 {dist} l1"),
                n,
                h::l1_distance(&a, &b),
                l1,
                chain(n) * l1,
            );
            let cos = h::cosine_distance(&a, &b);
            if reference::norm(&wa) == 0.0 || reference::norm(&wb) == 0.0 {
                assert!(cos.is_nan(), "f16 cosine of a zero vector must be NaN");
            } else {
                assert_close(
                    &format!("f16 {dist} cosine"),
                    n,
                    cos,
                    reference::cosine_distance(&wa, &wb),
                    8.0 * chain(n),
                );
            }
            let err = chain(n) * abs_prod;
            assert_close(
                &format!("f16 {dist} spherical"),
                n,
                h::spherical_distance(&a, &b),
                reference::spherical_distance(&wa, &wb),
                2.0 * (2.0 * err).sqrt() / core::f64::consts::PI + 1e-15,
            );
            let norm = reference::norm(&wa);
            assert_close(
                &format!("f16 {dist} norm"),
                n,
                h::norm(&a),
                norm,
                1e-12 * norm,
            );
            for (i, (&x, &y)) in h::l2_normalize(&a).iter().zip(&wa).enumerate() {
                let expected = if norm > 0.0 { f64::from(y) / norm } else { 0.0 };
                assert_close(
                    &format!("f16 {dist} l2_normalize[{i}]"),
                    n,
                    f64::from(x.to_f32()),
                    expected,
                    // Half precision, plus the smallest subnormal half.
                    expected.abs() / 1024.0 + 6e-8,
                );
            }
        }
    }
}

fn sparse_pair(pa: &str, pb: &str, k: usize, seed: u64) -> [(usize, Vec<i32>, Vec<f32>); 2] {
    [gen_sparse(pa, k, seed), gen_sparse(pb, k, seed + 1)]
}

const SPARSE_PATTERNS: &[(&str, &str)] = &[
    ("h", "h"),
    ("lo", "h"),
    ("h", "lo"),
    ("hi", "lo"),
    ("lo", "hi"),
    ("f", "h"),
    ("h", "f"),
    ("hw", "hw"),
];

#[test]
fn sparse_kernels_match_reference() {
    for k in lengths().into_iter().filter(|k| *k <= 1000) {
        for (j, &(pa, pb)) in SPARSE_PATTERNS.iter().enumerate() {
            let [(dim, ai, ax), (_, bi, bx)] = sparse_pair(pa, pb, k, (k * 16 + j) as u64);
            let (a, b) = (SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
            let (da, db) = (
                reference::densify(&ai, &ax, dim),
                reference::densify(&bi, &bx, dim),
            );
            let what = format!("sparse {pa}/{pb} k={k}");
            let c = seq_chain(ai.len() + bi.len());
            let abs_prod: f64 = da
                .iter()
                .zip(&db)
                .map(|(x, y)| f64::from(x * y).abs())
                .sum();
            let l2sq = reference::l2_squared_distance(&da, &db);
            assert_close(&what, k, sparse::l2_squared_distance(a, b), l2sq, c * l2sq);
            assert_close(
                &what,
                k,
                sparse::l2_distance(a, b),
                l2sq.sqrt(),
                c * l2sq.sqrt(),
            );
            let ip = reference::inner_product(&da, &db);
            assert_close(&what, k, sparse::inner_product(a, b), ip, c * abs_prod);
            // The sparse references (used by the benchmarks) agree with the
            // dense ones.
            assert_close(
                &what,
                k,
                reference::sparse_inner_product(&ai, &ax, &bi, &bx),
                ip,
                1e-12 * abs_prod,
            );
            assert_close(
                &what,
                k,
                reference::sparse_l2_squared_distance(&ai, &ax, &bi, &bx),
                l2sq,
                1e-12 * l2sq,
            );
            assert_close(
                &what,
                k,
                sparse::negative_inner_product(a, b),
                -ip,
                c * abs_prod,
            );
            let l1 = reference::l1_distance(&da, &db);
            assert_close(&what, k, sparse::l1_distance(a, b), l1, c * l1);
            let cos = sparse::cosine_distance(a, b);
            if ai.is_empty() || bi.is_empty() {
                assert!(cos.is_nan(), "{what}: cosine with an empty vector is NaN");
            } else {
                assert_close(&what, k, cos, reference::cosine_distance(&da, &db), 8.0 * c);
            }
            let norm = reference::norm(&da);
            assert_close(&what, k, sparse::norm(a), norm, 1e-12 * norm);
            let (ni, nx) = sparse::l2_normalize(a);
            assert_eq!(ni, ai, "{what}: normalisation keeps the indices");
            for (&x, &y) in nx.iter().zip(&ax) {
                let expected = f64::from(y) / norm;
                assert_close(&what, k, f64::from(x), expected, 4.0 * U * expected.abs());
            }
        }
    }
}

/// pgvector's merge loops as `sparsevec.c` writes them (for every element of
/// `a`, an inner loop over `b` restarting at `bpos`), without the trailing
/// elements of `b` after the last index of `a`: `[l2 squared, inner product,
/// l1]` in float, with FMA where the reference build contracted.
#[allow(clippy::mut_range_bound)]
fn pgvector_sparse_merges(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> [f32; 3] {
    let (mut l2, mut ip, mut l1) = (0.0f32, 0.0f32, 0.0f32);
    let mut bpos = 0;
    for (&a, &av) in ai.iter().zip(ax) {
        let mut b = -1;
        for j in bpos..bi.len() {
            b = bi[j];
            if a == b {
                let d = av - bx[j];
                l2 += d * d;
                ip = av.mul_add(bx[j], ip);
                l1 += d.abs();
            } else if a > b {
                l2 += bx[j] * bx[j];
                l1 += bx[j].abs();
            }
            if a >= b {
                bpos = j + 1;
            }
            if b >= a {
                break;
            }
        }
        if a != b {
            l2 = av.mul_add(av, l2);
            l1 += av.abs();
        }
    }
    assert_eq!(bpos, bi.len(), "the inputs have no trailing elements of b");
    [l2, ip, l1]
}

#[test]
fn sparse_merges_follow_pgvector_loops() {
    for k in lengths().into_iter().filter(|k| *k <= 1000) {
        for (j, &(pa, pb)) in SPARSE_PATTERNS.iter().enumerate() {
            let [(dim, mut ai, mut ax), (_, mut bi, mut bx)] =
                sparse_pair(pa, pb, k, (k * 16 + j) as u64 + 7);
            // A shared last index leaves no trailing part of `b`.
            ai.push(dim as i32);
            ax.push(0.5);
            bi.push(dim as i32);
            bx.push(-0.25);
            let (a, b) = (SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
            let [l2, ip, l1] = pgvector_sparse_merges(&ai, &ax, &bi, &bx);
            let what = format!("sparse {pa}/{pb} k={k}");
            assert!(
                same_bits32(sparse::l2_squared_distance(a, b) as f32, l2),
                "{what}"
            );
            assert!(
                same_bits32(sparse::inner_product(a, b) as f32, ip),
                "{what}"
            );
            assert!(same_bits32(sparse::l1_distance(a, b) as f32, l1), "{what}");
            // The same with the roles swapped.
            let [l2, ip, l1] = pgvector_sparse_merges(&bi, &bx, &ai, &ax);
            assert!(
                same_bits32(sparse::l2_squared_distance(b, a) as f32, l2),
                "{what}"
            );
            assert!(
                same_bits32(sparse::inner_product(b, a) as f32, ip),
                "{what}"
            );
            assert!(same_bits32(sparse::l1_distance(b, a) as f32, l1), "{what}");
        }
    }
}

#[test]
fn bit_kernels_match_reference() {
    let mut sizes: Vec<usize> = (0..=64).collect();
    sizes.extend((65..=2000).step_by(37));
    sizes.extend([511, 512, 513, 1024, 4095, 4096, 4097, 16000]);
    for n in sizes {
        for (j, (pa, pb)) in [("h", "h"), ("s", "h"), ("0", "s"), ("1", "h"), ("0", "0")]
            .into_iter()
            .enumerate()
        {
            let seed = (n * 8 + j) as u64;
            let (a, b) = (gen_bits(pa, n, seed), gen_bits(pb, n, seed + 1));
            assert_eq!(
                bits::hamming_distance(&a, &b, n).to_bits(),
                reference::hamming_distance(&a, &b, n).to_bits(),
                "hamming n={n} {pa}/{pb}"
            );
            let (ours, theirs) = (
                bits::jaccard_distance(&a, &b, n),
                reference::jaccard_distance(&a, &b, n),
            );
            // Same integer counts; the final division may be written
            // differently, so allow one rounding.
            assert_close("jaccard", n, ours, theirs, 2.0 * f64::EPSILON);
        }
    }
}

// ---------------------------------------------------------------------------
// SIMD kernels against the portable ones, bit for bit.
// ---------------------------------------------------------------------------

fn simd() -> Option<&'static Kernels> {
    let k = vector_distance::simd_kernels();
    if k.is_none() {
        eprintln!("no SIMD kernels on this CPU; skipping the comparison");
    }
    k
}

fn compare_f32(s: &Kernels, p: &Kernels, a: &[f32], b: &[f32], what: &str) {
    let n = a.len();
    let pairs = [
        ("l2sq", (s.f32_l2_squared)(a, b), (p.f32_l2_squared)(a, b)),
        (
            "ip",
            (s.f32_inner_product)(a, b),
            (p.f32_inner_product)(a, b),
        ),
        ("l1", (s.f32_l1)(a, b), (p.f32_l1)(a, b)),
    ];
    for (name, x, y) in pairs {
        assert!(
            same_bits32(x, y),
            "f32 {name} {what} n={n}: simd {x:e} portable {y:e}"
        );
    }
    let (x, y) = ((s.f32_cosine_parts)(a, b), (p.f32_cosine_parts)(a, b));
    assert!(
        x.iter().zip(&y).all(|(x, y)| same_bits32(*x, *y)),
        "f32 cosine parts {what} n={n}: {x:?} vs {y:?}"
    );
    let (x, y) = ((s.f32_sum_squares)(a), (p.f32_sum_squares)(a));
    assert!(
        same_bits64(x, y),
        "f32 sum of squares {what} n={n}: {x:e} vs {y:e}"
    );
}

fn compare_f16(s: &Kernels, p: &Kernels, a: &[f16], b: &[f16], what: &str) {
    let n = a.len();
    let pairs = [
        ("l2sq", (s.f16_l2_squared)(a, b), (p.f16_l2_squared)(a, b)),
        (
            "ip",
            (s.f16_inner_product)(a, b),
            (p.f16_inner_product)(a, b),
        ),
        ("l1", (s.f16_l1)(a, b), (p.f16_l1)(a, b)),
    ];
    for (name, x, y) in pairs {
        assert!(
            same_bits32(x, y),
            "f16 {name} {what} n={n}: simd {x:e} portable {y:e}"
        );
    }
    let (x, y) = ((s.f16_cosine_parts)(a, b), (p.f16_cosine_parts)(a, b));
    assert!(
        x.iter().zip(&y).all(|(x, y)| same_bits32(*x, *y)),
        "f16 cosine parts {what} n={n}: {x:?} vs {y:?}"
    );
    let (x, y) = ((s.f16_sum_squares)(a), (p.f16_sum_squares)(a));
    assert!(
        same_bits64(x, y),
        "f16 sum of squares {what} n={n}: {x:e} vs {y:e}"
    );
}

fn compare_sparse(s: &Kernels, p: &Kernels, ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) {
    let pairs = [
        (
            "l2sq",
            (s.sparse_l2_squared)(ai, ax, bi, bx),
            (p.sparse_l2_squared)(ai, ax, bi, bx),
        ),
        (
            "ip",
            (s.sparse_inner_product)(ai, ax, bi, bx),
            (p.sparse_inner_product)(ai, ax, bi, bx),
        ),
        (
            "l1",
            (s.sparse_l1)(ai, ax, bi, bx),
            (p.sparse_l1)(ai, ax, bi, bx),
        ),
    ];
    for (name, x, y) in pairs {
        assert!(
            same_bits32(x, y),
            "sparse {name} nnz={}/{}: simd {x:e} portable {y:e}",
            ai.len(),
            bi.len()
        );
    }
}

#[test]
fn simd_matches_portable_dense() {
    let Some(s) = simd() else { return };
    let p = vector_distance::portable_kernels();
    for n in lengths() {
        for (k, dist) in ["u", "w", "z", "i", "s", "h", "n"].into_iter().enumerate() {
            let seed = (n * 16 + k) as u64;
            compare_f32(
                s,
                p,
                &gen_f32(dist, n, seed),
                &gen_f32(dist, n, seed + 3),
                dist,
            );
            compare_f16(
                s,
                p,
                &gen_f16(dist, n, seed),
                &gen_f16(dist, n, seed + 3),
                dist,
            );
        }
        // Mixed magnitudes (overflow to infinity and NaN from inf - inf).
        let (a, b) = (gen_f32("h", n, 1), gen_f32("u", n, 2));
        compare_f32(s, p, &a, &b, "h/u");
        compare_f32(s, p, &b, &a, "u/h");
    }
}

#[test]
fn simd_matches_portable_sparse() {
    let Some(s) = simd() else { return };
    let p = vector_distance::portable_kernels();
    for k in lengths() {
        for (j, &(pa, pb)) in SPARSE_PATTERNS.iter().enumerate() {
            let [(_, ai, ax), (_, bi, bx)] = sparse_pair(pa, pb, k, (k * 16 + j) as u64);
            compare_sparse(s, p, &ai, &ax, &bi, &bx);
        }
    }
}

#[test]
fn simd_matches_portable_bits() {
    let Some(s) = simd() else { return };
    let p = vector_distance::portable_kernels();
    for n in (0..=1100).step_by(7).chain([4096, 16000]) {
        let (a, b) = (gen_bits("h", n, n as u64), gen_bits("s", n, n as u64 + 1));
        assert_eq!((s.bits_hamming)(&a, &b), (p.bits_hamming)(&a, &b), "n={n}");
        assert_eq!(
            (s.bits_jaccard_counts)(&a, &b),
            (p.bits_jaccard_counts)(&a, &b),
            "n={n}"
        );
    }
}

#[test]
fn dispatch_is_cached_and_simd_on_x86_64() {
    let first = vector_distance::active_kernels() as *const Kernels;
    let second = vector_distance::active_kernels() as *const Kernels;
    assert_eq!(first, second);
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
    {
        assert_ne!(vector_distance::active_kernels().name, "portable");
    }
}

// ---------------------------------------------------------------------------
// Property tests.
// ---------------------------------------------------------------------------

fn element() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        4 => -1000.0f32..1000.0,
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => (-1.0f32..1.0).prop_map(|x| x * 1e-38),
    ]
}

fn any_finite() -> impl Strategy<Value = f32> + Clone {
    any::<f32>().prop_filter("finite", |x| x.is_finite())
}

fn pair(elem: impl Strategy<Value = f32> + Clone) -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    (0usize..=2000).prop_flat_map(move |n| {
        (
            prop::collection::vec(elem.clone(), n),
            prop::collection::vec(elem.clone(), n),
        )
    })
}

fn sparsify(dense: &[f32]) -> (Vec<i32>, Vec<f32>) {
    dense
        .iter()
        .enumerate()
        .filter(|(_, x)| **x != 0.0)
        .map(|(i, x)| (i as i32, *x))
        .unzip()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn prop_simd_matches_portable_f32((a, b) in pair(any_finite())) {
        if let Some(s) = vector_distance::simd_kernels() {
            compare_f32(s, vector_distance::portable_kernels(), &a, &b, "proptest");
        }
    }

    #[test]
    fn prop_simd_matches_portable_f16((a, b) in pair(any_finite())) {
        if let Some(s) = vector_distance::simd_kernels() {
            let a: Vec<f16> = a.iter().map(|x| f16::from_f32(*x)).collect();
            let b: Vec<f16> = b.iter().map(|x| f16::from_f32(*x)).collect();
            // Out-of-range values become infinities, which halfvec rejects.
            let a: Vec<f16> = a.into_iter().map(|x| if x.is_finite() { x } else { f16::MAX }).collect();
            let b: Vec<f16> = b.into_iter().map(|x| if x.is_finite() { x } else { f16::MIN }).collect();
            compare_f16(s, vector_distance::portable_kernels(), &a, &b, "proptest");
        }
    }

    #[test]
    fn prop_simd_matches_portable_sparse((a, b) in pair(prop_oneof![2 => Just(0.0f32), 1 => any_finite()])) {
        if let Some(s) = vector_distance::simd_kernels() {
            let ((ai, ax), (bi, bx)) = (sparsify(&a), sparsify(&b));
            compare_sparse(s, vector_distance::portable_kernels(), &ai, &ax, &bi, &bx);
        }
    }

    #[test]
    fn prop_f32_close_to_reference((a, b) in pair(element())) {
        check_f32_against_reference(&a, &b, "proptest");
    }

    #[test]
    fn prop_sparse_equals_dense_reference((a, b) in pair(prop_oneof![2 => Just(0.0f32), 1 => -10.0f32..10.0])) {
        let ((ai, ax), (bi, bx)) = (sparsify(&a), sparsify(&b));
        let (sa, sb) = (SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
        let c = seq_chain(ai.len() + bi.len());
        let l2sq = reference::l2_squared_distance(&a, &b);
        prop_assert!((sparse::l2_squared_distance(sa, sb) - l2sq).abs() <= c * l2sq + 1e-30);
        let abs_prod: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y).abs()).sum();
        let ip = reference::inner_product(&a, &b);
        prop_assert!((sparse::inner_product(sa, sb) - ip).abs() <= c * abs_prod + 1e-30);
        let l1 = reference::l1_distance(&a, &b);
        prop_assert!((sparse::l1_distance(sa, sb) - l1).abs() <= c * l1 + 1e-30);
    }

    #[test]
    fn prop_bits_match_reference(a in prop::collection::vec(any::<u8>(), 0..600), seed in any::<u64>()) {
        let n = a.len() * 8;
        let b = gen_bits("h", n, seed);
        prop_assert_eq!(bits::hamming_distance(&a, &b, n), reference::hamming_distance(&a, &b, n));
        let (x, y) = (bits::jaccard_distance(&a, &b, n), reference::jaccard_distance(&a, &b, n));
        prop_assert!((x - y).abs() <= 2.0 * f64::EPSILON);
    }
}

/// The four-pair kernels give each pair the single kernel's bits, on both tables, for every
/// length (equal or not) and every kind of data.
#[test]
fn x4_kernels_match_single_pairs() {
    let tables: Vec<&Kernels> = std::iter::once(vector_distance::portable_kernels())
        .chain(vector_distance::simd_kernels())
        .collect();
    let kinds = ["u", "w", "z", "i", "s", "h", "n"];
    for k in &tables {
        for n in lengths() {
            let v: Vec<Vec<f32>> = (0..8)
                .map(|i| gen_f32(kinds[i % kinds.len()], n, (n * 31 + i) as u64))
                .collect();
            let pairs = [
                (&v[0][..], &v[1][..]),
                (&v[2][..], &v[3][..]),
                (&v[4][..], &v[5][..]),
                (&v[6][..], &v[7][..]),
            ];
            // Unequal lengths take the single kernel for each pair.
            let short = &v[7][..n / 2];
            let mixed = [
                (&v[0][..], &v[1][..]),
                (short, short),
                (&v[4][..], &v[5][..]),
                (&v[2][..], &v[3][..]),
            ];
            let kernels = [
                ("l2", k.f32_l2_squared_x4, k.f32_l2_squared),
                ("ip", k.f32_inner_product_x4, k.f32_inner_product),
            ];
            for (name, x4, single) in kernels {
                for (set, pairs) in [("equal", pairs), ("mixed", mixed)] {
                    let four = x4(pairs);
                    for (i, (a, b)) in pairs.iter().enumerate() {
                        let one = single(a, b);
                        assert!(
                            same_bits32(four[i], one),
                            "{} {name} n={n} {set} pair {i}: x4 {:e} single {one:e}",
                            k.name,
                            four[i]
                        );
                    }
                }
            }
        }
    }
}
