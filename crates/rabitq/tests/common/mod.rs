//! Data for the quantizer's tests: seeded Gaussian vectors and clustered sets.

#![allow(dead_code)]

use vector_rabitq::rotation::SplitMix64;

/// A seeded source of normal deviates (Box–Muller).
pub struct Normal(SplitMix64);

impl Normal {
    pub fn new(seed: u64) -> Self {
        Normal(SplitMix64::new(seed))
    }

    pub fn uniform(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    pub fn vector(&mut self, dims: usize) -> Vec<f32> {
        (0..dims).map(|_| self.next() as f32).collect()
    }
}

/// `n` points around `clusters` centres (unit-variance centres, spread `sigma`), plus an offset
/// common to all (so that centring matters).
pub fn clustered(n: usize, dims: usize, clusters: usize, sigma: f64, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Normal::new(seed);
    let offset: Vec<f64> = (0..dims).map(|_| 2.0 + rng.next()).collect();
    let centres: Vec<Vec<f64>> = (0..clusters)
        .map(|_| (0..dims).map(|_| rng.next()).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centres[(rng.uniform() * clusters as f64) as usize % clusters];
            (0..dims)
                .map(|i| (offset[i] + c[i] + sigma * rng.next()) as f32)
                .collect()
        })
        .collect()
}

pub fn normalized(v: &[f32]) -> Vec<f32> {
    let n = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    v.iter().map(|&x| (f64::from(x) / n) as f32).collect()
}

/// The coordinate-wise mean.
pub fn mean(vectors: &[Vec<f32>]) -> Vec<f32> {
    let dims = vectors[0].len();
    let mut sum = vec![0f64; dims];
    for v in vectors {
        for (s, &x) in sum.iter_mut().zip(v) {
            *s += f64::from(x);
        }
    }
    sum.iter()
        .map(|s| (s / vectors.len() as f64) as f32)
        .collect()
}
