//! The quantizer of one index: its centroid, rotation and code width, and the distances it
//! estimates from codes.
//!
//! A vector `o` is stored as the code of `r = P(o − c)` (centroid `c`, rotation `P`) and its
//! [`Factors`]. For any `x`, `⟨o − c, x⟩ = ⟨r, P x⟩ ≈ s · ⟨y, P x⟩` (RaBitQ's estimator, unbiased
//! over the choice of rotation). Queries are centred too, `x = q − c`, since the error grows with
//! `‖x‖`:
//!
//! * squared L2: `‖o − q‖² = ρ² + ‖q − c‖² − 2⟨o − c, q − c⟩`;
//! * negative inner product: `−⟨o, q⟩ = −(⟨o − c, q − c⟩ + ⟨o − c, c⟩ + ⟨c, q⟩)`, where
//!   `⟨o − c, c⟩` is stored with the code.
//!
//! A query is rotated once and its coordinates quantized to [`QUERY_BITS`]-bit levels, so that
//! `⟨y, P x⟩` is an integer bit-plane dot product (`vector_distance::codes`) plus per-query
//! constants. Between two stored codes (neighbor selection), `⟨r_a, r_b⟩ ≈ s_a s_b ⟨y_a, y_b⟩`.
//!
//! The error of `⟨o − c, x⟩` is at most `ε · error · ‖P x‖` with the probability of a normal
//! deviate within `±ε` (RaBitQ's bound: the code's error direction is uniform on the sphere),
//! to which the query's rounding adds a deviation of `s · Δ/√12 · ‖u‖`.

use crate::code::{self, Factors};
use crate::rotation::Rotation;
use vector_distance::codes::{bitplane_dot, byte_dot};

/// Bits per coordinate of a prepared query.
pub const QUERY_BITS: u32 = 8;

/// The distance an index orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// `‖a − b‖²` (pgvector's l2 operator classes).
    L2Squared,
    /// `−⟨a, b⟩` (inner product, and cosine on normalized vectors).
    NegativeInnerProduct,
}

/// A vector's residual from the centroid, rotated: the part of coding shared by the quantizers
/// of one centroid and rotation (a build codes each row twice, at two widths).
#[derive(Clone, Debug)]
pub struct Residual {
    rotated: Vec<f32>,
    centroid_dot: f64,
    /// `‖v − c‖²` before the rotation, and `⟨v, c⟩`: a prepared query's constants.
    norm_sq: f64,
    dot_centroid: f64,
    seed: u64,
}

/// How a quantizer lays out its codes and prepared queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Bit planes (`vector_distance::codes`): the format of codes stored in an index, one
    /// popcount kernel for every width.
    BitPlanes,
    /// One byte per level, 8-bit codes only, padded with zeros to the bit planes' size: for
    /// codes that live only in memory (a build's), since at 8 bits a byte dot product is
    /// several times faster than the 64 plane pairs. Same levels, same estimates.
    Bytes,
}

/// A quantizer: everything needed to code vectors and to compare queries with codes.
#[derive(Clone, Debug)]
pub struct Quantizer {
    dims: usize,
    bits: u32,
    layout: Layout,
    words: usize,
    metric: Metric,
    centroid: Vec<f32>,
    centroid_norm_sq: f64,
    rotation: Rotation,
}

/// A query prepared for one quantizer: rotated, quantized to [`QUERY_BITS`]-bit levels laid
/// out as the quantizer's codes are, with its constants.
#[derive(Clone, Debug)]
pub struct QueryCode {
    levels: Vec<u8>,
    /// `x'ᵢ ≈ low + delta · vᵢ`.
    low: f32,
    delta: f32,
    /// `Σ x'ᵢ`.
    sum: f64,
    /// `‖x'‖`.
    norm: f64,
    /// `‖q − c‖²` (L2) or `⟨c, q⟩` (inner product).
    constant: f64,
}

impl QueryCode {
    /// `‖P x‖`: the query's scale in the error bound.
    pub fn norm(&self) -> f64 {
        self.norm
    }
}

/// Bytes of a `bits`-bit code of `dims` dimensions: `bits` bit planes of whole 64-bit words.
pub fn code_bytes(dims: usize, bits: u32) -> usize {
    bits as usize * 8 * dims.div_ceil(64)
}

impl Quantizer {
    /// A quantizer of `dims` dimensions with `bits`-bit codes (1 to 8), the given centroid
    /// (`dims` values) and rotation seed.
    pub fn new(dims: usize, bits: u32, metric: Metric, centroid: Vec<f32>, seed: u64) -> Self {
        assert!((1..=8).contains(&bits), "codes have 1 to 8 bits");
        assert_eq!(centroid.len(), dims, "a centroid of another size");
        let centroid_norm_sq = centroid.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        Quantizer {
            dims,
            bits,
            layout: Layout::BitPlanes,
            words: dims.div_ceil(64),
            metric,
            centroid,
            centroid_norm_sq,
            rotation: Rotation::new(dims, seed),
        }
    }

    /// The same quantizer with 8-bit codes in [`Layout::Bytes`]: codes of equal size and levels,
    /// and estimates equal to the bit-plane quantizer's of 8 bits.
    pub fn with_byte_codes(dims: usize, metric: Metric, centroid: Vec<f32>, seed: u64) -> Self {
        Quantizer {
            layout: Layout::Bytes,
            ..Quantizer::new(dims, 8, metric, centroid, seed)
        }
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    pub fn centroid(&self) -> &[f32] {
        &self.centroid
    }

    /// 64-bit words of one bit plane.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Bytes of one code.
    pub fn code_bytes(&self) -> usize {
        code_bytes(self.dims, self.bits)
    }

    /// `(2^b − 1)/2`: the level that stands for 0.
    fn half(&self) -> f64 {
        f64::from((1u32 << self.bits) - 1) / 2.0
    }

    /// Codes `vector` into `code` ([`Self::code_bytes`] long) and returns its factors.
    pub fn encode(&self, vector: &[f32], code: &mut [u8]) -> Factors {
        self.encode_residual(&self.residual(vector), code)
    }

    /// The rotated residual of `vector`, which [`Self::encode_residual`] codes: the same for
    /// every quantizer of equal centroid and seed, whatever its bits or layout.
    pub fn residual(&self, vector: &[f32]) -> Residual {
        assert_eq!(vector.len(), self.dims, "a vector of another size");
        let mut r: Vec<f32> = vector
            .iter()
            .zip(&self.centroid)
            .map(|(&o, &c)| o - c)
            .collect();
        let centroid_dot: f64 = r
            .iter()
            .zip(&self.centroid)
            .map(|(&a, &c)| f64::from(a) * f64::from(c))
            .sum();
        let norm_sq = r.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        let dot_centroid = vector
            .iter()
            .zip(&self.centroid)
            .map(|(&q, &c)| f64::from(q) * f64::from(c))
            .sum();
        self.rotation.apply(&mut r);
        Residual {
            rotated: r,
            centroid_dot,
            norm_sq,
            dot_centroid,
            seed: self.rotation.seed(),
        }
    }

    /// Codes a residual made by a quantizer of this one's centroid and seed (checked by the
    /// seed) into `code` and returns its factors: what [`Self::encode`] returns.
    pub fn encode_residual(&self, residual: &Residual, code: &mut [u8]) -> Factors {
        self.check_residual(residual);
        let (r, centroid_dot) = (&residual.rotated, residual.centroid_dot);
        let norm = r
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            .sqrt();
        let top = 1u8 << (self.bits - 1);
        let mut u = vec![0u8; self.dims];
        if norm == 0.0 || !norm.is_finite() {
            u.fill(top);
            self.pack(&u, code);
            return Factors {
                centroid_dot: centroid_dot as f32,
                code_sum: u.iter().map(|&l| u32::from(l)).sum(),
                ..Factors::default()
            };
        }
        let a: Vec<f32> = r
            .iter()
            .map(|&v| (f64::from(v).abs() / norm) as f32)
            .collect();
        let (ip, ynorm) = code::levels(&a, u32::from(top) - 1, &mut u);
        for (level, &v) in u.iter_mut().zip(r.iter()) {
            *level = if v >= 0.0 {
                top + *level
            } else {
                top - 1 - *level
            };
        }
        self.pack(&u, code);
        let code_sum = u.iter().map(|&l| u32::from(l)).sum();
        let cos = (ip / ynorm).min(1.0);
        let spread = (1.0 / (cos * cos) - 1.0).max(0.0).sqrt();
        Factors {
            norm: norm as f32,
            scale: (norm / ip) as f32,
            error: (norm * spread / ((self.dims.max(2) - 1) as f64).sqrt()) as f32,
            centroid_dot: centroid_dot as f32,
            code_sum,
        }
    }

    /// Refuses a residual of another rotation (told by its seed) or size.
    fn check_residual(&self, residual: &Residual) {
        assert_eq!(
            residual.seed,
            self.rotation.seed(),
            "a residual of another rotation"
        );
        assert_eq!(
            residual.rotated.len(),
            self.dims,
            "a residual of another size"
        );
    }

    /// Writes levels `u` into `code` in this quantizer's layout.
    fn pack(&self, u: &[u8], code: &mut [u8]) {
        match self.layout {
            Layout::BitPlanes => code::pack(u, self.bits, self.words, code),
            Layout::Bytes => {
                let code = &mut code[..self.code_bytes()];
                code.fill(0);
                code[..u.len()].copy_from_slice(u);
            }
        }
    }

    /// `Σ uᵢ · vᵢ` of two codes, or of a code and a prepared query's levels, of this layout.
    #[inline]
    fn dot(&self, code: &[u8], other: &[u8], other_bits: u32) -> u64 {
        match self.layout {
            Layout::BitPlanes => bitplane_dot(code, self.bits, other, other_bits, self.words),
            Layout::Bytes => byte_dot(&code[..self.code_bytes()], other),
        }
    }

    /// `Σ uᵢ xᵢ` over the levels `u` of `code` (whose level sum is `code_sum`) and the vector
    /// `x` that `prepared` quantizes: one integer dot product.
    pub(crate) fn levels_dot(&self, code: &[u8], code_sum: u32, prepared: &QueryCode) -> f64 {
        let dot = self.dot(code, &prepared.levels, QUERY_BITS) as f64;
        f64::from(prepared.delta) * dot + f64::from(prepared.low) * f64::from(code_sum)
    }

    /// Prepares `query` (`dims` values) for [`Self::distance`].
    pub fn prepare(&self, query: &[f32]) -> QueryCode {
        self.prepare_residual(&self.residual(query))
    }

    /// Prepares a query from its residual (see [`Self::encode_residual`]): what
    /// [`Self::prepare`] returns.
    pub fn prepare_residual(&self, residual: &Residual) -> QueryCode {
        self.check_residual(residual);
        let x = &residual.rotated;
        let constant = match self.metric {
            Metric::L2Squared => residual.norm_sq,
            Metric::NegativeInnerProduct => residual.dot_centroid,
        };
        let (low, high) = min_max(x);
        let top = ((1u32 << QUERY_BITS) - 1) as f32;
        let delta = if high > low { (high - low) / top } else { 0.0 };
        let levels: Vec<u8> = if delta > 0.0 {
            // (v − low) / delta is at least 0: adding ½ and truncating rounds it, half up,
            // without a call to `roundf` per value.
            let scale = 1.0 / delta;
            x.iter()
                .map(|&v| ((v - low) * scale + 0.5).min(top) as u8)
                .collect()
        } else {
            vec![0; x.len()]
        };
        let mut packed = vec![0u8; QUERY_BITS as usize * 8 * self.words];
        match self.layout {
            Layout::BitPlanes => {
                pack_planes(&levels, QUERY_BITS as usize, 8 * self.words, &mut packed)
            }
            Layout::Bytes => packed[..levels.len()].copy_from_slice(&levels),
        }
        QueryCode {
            levels: packed,
            low,
            delta,
            sum: sum_f64(x),
            norm: vector_distance::f32::inner_product(x, x).max(0.0).sqrt(),
            constant,
        }
    }

    /// The estimate of `⟨o − c, x⟩` for the code and the prepared query.
    #[inline]
    fn residual_dot(&self, query: &QueryCode, code: &[u8], factors: &Factors) -> f64 {
        let dot = self.dot(code, &query.levels, QUERY_BITS);
        let usum = f64::from(factors.code_sum);
        let yx = f64::from(query.delta) * dot as f64 + f64::from(query.low) * usum
            - self.half() * query.sum;
        f64::from(factors.scale) * yx
    }

    /// The estimated distance between the query and the coded vector.
    #[inline]
    pub fn distance(&self, query: &QueryCode, code: &[u8], factors: &Factors) -> f64 {
        let dot = self.residual_dot(query, code, factors);
        match self.metric {
            Metric::L2Squared => {
                let norm = f64::from(factors.norm);
                norm * norm + query.constant - 2.0 * dot
            }
            Metric::NegativeInnerProduct => {
                -(dot + f64::from(factors.centroid_dot) + query.constant)
            }
        }
    }

    /// Half the width of the interval around [`Self::distance`] that holds the true distance
    /// with the probability of a standard normal deviate within `±epsilon`: the code's error
    /// (RaBitQ's bound) and the query's rounding (independent per coordinate, uniform within
    /// half a step), added as independent deviations.
    pub fn bound(&self, query: &QueryCode, code: &[u8], factors: &Factors, epsilon: f64) -> f64 {
        let u_norm = (self.dot(code, code, self.bits) as f64).sqrt();
        self.spread(query, factors, u_norm, epsilon)
    }

    /// [`Self::bound`] without the code: `‖u‖` taken at its largest for the code's sum
    /// (`Σu² ≤ (2^b − 1)·Σu`), so never below it. What a search computes for every element.
    #[inline]
    pub fn error_bound(&self, query: &QueryCode, factors: &Factors, epsilon: f64) -> f64 {
        let top = f64::from((1u32 << self.bits) - 1);
        let u_norm = (top * f64::from(factors.code_sum)).sqrt();
        self.spread(query, factors, u_norm, epsilon)
    }

    #[inline]
    fn spread(&self, query: &QueryCode, factors: &Factors, u_norm: f64, epsilon: f64) -> f64 {
        let rounding = f64::from(factors.scale) * f64::from(query.delta) / 12f64.sqrt() * u_norm;
        let coding = f64::from(factors.error) * query.norm;
        let spread = epsilon * coding.hypot(rounding);
        match self.metric {
            Metric::L2Squared => 2.0 * spread,
            Metric::NegativeInnerProduct => spread,
        }
    }

    /// The estimated distance between two coded vectors (`a` plays the query).
    pub fn pair_distance(&self, a: (&[u8], &Factors), b: (&[u8], &Factors)) -> f64 {
        let uu = self.dot(a.0, b.0, self.bits) as f64;
        let (sa, sb) = (f64::from(a.1.code_sum), f64::from(b.1.code_sum));
        let h = self.half();
        let yy = uu - h * (sa + sb) + self.dims as f64 * h * h;
        let dot = f64::from(a.1.scale) * f64::from(b.1.scale) * yy;
        match self.metric {
            Metric::L2Squared => {
                let (na, nb) = (f64::from(a.1.norm), f64::from(b.1.norm));
                na * na + nb * nb - 2.0 * dot
            }
            Metric::NegativeInnerProduct => {
                let cross = f64::from(a.1.centroid_dot) + f64::from(b.1.centroid_dot);
                -(self.centroid_norm_sq + cross + dot)
            }
        }
    }

    /// The exact distance between two full vectors under this quantizer's metric (tests and
    /// tools; the index computes exact distances with the operator class's own function).
    pub fn exact_distance(&self, a: &[f32], b: &[f32]) -> f64 {
        match self.metric {
            Metric::L2Squared => a
                .iter()
                .zip(b)
                .map(|(&x, &y)| {
                    let d = f64::from(x) - f64::from(y);
                    d * d
                })
                .sum(),
            Metric::NegativeInnerProduct => -a
                .iter()
                .zip(b)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum::<f64>(),
        }
    }

    /// The levels of a code (tests, the verifier).
    pub fn levels(&self, code: &[u8]) -> Vec<u8> {
        match self.layout {
            Layout::BitPlanes => code::unpack(code, self.bits, self.words, self.dims),
            Layout::Bytes => code[..self.dims].to_vec(),
        }
    }
}

impl Quantizer {
    /// The rotation's seed: what a layer of other centroids over the same rotation needs.
    pub fn seed(&self) -> u64 {
        self.rotation.seed()
    }

    /// The rotation itself (shared by [`crate::regions::Regions`], which rotates centroids).
    pub(crate) fn rotation(&self) -> &Rotation {
        &self.rotation
    }

    /// `s_a s_b ⟨y_a, y_b⟩ ≈ ⟨r_a, r_b⟩`, as [`Self::pair_distance`] estimates it: for
    /// pair estimates that add other terms (codes of other centroids).
    pub(crate) fn code_dot(&self, a: (&[u8], &Factors), b: (&[u8], &Factors)) -> f64 {
        let uu = self.dot(a.0, b.0, self.bits) as f64;
        let (sa, sb) = (f64::from(a.1.code_sum), f64::from(b.1.code_sum));
        let h = self.half();
        let yy = uu - h * (sa + sb) + self.dims as f64 * h * h;
        f64::from(a.1.scale) * f64::from(b.1.scale) * yy
    }
}

/// The least and greatest of `x` (`(∞, −∞)` when empty), in lanes the compiler vectorizes.
fn min_max(x: &[f32]) -> (f32, f32) {
    const LANES: usize = 16;
    let (mut lo, mut hi) = ([f32::INFINITY; LANES], [f32::NEG_INFINITY; LANES]);
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            lo[i] = if chunk[i] < lo[i] { chunk[i] } else { lo[i] };
            hi[i] = if chunk[i] > hi[i] { chunk[i] } else { hi[i] };
        }
    }
    let fold = |acc: (f32, f32), v: (f32, f32)| (acc.0.min(v.0), acc.1.max(v.1));
    let lanes = lo.iter().zip(&hi).map(|(&l, &h)| (l, h));
    let tail = rest.iter().map(|&v| (v, v));
    lanes
        .chain(tail)
        .fold((f32::INFINITY, f32::NEG_INFINITY), fold)
}

/// `Σ x` in `f64`, in lanes the compiler vectorizes.
fn sum_f64(x: &[f32]) -> f64 {
    const LANES: usize = 8;
    let mut acc = [0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            acc[i] += f64::from(chunk[i]);
        }
    }
    acc.iter().sum::<f64>() + rest.iter().map(|&v| f64::from(v)).sum::<f64>()
}

/// Bit `j` of each level into plane `j` (`plane_bytes` each, little-endian bit order: level `i`
/// is bit `i % 8` of byte `i / 8`), eight levels at a time: a scan prepares its query once per
/// region it meets.
fn pack_planes(levels: &[u8], bits: usize, plane_bytes: usize, out: &mut [u8]) {
    for (g, chunk) in levels.chunks(8).enumerate() {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        let word = u64::from_le_bytes(bytes);
        for j in 0..bits {
            // Bit j of byte k to bit 56 + k: one multiply gathers the eight.
            let gathered =
                ((word >> j) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            out[j * plane_bytes + g] = gathered as u8;
        }
    }
}

impl Residual {
    /// A residual computed elsewhere (around another centroid, or from a rotated query minus
    /// a rotated centroid); the fields mean what [`Quantizer::residual`] makes them mean.
    pub(crate) fn from_parts(
        rotated: Vec<f32>,
        centroid_dot: f64,
        norm_sq: f64,
        dot_centroid: f64,
        seed: u64,
    ) -> Self {
        Residual {
            rotated,
            centroid_dot,
            norm_sq,
            dot_centroid,
            seed,
        }
    }

    /// This residual's constants with another rotated vector (tests: a query rotated apart
    /// from its centroid).
    #[cfg(test)]
    pub(crate) fn with_rotated(&self, rotated: Vec<f32>) -> Residual {
        Residual {
            rotated,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planes_hold_each_level_bit() {
        // 130 levels: two whole words and a partial third per plane.
        let levels: Vec<u8> = (0..130u32).map(|i| (i * 37 % 256) as u8).collect();
        let plane_bytes = 8 * 3;
        let mut out = vec![0u8; 8 * plane_bytes];
        pack_planes(&levels, 8, plane_bytes, &mut out);
        for (i, &level) in levels.iter().enumerate() {
            for j in 0..8 {
                let byte = out[j * plane_bytes + i / 8];
                assert_eq!((byte >> (i % 8)) & 1, (level >> j) & 1, "level {i} bit {j}");
            }
        }
        // Nothing past the levels.
        for j in 0..8 {
            assert_eq!(out[j * plane_bytes + 130 / 8] >> (130 % 8), 0);
            assert!(out[j * plane_bytes + 17..(j + 1) * plane_bytes]
                .iter()
                .all(|&b| b == 0));
        }
    }
}
