//! Straightforward scalar references: one accumulator, double precision,
//! element order. They are *not* bit-identical to pgvector; tests compare the
//! kernels against them within a tolerance, and benchmarks use them as the
//! baseline. The dense functions accept `f32` or `half::f16` elements.

use half::f16;

/// `Σ (a - b)²`.
pub fn l2_squared_distance<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    let mut s = 0.0f64;
    for (&x, &y) in a.iter().zip(b) {
        let d = x.into() - y.into();
        s += d * d;
    }
    s
}

/// `sqrt(Σ (a - b)²)`.
pub fn l2_distance<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    l2_squared_distance(a, b).sqrt()
}

/// `Σ a·b`.
pub fn inner_product<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    let mut s = 0.0f64;
    for (&x, &y) in a.iter().zip(b) {
        s += x.into() * y.into();
    }
    s
}

/// `Σ |a - b|`.
pub fn l1_distance<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    let mut s = 0.0f64;
    for (&x, &y) in a.iter().zip(b) {
        s += (x.into() - y.into()).abs();
    }
    s
}

/// `a·b / sqrt(|a|² |b|²)` (unclamped).
pub fn cosine_similarity<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x.into(), y.into());
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    ab / (aa * bb).sqrt()
}

/// `1 - clamp(cosine_similarity, -1, 1)`.
pub fn cosine_distance<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    1.0 - cosine_similarity(a, b).clamp(-1.0, 1.0)
}

/// `acos(clamp(a·b, -1, 1)) / pi`.
pub fn spherical_distance<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> f64 {
    inner_product(a, b).clamp(-1.0, 1.0).acos() / core::f64::consts::PI
}

/// `sqrt(Σ a²)`.
pub fn norm<T: Copy + Into<f64>>(a: &[T]) -> f64 {
    let mut s = 0.0f64;
    for &x in a {
        s += x.into() * x.into();
    }
    s.sqrt()
}

/// `Σ a·b` of two sparse vectors (sorted 0-based indices), by a plain merge.
pub fn sparse_inner_product(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f64 {
    let (mut i, mut j, mut s) = (0, 0, 0.0f64);
    while i < ai.len() && j < bi.len() {
        if ai[i] == bi[j] {
            s += f64::from(ax[i]) * f64::from(bx[j]);
        }
        let (x, y) = (ai[i], bi[j]);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    s
}

/// `Σ (a - b)²` of two sparse vectors, by a plain merge.
pub fn sparse_l2_squared_distance(ai: &[i32], ax: &[f32], bi: &[i32], bx: &[f32]) -> f64 {
    let (mut i, mut j, mut s) = (0, 0, 0.0f64);
    while i < ai.len() || j < bi.len() {
        let x = ai.get(i).copied().unwrap_or(i32::MAX);
        let y = bi.get(j).copied().unwrap_or(i32::MAX);
        let d = if x == y {
            f64::from(ax[i]) - f64::from(bx[j])
        } else if x < y {
            f64::from(ax[i])
        } else {
            f64::from(bx[j])
        };
        s += d * d;
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    s
}

/// Converts halves to floats.
pub fn widen(a: &[f16]) -> Vec<f32> {
    a.iter().map(|x| x.to_f32()).collect()
}

/// Expands a sparse vector (0-based indices) to `dim` dense floats.
pub fn densify(indices: &[i32], values: &[f32], dim: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; dim];
    for (&i, &v) in indices.iter().zip(values) {
        out[usize::try_from(i).expect("negative index")] = v;
    }
    out
}

/// Number of differing bits among the first `bit_len` bits (MSB first).
pub fn hamming_distance(a: &[u8], b: &[u8], bit_len: usize) -> f64 {
    let mut d = 0u64;
    for i in 0..bit_len {
        if bit(a, i) != bit(b, i) {
            d += 1;
        }
    }
    d as f64
}

/// `1 - |a ∧ b| / |a ∨ b|` over the first `bit_len` bits, `1` if `a ∧ b` is
/// empty.
pub fn jaccard_distance(a: &[u8], b: &[u8], bit_len: usize) -> f64 {
    let (mut and, mut or) = (0u64, 0u64);
    for i in 0..bit_len {
        let (x, y) = (bit(a, i), bit(b, i));
        and += u64::from(x && y);
        or += u64::from(x || y);
    }
    if and == 0 {
        1.0
    } else {
        1.0 - and as f64 / or as f64
    }
}

fn bit(a: &[u8], i: usize) -> bool {
    a[i / 8] & (0x80 >> (i % 8)) != 0
}
