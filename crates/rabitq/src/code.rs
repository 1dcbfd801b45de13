//! Codes: which lattice point stands for a rotated residual, and the factors stored beside it.
//!
//! A `b`-bit code gives every coordinate an unsigned level `u ∈ [0, 2^b)`, standing for the
//! value `y = u − (2^b − 1)/2`, a half-integer of the same sign as the coordinate. With one bit
//! that is RaBitQ's sign code (`y = ±½`). With more bits (extended RaBitQ) the magnitudes
//! `|y| = k + ½` are chosen to make `y` point as closely as possible in the direction of the
//! residual: `k = min(⌊t·|r̂ᵢ|⌋, 2^(b−1) − 1)` for the scale `t` that maximizes the cosine
//! between `y` and `r̂`, found by a grid search that tests show within 0.1% of the exact optimum.
//!
//! Codes are stored as bit planes (see `vector_distance::codes`) so that one popcount kernel
//! serves every width.

use bitvec::prelude::*;
use vector_distance::codes::level_sums;

/// Per-code numbers stored beside the code bits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Factors {
    /// `ρ = ‖o − c‖`, the residual's norm.
    pub norm: f32,
    /// `s = ρ / ⟨y, r̂⟩`: then `⟨o − c, x⟩ ≈ s · ⟨y, P x⟩` for any `x`.
    pub scale: f32,
    /// `ρ · √(1/cos² − 1) / √(D − 1)`, with `cos = ⟨ŷ, r̂⟩`: the estimator's standard deviation
    /// for a unit query (the bound is a multiple of it times the query's norm).
    pub error: f32,
    /// `⟨o − c, c⟩`: what inner-product distances between two codes need besides the codes.
    pub centroid_dot: f32,
    /// `Σ uᵢ`, the sum of the code's levels (kept so that an estimate needs one kernel call).
    pub code_sum: u32,
}

/// Levels `k` (magnitudes `k + ½`) for the coordinates' absolute values `a`, at most `max_k`,
/// and the resulting `⟨|y|, a⟩` and `‖y‖`.
pub(crate) fn levels(a: &[f32], max_k: u32, out: &mut [u8]) -> (f64, f64) {
    debug_assert_eq!(a.len(), out.len());
    let amax = a.iter().fold(0f32, |m, &v| m.max(v));
    if max_k == 0 || amax == 0.0 {
        out.fill(0);
        let ip: f64 = a.iter().map(|&v| 0.5 * f64::from(v)).sum();
        return (ip, 0.5 * (a.len() as f64).sqrt());
    }
    let unit = (max_k as f32 + 1.0) / amax;
    // Coarse grid over the scales that matter (the largest coordinate from below its top
    // level to far past it), then a finer one around the best.
    let mut best = (f64::NEG_INFINITY, unit);
    let coarse = 16;
    let (lo, hi) = (0.25 * unit, 4.0 * unit);
    let step = (hi - lo) / coarse as f32;
    for i in 0..=coarse {
        let t = lo + step * i as f32;
        let c = cosine_at(a, t, max_k);
        if c > best.0 {
            best = (c, t);
        }
    }
    let centre = best.1;
    let fine = 8;
    for i in 0..=fine {
        let t = (centre - step + 2.0 * step * i as f32 / fine as f32).max(f32::MIN_POSITIVE);
        let c = cosine_at(a, t, max_k);
        if c > best.0 {
            best = (c, t);
        }
    }
    let t = best.1;
    let (mut ip, mut sq) = (0f64, 0f64);
    for (k, &v) in out.iter_mut().zip(a) {
        let level = ((t * v) as u32).min(max_k);
        *k = level as u8;
        let y = f64::from(level) + 0.5;
        ip += y * f64::from(v);
        sq += y * y;
    }
    (ip, sq.sqrt())
}

/// The cosine between `a` and the magnitudes chosen at scale `t`.
fn cosine_at(a: &[f32], t: f32, max_k: u32) -> f64 {
    // A kernel of `vector_distance` (the build calls this a few dozen times per row).
    let [ip, sq] = level_sums(a, t, max_k as f32);
    f64::from(ip) / f64::from(sq).sqrt()
}

/// The exact optimum of the levels' search, by a sweep over every scale where a level changes
/// (`O(D·2^b log(D·2^b))`: tests measure the grid search against it).
pub fn best_cosine_exact(a: &[f32], max_k: u32) -> f64 {
    let mut events: Vec<(f32, usize)> = Vec::new();
    for (i, &v) in a.iter().enumerate() {
        if v > 0.0 {
            for j in 1..=max_k {
                events.push((j as f32 / v, i));
            }
        }
    }
    events.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut k = vec![0u32; a.len()];
    let mut ip: f64 = a.iter().map(|&v| 0.5 * f64::from(v)).sum();
    let mut sq = 0.25 * a.len() as f64;
    let mut best = ip / sq.sqrt();
    for (_, i) in events {
        ip += f64::from(a[i]);
        sq += 2.0 * f64::from(k[i]) + 2.0;
        k[i] += 1;
        best = best.max(ip / sq.sqrt());
    }
    best
}

/// Writes the levels `u` (one per dimension, `bits` bits each) as bit planes over `words` words.
pub fn pack(u: &[u8], bits: u32, words: usize, out: &mut [u8]) {
    let plane_bits = 64 * words;
    out[..bits as usize * 8 * words].fill(0);
    let planes = out.view_bits_mut::<Lsb0>();
    for (i, &level) in u.iter().enumerate() {
        for j in 0..bits as usize {
            if (level >> j) & 1 == 1 {
                planes.set(j * plane_bits + i, true);
            }
        }
    }
}

/// The levels of the first `dims` dimensions of a code packed by [`pack`].
pub fn unpack(code: &[u8], bits: u32, words: usize, dims: usize) -> Vec<u8> {
    let plane_bits = 64 * words;
    let planes = code.view_bits::<Lsb0>();
    (0..dims)
        .map(|i| {
            (0..bits as usize).fold(0u8, |level, j| {
                level | (u8::from(planes[j * plane_bits + i]) << j)
            })
        })
        .collect()
}
