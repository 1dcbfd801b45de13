//! The estimator: unbiased over rotations, within its error bound as often as the bound says,
//! multi-bit codes more accurate than one bit, and the grid search for extended codes close to
//! the exact optimum.

mod common;

use common::{clustered, mean, normalized, Normal};
use vector_rabitq::code::best_cosine_exact;
use vector_rabitq::{Factors, Metric, Quantizer};

fn coded(q: &Quantizer, v: &[f32]) -> (Vec<u8>, Factors) {
    let mut code = vec![0u8; q.code_bytes()];
    let factors = q.encode(v, &mut code);
    (code, factors)
}

/// Over many rotations, the mean error of the estimate is within a few standard errors of 0.
#[test]
fn unbiased_over_rotations() {
    for (bits, metric) in [
        (1, Metric::L2Squared),
        (1, Metric::NegativeInnerProduct),
        (4, Metric::L2Squared),
    ] {
        let dims = 128;
        let mut rng = Normal::new(11);
        let (o, x) = (rng.vector(dims), rng.vector(dims));
        let centroid = vec![0f32; dims];
        let trials = 4000;
        let mut errors = Vec::with_capacity(trials);
        for seed in 0..trials as u64 {
            let q = Quantizer::new(dims, bits, metric, centroid.clone(), seed);
            let (code, f) = coded(&q, &o);
            let prepared = q.prepare(&x);
            errors.push(q.distance(&prepared, &code, &f) - q.exact_distance(&o, &x));
        }
        let n = errors.len() as f64;
        let mean_error = errors.iter().sum::<f64>() / n;
        let sd = (errors.iter().map(|e| (e - mean_error).powi(2)).sum::<f64>() / n).sqrt();
        let standard_error = sd / n.sqrt();
        assert!(
            sd > 0.0,
            "{bits} {metric:?}: no error at all is not an estimate"
        );
        assert!(
            mean_error.abs() < 4.0 * standard_error,
            "{bits} bits {metric:?}: mean error {mean_error} against standard error {standard_error}"
        );
    }
}

/// The error, divided by its predicted standard deviation, behaves like a standard normal: the
/// bound at ε = 3 holds for at least 99% of pairs, and the spread is neither far smaller nor
/// larger than predicted.
fn check_bound(vectors: &[Vec<f32>], queries: &[Vec<f32>], metric: Metric, bits: u32) {
    let dims = vectors[0].len();
    let q = Quantizer::new(dims, bits, metric, mean(vectors), 42);
    let codes: Vec<_> = vectors.iter().map(|v| coded(&q, v)).collect();
    let (mut outside, mut total, mut z_sq) = (0usize, 0usize, 0f64);
    for query in queries {
        let prepared = q.prepare(query);
        for (v, (code, f)) in vectors.iter().zip(&codes) {
            let error = q.distance(&prepared, code, f) - q.exact_distance(v, query);
            let sd = q.bound(&prepared, code, f, 1.0);
            if error.abs() > q.bound(&prepared, code, f, 3.0) {
                outside += 1;
            }
            // The search's bound, without the code, is never tighter.
            assert!(
                q.error_bound(&prepared, f, 3.0) >= q.bound(&prepared, code, f, 3.0) * (1.0 - 1e-9)
            );
            z_sq += (error / sd).powi(2);
            total += 1;
        }
    }
    let rms_z = (z_sq / total as f64).sqrt();
    assert!(
        outside * 100 <= total,
        "{metric:?} {bits} bits: {outside} of {total} outside the bound"
    );
    assert!(
        (0.3..=1.2).contains(&rms_z),
        "{metric:?} {bits} bits: error / predicted sd has rms {rms_z}"
    );
}

#[test]
fn within_the_bound_on_gaussian_data() {
    let mut rng = Normal::new(3);
    let vectors: Vec<Vec<f32>> = (0..400).map(|_| rng.vector(384)).collect();
    let queries: Vec<Vec<f32>> = (0..20).map(|_| rng.vector(384)).collect();
    for bits in [1, 2, 4] {
        check_bound(&vectors, &queries, Metric::L2Squared, bits);
        check_bound(&vectors, &queries, Metric::NegativeInnerProduct, bits);
    }
}

#[test]
fn within_the_bound_on_clustered_data() {
    let data = clustered(420, 256, 10, 0.3, 5);
    let (vectors, queries) = data.split_at(400);
    for bits in [1, 4] {
        check_bound(vectors, queries, Metric::L2Squared, bits);
        let unit: Vec<Vec<f32>> = vectors.iter().map(|v| normalized(v)).collect();
        let unit_queries: Vec<Vec<f32>> = queries.iter().map(|v| normalized(v)).collect();
        check_bound(&unit, &unit_queries, Metric::NegativeInnerProduct, bits);
    }
}

/// Root mean square of the estimate's error over all pairs, relative to the spread of the true
/// distances.
fn relative_rms_error(
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    bits: u32,
    centroid: Vec<f32>,
) -> f64 {
    let dims = vectors[0].len();
    let q = Quantizer::new(dims, bits, Metric::L2Squared, centroid, 9);
    let codes: Vec<_> = vectors.iter().map(|v| coded(&q, v)).collect();
    let (mut err_sq, mut exact, mut exact_sq, mut n) = (0f64, 0f64, 0f64, 0f64);
    for query in queries {
        let prepared = q.prepare(query);
        for (v, (code, f)) in vectors.iter().zip(&codes) {
            let d = q.exact_distance(v, query);
            err_sq += (q.distance(&prepared, code, f) - d).powi(2);
            exact += d;
            exact_sq += d * d;
            n += 1.0;
        }
    }
    let spread = (exact_sq / n - (exact / n).powi(2)).sqrt();
    (err_sq / n).sqrt() / spread
}

#[test]
fn more_bits_and_a_centroid_estimate_better() {
    let data = clustered(330, 192, 8, 0.5, 17);
    let (vectors, queries) = data.split_at(300);
    let centroid = mean(vectors);
    let zero = vec![0f32; 192];
    let one = relative_rms_error(vectors, queries, 1, centroid.clone());
    let two = relative_rms_error(vectors, queries, 2, centroid.clone());
    let four = relative_rms_error(vectors, queries, 4, centroid.clone());
    let uncentred = relative_rms_error(vectors, queries, 1, zero);
    assert!(two < 0.75 * one, "2 bits {two} against 1 bit {one}");
    assert!(four < 0.3 * one, "4 bits {four} against 1 bit {one}");
    assert!(
        one < 0.5 * uncentred,
        "centred {one} against uncentred {uncentred}"
    );
}

#[test]
fn code_to_code_estimates_follow_the_exact_distances() {
    let data = clustered(300, 256, 6, 0.4, 23);
    for (bits, limit) in [(1, 0.35), (4, 0.05)] {
        for metric in [Metric::L2Squared, Metric::NegativeInnerProduct] {
            let q = Quantizer::new(256, bits, metric, mean(&data), 4);
            let codes: Vec<_> = data.iter().map(|v| coded(&q, v)).collect();
            let (mut err_sq, mut exact, mut exact_sq, mut n) = (0f64, 0f64, 0f64, 0f64);
            for i in 0..60 {
                for j in 60..data.len() {
                    let (a, b) = (&codes[i], &codes[j]);
                    let estimate = q.pair_distance((&a.0, &a.1), (&b.0, &b.1));
                    let d = q.exact_distance(&data[i], &data[j]);
                    err_sq += (estimate - d).powi(2);
                    exact += d;
                    exact_sq += d * d;
                    n += 1.0;
                }
            }
            let spread = (exact_sq / n - (exact / n).powi(2)).sqrt();
            let relative = (err_sq / n).sqrt() / spread;
            assert!(relative < limit, "{bits} bits {metric:?}: {relative}");
        }
    }
}

#[test]
fn grid_search_is_close_to_the_exact_optimum() {
    let mut rng = Normal::new(31);
    for dims in [3, 64, 384, 768] {
        for bits in [2u32, 4, 8] {
            let dims_f = dims as f64;
            let v = rng.vector(dims);
            // The code is chosen for the rotated vector.
            let mut rotated = v.clone();
            vector_rabitq::Rotation::new(dims, 1).apply(&mut rotated);
            let norm = rotated
                .iter()
                .map(|&x| f64::from(x).powi(2))
                .sum::<f64>()
                .sqrt();
            let a: Vec<f32> = rotated
                .iter()
                .map(|&x| (f64::from(x).abs() / norm) as f32)
                .collect();
            let max_k = (1u32 << (bits - 1)) - 1;
            let exact = best_cosine_exact(&a, max_k);
            let q = Quantizer::new(dims, bits, Metric::L2Squared, vec![0.0; dims], 1);
            let (_, f) = coded(&q, &v);
            // The code's cosine with the residual, from its factors: error = ρ·√(1/cos²−1)/√(D−1).
            let spread = f64::from(f.error) / f64::from(f.norm) * (dims_f - 1.0).max(1.0).sqrt();
            let cos = 1.0 / (1.0 + spread * spread).sqrt();
            assert!(
                cos > exact * 0.998,
                "{dims} dims {bits} bits: {cos} against {exact}"
            );
            assert!(
                cos <= exact * (1.0 + 1e-4),
                "{dims} {bits}: {cos} above the optimum {exact}"
            );
        }
    }
}

#[test]
fn degenerate_vectors() {
    // The centroid itself, a zero vector, one dimension: exact or finite, never NaN.
    let q = Quantizer::new(1, 1, Metric::L2Squared, vec![0.5], 3);
    let (code, f) = coded(&q, &[0.5]);
    let prepared = q.prepare(&[2.0]);
    assert!((q.distance(&prepared, &code, &f) - 2.25).abs() < 1e-6);
    let (code, f) = coded(&q, &[-1.0]);
    assert!((q.distance(&prepared, &code, &f) - 9.0).abs() < 1e-4);
    let q = Quantizer::new(5, 4, Metric::NegativeInnerProduct, vec![0.0; 5], 3);
    let (code, f) = coded(&q, &[0.0; 5]);
    let prepared = q.prepare(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(q.distance(&prepared, &code, &f), 0.0);
    let zero_query = q.prepare(&[0.0; 5]);
    let (code, f) = coded(&q, &[1.0, -1.0, 0.5, 0.0, 2.0]);
    assert_eq!(q.distance(&zero_query, &code, &f), 0.0);
}

#[test]
fn codes_round_trip_through_the_bit_planes() {
    let mut rng = Normal::new(8);
    for bits in 1..=8u32 {
        let dims = 100;
        let q = Quantizer::new(dims, bits, Metric::L2Squared, vec![0.0; dims], 2);
        let (code, _) = coded(&q, &rng.vector(dims));
        let levels = q.levels(&code);
        assert_eq!(levels.len(), dims);
        assert!(levels.iter().all(|&u| u32::from(u) < (1 << bits)));
        let mut again = vec![0u8; q.code_bytes()];
        vector_rabitq::code::pack(&levels, bits, q.words(), &mut again);
        assert_eq!(again, code, "{bits}");
        // Padding bits beyond the dimensions stay zero.
        let plane = 8 * q.words();
        for j in 0..bits as usize {
            assert_eq!(code[j * plane + plane - 1] & 0xf0, 0, "{bits}: plane {j}");
        }
    }
}

/// The byte layout is the bit planes' 8-bit quantizer in another layout: equal levels, factors,
/// estimates, bounds and code-to-code estimates, bit for bit, so a build comparing byte codes
/// links the graph it would link on bit planes.
#[test]
fn byte_codes_estimate_as_eight_bit_planes_do() {
    let mut rng = Normal::new(21);
    for dims in [1usize, 63, 100, 384, 771] {
        for metric in [Metric::L2Squared, Metric::NegativeInnerProduct] {
            let centroid = rng.vector(dims);
            let planes = Quantizer::new(dims, 8, metric, centroid.clone(), 77);
            let bytes = Quantizer::with_byte_codes(dims, metric, centroid, 77);
            assert_eq!(bytes.layout(), vector_rabitq::Layout::Bytes);
            assert_eq!(bytes.code_bytes(), planes.code_bytes());
            let rows: Vec<Vec<f32>> = (0..6).map(|_| rng.vector(dims)).collect();
            let coded_p: Vec<_> = rows.iter().map(|v| coded(&planes, v)).collect();
            let coded_b: Vec<_> = rows.iter().map(|v| coded(&bytes, v)).collect();
            for ((cp, fp), (cb, fb)) in coded_p.iter().zip(&coded_b) {
                assert_eq!(fp, fb, "factors, {dims} dims");
                assert_eq!(planes.levels(cp), bytes.levels(cb), "levels, {dims} dims");
                assert!(cb[dims..].iter().all(|&b| b == 0), "padding, {dims} dims");
            }
            let query = rng.vector(dims);
            let (qp, qb) = (planes.prepare(&query), bytes.prepare(&query));
            for (i, ((cp, fp), (cb, fb))) in coded_p.iter().zip(&coded_b).enumerate() {
                let same = |a: f64, b: f64, what: &str| {
                    assert_eq!(a.to_bits(), b.to_bits(), "{what}, {dims} dims, {metric:?}")
                };
                same(
                    planes.distance(&qp, cp, fp),
                    bytes.distance(&qb, cb, fb),
                    "distance",
                );
                same(
                    planes.bound(&qp, cp, fp, 4.0),
                    bytes.bound(&qb, cb, fb, 4.0),
                    "bound",
                );
                same(
                    planes.error_bound(&qp, fp, 4.0),
                    bytes.error_bound(&qb, fb, 4.0),
                    "error bound",
                );
                let (cp2, fp2) = &coded_p[(i + 1) % rows.len()];
                let (cb2, fb2) = &coded_b[(i + 1) % rows.len()];
                same(
                    planes.pair_distance((cp, fp), (cp2, fp2)),
                    bytes.pair_distance((cb, fb), (cb2, fb2)),
                    "pair distance",
                );
            }
        }
    }
}

/// A residual rotated once codes as `encode` does, for quantizers of one centroid and seed at
/// every width and layout, and another rotation's residual is refused.
#[test]
fn one_residual_serves_every_width() {
    let mut rng = Normal::new(31);
    let dims = 200;
    let centroid = rng.vector(dims);
    let v = rng.vector(dims);
    let base = Quantizer::new(dims, 4, Metric::L2Squared, centroid.clone(), 5);
    let residual = base.residual(&v);
    let mut quantizers: Vec<Quantizer> = [1, 2, 4, 8]
        .iter()
        .map(|&b| Quantizer::new(dims, b, Metric::L2Squared, centroid.clone(), 5))
        .collect();
    quantizers.push(Quantizer::with_byte_codes(
        dims,
        Metric::L2Squared,
        centroid.clone(),
        5,
    ));
    let row = rng.vector(dims);
    for q in &quantizers {
        let (code, f) = coded(q, &v);
        let mut again = vec![0u8; q.code_bytes()];
        assert_eq!(q.encode_residual(&residual, &mut again), f);
        assert_eq!(again, code);
        // As a query too, under both metrics' constants.
        let (rc, rf) = coded(q, &row);
        let (a, b) = (q.prepare(&v), q.prepare_residual(&residual));
        assert_eq!(
            q.distance(&a, &rc, &rf).to_bits(),
            q.distance(&b, &rc, &rf).to_bits()
        );
    }
    let ip = Quantizer::new(dims, 4, Metric::NegativeInnerProduct, centroid.clone(), 5);
    let (rc, rf) = coded(&ip, &row);
    let (a, b) = (ip.prepare(&v), ip.prepare_residual(&base.residual(&v)));
    assert_eq!(
        ip.distance(&a, &rc, &rf).to_bits(),
        ip.distance(&b, &rc, &rf).to_bits()
    );
    let other = Quantizer::new(dims, 4, Metric::L2Squared, centroid, 6);
    let refused = std::panic::catch_unwind(|| {
        let mut code = vec![0u8; other.code_bytes()];
        other.encode_residual(&residual, &mut code)
    });
    assert!(refused.is_err());
}
