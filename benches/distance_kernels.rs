//! Dispatched kernels of `vector-distance` against the plain scalar
//! references (single f64 accumulator) at 128, 768 and 1536 dimensions.
//!
//! Run with `cargo bench -p vector-distance -- --warm-up-time 1 --measurement-time 2`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use vector_distance::half::f16;
use vector_distance::sparse::SparseRef;
use vector_distance::{bits, codes, f16 as h, f32 as v, reference};

const DIMS: [usize; 3] = [128, 768, 1536];

/// Deterministic pseudo-random floats in [-1, 1).
fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn halves(n: usize, seed: u64) -> Vec<f16> {
    floats(n, seed).into_iter().map(f16::from_f32).collect()
}

fn bench_pair<T: ?Sized>(
    c: &mut Criterion,
    name: &str,
    dims: usize,
    a: &T,
    b: &T,
    kernel: impl Fn(&T, &T) -> f64,
    scalar: impl Fn(&T, &T) -> f64,
) {
    let mut g = c.benchmark_group(name);
    g.bench_with_input(BenchmarkId::new("kernel", dims), &dims, |bch, _| {
        bch.iter(|| kernel(black_box(a), black_box(b)))
    });
    g.bench_with_input(BenchmarkId::new("reference", dims), &dims, |bch, _| {
        bch.iter(|| scalar(black_box(a), black_box(b)))
    });
    g.finish();
}

fn dense(c: &mut Criterion) {
    for dims in DIMS {
        let (a, b) = (floats(dims, 1), floats(dims, 2));
        let (a, b) = (a.as_slice(), b.as_slice());
        bench_pair(
            c,
            "f32_l2_distance",
            dims,
            a,
            b,
            v::l2_distance,
            reference::l2_distance,
        );
        bench_pair(
            c,
            "f32_inner_product",
            dims,
            a,
            b,
            v::inner_product,
            reference::inner_product,
        );
        bench_pair(
            c,
            "f32_cosine_distance",
            dims,
            a,
            b,
            v::cosine_distance,
            reference::cosine_distance,
        );
        bench_pair(
            c,
            "f32_l1_distance",
            dims,
            a,
            b,
            v::l1_distance,
            reference::l1_distance,
        );
        bench_pair(
            c,
            "f32_norm",
            dims,
            a,
            a,
            |x, _| v::norm(x),
            |x, _| reference::norm(x),
        );
    }
}

fn half(c: &mut Criterion) {
    for dims in DIMS {
        let (a, b) = (halves(dims, 3), halves(dims, 4));
        let (a, b) = (a.as_slice(), b.as_slice());
        bench_pair(
            c,
            "f16_l2_distance",
            dims,
            a,
            b,
            h::l2_distance,
            reference::l2_distance,
        );
        bench_pair(
            c,
            "f16_inner_product",
            dims,
            a,
            b,
            h::inner_product,
            reference::inner_product,
        );
        bench_pair(
            c,
            "f16_cosine_distance",
            dims,
            a,
            b,
            h::cosine_distance,
            reference::cosine_distance,
        );
        bench_pair(
            c,
            "f16_l1_distance",
            dims,
            a,
            b,
            h::l1_distance,
            reference::l1_distance,
        );
        bench_pair(
            c,
            "f16_norm",
            dims,
            a,
            a,
            |x, _| h::norm(x),
            |x, _| reference::norm(x),
        );
    }
}

fn sparse(c: &mut Criterion) {
    for dims in DIMS {
        // Every other dimension set in `a`, every third in `b`.
        let ai: Vec<i32> = (0..dims as i32).step_by(2).collect();
        let bi: Vec<i32> = (0..dims as i32).step_by(3).collect();
        let (ax, bx) = (floats(ai.len(), 5), floats(bi.len(), 6));
        let (sa, sb) = (SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
        bench_pair(
            c,
            "sparse_l2_distance",
            dims,
            &sa,
            &sb,
            |x: &SparseRef, y: &SparseRef| vector_distance::sparse::l2_distance(*x, *y),
            |x: &SparseRef, y: &SparseRef| {
                reference::sparse_l2_squared_distance(x.indices, x.values, y.indices, y.values)
                    .sqrt()
            },
        );
        bench_pair(
            c,
            "sparse_inner_product",
            dims,
            &sa,
            &sb,
            |x: &SparseRef, y: &SparseRef| vector_distance::sparse::inner_product(*x, *y),
            |x: &SparseRef, y: &SparseRef| {
                reference::sparse_inner_product(x.indices, x.values, y.indices, y.values)
            },
        );
    }
}

fn bit_strings(c: &mut Criterion) {
    for dims in DIMS {
        let bytes = dims.div_ceil(8);
        let to_bytes =
            |f: Vec<f32>| -> Vec<u8> { f.iter().map(|x| (x.to_bits() >> 7) as u8).collect() };
        let (a, b) = (to_bytes(floats(bytes, 7)), to_bytes(floats(bytes, 8)));
        let (a, b) = (a.as_slice(), b.as_slice());
        bench_pair(
            c,
            "bits_hamming_distance",
            dims,
            a,
            b,
            |x, y| bits::hamming_distance(x, y, dims),
            |x, y| reference::hamming_distance(x, y, dims),
        );
        bench_pair(
            c,
            "bits_jaccard_distance",
            dims,
            a,
            b,
            |x, y| bits::jaccard_distance(x, y, dims),
            |x, y| reference::jaccard_distance(x, y, dims),
        );
    }
}

/// Bytes of deterministic pseudo-random bit planes.
fn plane_bytes(n: usize, seed: u64) -> Vec<u8> {
    floats(n, seed)
        .iter()
        .map(|x| (x.to_bits() >> 5) as u8)
        .collect()
}

/// `codes::bitplane_dot` of one code against one query, on every
/// implementation this CPU supports plus the dispatched public function,
/// for the typical dimensions and bit widths. Both slices start at an odd
/// byte offset, as codes read from a page may.
fn bitplane_codes(c: &mut Criterion) {
    for (code_bits, query_bits) in [(1u32, 4u32), (1, 8), (4, 8)] {
        let mut g = c.benchmark_group(format!("codes_bitplane_dot_{code_bits}x{query_bits}"));
        for dims in [384usize, 768, 1536] {
            let words = dims / 64;
            let code = plane_bytes(1 + code_bits as usize * 8 * words, 9);
            let query = plane_bytes(3 + query_bits as usize * 8 * words, 10);
            let (code, query) = (&code[1..], &query[3..]);
            for k in codes::implementations() {
                g.bench_with_input(BenchmarkId::new(k.name, dims), &dims, |bch, _| {
                    bch.iter(|| {
                        (k.bitplane_dot)(
                            black_box(code),
                            code_bits,
                            black_box(query),
                            query_bits,
                            black_box(words),
                        )
                    })
                });
            }
            g.bench_with_input(BenchmarkId::new("dispatched", dims), &dims, |bch, _| {
                bch.iter(|| {
                    codes::bitplane_dot(
                        black_box(code),
                        code_bits,
                        black_box(query),
                        query_bits,
                        black_box(words),
                    )
                })
            });
        }
        g.finish();
    }
}

/// `codes::byte_dot` of two byte codes (the 8-bit codes a quantized build compares), against
/// the 8-bit bit-plane kernel on the same elements, at the typical dimensions.
fn byte_codes(c: &mut Criterion) {
    let mut g = c.benchmark_group("codes_byte_dot_8x8");
    for dims in [384usize, 768, 1536] {
        let a = plane_bytes(dims + 1, 11);
        let b = plane_bytes(dims + 3, 12);
        let (a, b) = (&a[1..], &b[3..]);
        for k in codes::implementations() {
            g.bench_with_input(BenchmarkId::new(k.name, dims), &dims, |bch, _| {
                bch.iter(|| (k.byte_dot)(black_box(a), black_box(b)))
            });
        }
        g.bench_with_input(BenchmarkId::new("bitplane_8x8", dims), &dims, |bch, _| {
            bch.iter(|| codes::bitplane_dot(black_box(a), 8, black_box(b), 8, dims / 64))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    dense,
    half,
    sparse,
    bit_strings,
    bitplane_codes,
    byte_codes
);
criterion_main!(benches);
