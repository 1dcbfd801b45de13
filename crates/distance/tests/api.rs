//! Edge cases of the public functions, with values checked by hand against
//! pgvector 0.8.6 (see also the golden tests).

use vector_distance::half::f16;
use vector_distance::sparse::SparseRef;
use vector_distance::{bits, f16 as h, f32 as v, sparse};

#[test]
fn small_exact_values() {
    // select l2_distance('[1,2,3]'::vector, '[4,5,6.5]') = 5.5
    assert_eq!(v::l2_distance(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.5]), 5.5);
    assert_eq!(v::l2_squared_distance(&[1.0, 2.0], &[3.0, 5.0]), 13.0);
    assert_eq!(v::inner_product(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
    assert_eq!(
        v::negative_inner_product(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]),
        -32.0
    );
    assert_eq!(v::l1_distance(&[1.0, -2.0], &[-1.0, 2.0]), 6.0);
    assert_eq!(v::norm(&[3.0, 4.0]), 5.0);
    assert_eq!(v::l2_normalize(&[3.0, 4.0]), vec![0.6, 0.8]);
}

#[test]
fn negative_inner_product_of_orthogonal_vectors_is_negative_zero() {
    // pgvector prints -0 here.
    let x = v::negative_inner_product(&[1.0, 0.0], &[0.0, 1.0]);
    assert_eq!(x.to_bits(), (-0.0f64).to_bits());
    let x = h::negative_inner_product(&[f16::ONE, f16::ZERO], &[f16::ZERO, f16::ONE]);
    assert_eq!(x.to_bits(), (-0.0f64).to_bits());
    let (ai, ax, bi, bx) = ([1], [1.0], [0], [1.0]);
    let x = sparse::negative_inner_product(SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
    assert_eq!(x.to_bits(), (-0.0f64).to_bits());
}

#[test]
fn cosine_of_zero_vector_is_nan_and_parallel_is_clamped() {
    assert!(v::cosine_distance(&[0.0, 0.0], &[1.0, 1.0]).is_nan());
    assert!(h::cosine_distance(&[f16::ZERO], &[f16::ONE]).is_nan());
    let empty = SparseRef::new(&[], &[]);
    assert!(sparse::cosine_distance(empty, empty).is_nan());
    let d = v::cosine_distance(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]);
    assert!((0.0..1e-7).contains(&d), "{d}");
    let d = v::cosine_distance(&[1.0, 2.0, 3.0], &[-2.0, -4.0, -6.0]);
    assert!((2.0 - 1e-7..=2.0).contains(&d), "{d}");
}

#[test]
fn spherical_distance_clamps_before_acos() {
    assert_eq!(v::spherical_distance(&[2.0, 0.0], &[1.0, 0.0]), 0.0);
    assert_eq!(v::spherical_distance(&[-2.0, 0.0], &[1.0, 0.0]), 1.0);
    assert_eq!(v::spherical_distance(&[1.0, 0.0], &[0.0, 1.0]), 0.5);
}

#[test]
fn normalising_a_zero_vector_gives_zeros() {
    assert_eq!(v::l2_normalize(&[0.0, 0.0]), vec![0.0, 0.0]);
    assert_eq!(h::l2_normalize(&[f16::ZERO]), vec![f16::ZERO]);
    let empty = SparseRef::new(&[], &[]);
    assert_eq!(sparse::l2_normalize(empty), (vec![], vec![]));
}

#[test]
fn sparse_normalisation_drops_underflowing_values() {
    let (i, x) = ([0, 1], [1e-45f32, 3e38]);
    let (ni, nx) = sparse::l2_normalize(SparseRef::new(&i, &x));
    assert_eq!(ni, vec![1]);
    assert_eq!(nx, vec![1.0]);
}

#[test]
fn overflow_gives_infinity_and_nan_like_pgvector() {
    assert_eq!(v::l2_squared_distance(&[3e38], &[-3e38]), f64::INFINITY);
    // [3e38, 3e38]·[-3e38, 3e38]: -inf + inf.
    assert!(v::inner_product(&[3e38, 3e38], &[-3e38, 3e38]).is_nan());
}

#[test]
fn bit_distances() {
    let (a, b) = ([0b1010_0000u8], [0b0110_0000u8]);
    assert_eq!(bits::hamming_distance(&a, &b, 3), 2.0);
    // |a ∧ b| = 1, |a ∨ b| = 3.
    assert_eq!(bits::jaccard_distance(&a, &b, 3), 1.0 - 1.0 / 3.0);
    assert_eq!(bits::jaccard_distance(&[0], &[0], 4), 1.0);
    assert_eq!(bits::jaccard_distance(&[0xF0], &[0xF0], 4), 0.0);
}
