//! The random rotation applied to every vector before it is coded.
//!
//! RaBitQ's guarantees hold for a uniformly random orthogonal matrix, which costs D×D floats to
//! store and D² operations to apply. A few rounds of random sign flips followed by a normalized
//! fast Walsh–Hadamard transform mix the coordinates as well in practice, in `O(D log D)` and with
//! nothing stored but a seed. When `D` is not a power of two, each round transforms the leading
//! `L = 2^⌊log₂ D⌋` coordinates and then the trailing `L` (the blocks overlap), so every
//! coordinate is mixed with every other within two rounds. Every step is orthogonal, so norms
//! and inner products are kept exactly (up to rounding).
//!
//! The signs come from SplitMix64 seeded with the index's seed: they are part of the on-disk
//! format (an index stores only the seed), so this generator and the order in which it is drawn
//! must never change.

/// Rounds of (sign flip, transform) — four, as enough mixing for real embeddings, where the
/// estimator's measured error then matches the bound of a truly random rotation.
pub const ROUNDS: usize = 4;

/// SplitMix64: the sign source. Format-critical (see the module comment).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seeded orthogonal transform of `dims`-dimensional vectors.
#[derive(Clone, Debug)]
pub struct Rotation {
    dims: usize,
    /// `L`: the largest power of two not above `dims`.
    block: usize,
    /// Per round, the sign masks of the head flip and (when `block < dims`) of the tail flip,
    /// as f32 sign bits (`0` or `0x8000_0000`) to XOR into the values.
    masks: Vec<u32>,
    seed: u64,
}

impl Rotation {
    /// The rotation of `dims` dimensions for `seed` (`dims` ≥ 1).
    pub fn new(dims: usize, seed: u64) -> Self {
        assert!(dims >= 1, "a rotation needs at least one dimension");
        let block = 1usize << (usize::BITS - 1 - dims.leading_zeros());
        let flips = if block == dims { 1 } else { 2 };
        let mut rng = SplitMix64::new(seed);
        let mut masks = Vec::with_capacity(ROUNDS * flips * dims);
        for _ in 0..ROUNDS * flips {
            let mut bits = 0u64;
            for i in 0..dims {
                if i % 64 == 0 {
                    bits = rng.next_u64();
                }
                masks.push(((bits >> (i % 64)) as u32 & 1) << 31);
            }
        }
        Rotation {
            dims,
            block,
            masks,
            seed,
        }
    }

    /// The seed the signs were drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Dimensions this rotation transforms.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Rotates `x` in place (`x.len() == dims`).
    pub fn apply(&self, x: &mut [f32]) {
        assert_eq!(x.len(), self.dims, "rotation of a vector of another size");
        let (d, l) = (self.dims, self.block);
        let mut masks = self.masks.chunks_exact(d);
        for _ in 0..ROUNDS {
            flip(x, masks.next().expect("a mask per flip"));
            hadamard(&mut x[..l]);
            if l < d {
                flip(x, masks.next().expect("a mask per flip"));
                hadamard(&mut x[d - l..]);
            }
        }
    }

    /// Applies the inverse rotation to `x` in place (tests and decoding).
    pub fn invert(&self, x: &mut [f32]) {
        assert_eq!(x.len(), self.dims, "rotation of a vector of another size");
        let (d, l) = (self.dims, self.block);
        let per_round = if l < d { 2 } else { 1 };
        for round in (0..ROUNDS).rev() {
            let masks = &self.masks[round * per_round * d..(round + 1) * per_round * d];
            if l < d {
                hadamard(&mut x[d - l..]);
                flip(x, &masks[d..]);
            }
            hadamard(&mut x[..l]);
            flip(x, &masks[..d]);
        }
    }
}

fn flip(x: &mut [f32], masks: &[u32]) {
    for (v, &m) in x.iter_mut().zip(masks) {
        *v = f32::from_bits(v.to_bits() ^ m);
    }
}

/// The normalized Walsh–Hadamard transform of `x` (length a power of two), in place. It is its
/// own inverse.
fn hadamard(x: &mut [f32]) {
    let n = x.len();
    debug_assert!(n.is_power_of_two());
    let mut h = 1;
    while h < n {
        for pair in x.chunks_exact_mut(2 * h) {
            let (a, b) = pair.split_at_mut(h);
            for (u, v) in a.iter_mut().zip(b.iter_mut()) {
                let (s, t) = (*u + *v, *u - *v);
                *u = s;
                *v = t;
            }
        }
        h *= 2;
    }
    let scale = 1.0 / (n as f32).sqrt();
    for v in x.iter_mut() {
        *v *= scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(dims: usize, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        (0..dims)
            .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect()
    }

    fn dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    #[test]
    fn keeps_inner_products_and_inverts() {
        for dims in [1, 2, 3, 7, 64, 100, 384, 768, 1000, 1536, 2000] {
            let rotation = Rotation::new(dims, 42);
            let (a, b) = (vector(dims, 1), vector(dims, 2));
            let (mut ra, mut rb) = (a.clone(), b.clone());
            rotation.apply(&mut ra);
            rotation.apply(&mut rb);
            let (before, after) = (dot(&a, &b), dot(&ra, &rb));
            assert!(
                (before - after).abs() < 1e-4 * (1.0 + before.abs()),
                "{dims}"
            );
            assert!(
                (dot(&a, &a) - dot(&ra, &ra)).abs() < 1e-4 * dot(&a, &a),
                "{dims}"
            );
            rotation.invert(&mut ra);
            for (x, y) in a.iter().zip(&ra) {
                assert!((x - y).abs() < 1e-5, "{dims}: {x} {y}");
            }
        }
    }

    #[test]
    fn spreads_a_basis_vector_over_every_coordinate() {
        // A vector with all its weight on one coordinate (the worst case for sign codes) comes
        // out with every coordinate small.
        for dims in [384, 768, 1000] {
            let rotation = Rotation::new(dims, 7);
            let mut x = vec![0f32; dims];
            x[3] = 1.0;
            rotation.apply(&mut x);
            let largest = x.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(largest < 6.0 / (dims as f32).sqrt(), "{dims}: {largest}");
            let zeros = x.iter().filter(|v| v.abs() < 1e-9).count();
            assert_eq!(zeros, 0, "{dims}");
        }
    }

    #[test]
    fn the_seed_decides_the_rotation() {
        let a = vector(384, 5);
        let (mut x, mut y, mut z) = (a.clone(), a.clone(), a);
        Rotation::new(384, 1).apply(&mut x);
        Rotation::new(384, 1).apply(&mut y);
        Rotation::new(384, 2).apply(&mut z);
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn signs_are_stable_across_releases() {
        // The first sign masks of seed 42: part of the on-disk format.
        let rotation = Rotation::new(8, 42);
        let first: Vec<u32> = rotation.masks[..8].iter().map(|m| m >> 31).collect();
        let mut rng = SplitMix64::new(42);
        let bits = rng.next_u64();
        let expected: Vec<u32> = (0..8).map(|i| (bits >> i) as u32 & 1).collect();
        assert_eq!(first, expected);
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }
}
