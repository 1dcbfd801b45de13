//! Codes around per-region centroids: a layer over [`Quantizer`] for data in many clusters.
//!
//! The estimate's error grows with `‖o − c‖ · ‖q − c‖`, so one centroid for a table of far-apart
//! clusters codes mostly the offsets between clusters. Here each of `K` regions has its own
//! centroid `c_k` (the caller's, e.g. from k-means); a vector of region `k` is coded as
//! `r = P(o − c_k)` with [`Factors`] meaning what they mean in [`Quantizer`] with `c = c_k`
//! (`norm = ‖o − c_k‖`, `centroid_dot = ⟨o − c_k, c_k⟩`). Every region shares one rotation `P`,
//! so a query is rotated once and prepared for region `k` from `P q − P c_k` the first time it
//! meets that region.
//!
//! Between codes of regions `a` and `b` (`e = o − c`, `δ = c_a − c_b`, `o = e + c`):
//!
//! * squared L2: `‖o_a − o_b‖² = ‖e_a‖² + ‖e_b‖² + ‖δ‖² − 2⟨e_a, e_b⟩ + 2⟨e_a, δ⟩ − 2⟨e_b, δ⟩`,
//!   with `⟨e_a, δ⟩ = ⟨e_a, c_a⟩ − ⟨e_a, c_b⟩` and `⟨e_b, δ⟩ = ⟨e_b, c_a⟩ − ⟨e_b, c_b⟩`;
//! * negative inner product: `−⟨o_a, o_b⟩ = −(⟨e_a, e_b⟩ + ⟨e_a, c_b⟩ + ⟨e_b, c_a⟩ + ⟨c_a, c_b⟩)`.
//!
//! `‖e‖` and `⟨e, c⟩` of a code's own centroid are stored factors, `‖δ‖²` and `⟨c_a, c_b⟩` come
//! from the centroids, and `⟨e_a, e_b⟩ = ⟨r_a, r_b⟩ ≈ s_a s_b ⟨y_a, y_b⟩` as in
//! [`Quantizer::pair_distance`] (one rotation for all regions). For the other centroid, split
//! `c_b = t c_a + w` with `t = ⟨c_a, c_b⟩ / ‖c_a‖²`: then
//! `⟨e_a, c_b⟩ ≈ t ⟨e_a, c_a⟩ + s_a ⟨y_a, P w⟩`, exact but for the part off `c_a`, whose norm
//! (which the error grows with) is at most `min(‖c_b‖, ‖δ‖)`; `⟨y_a, P w⟩` is a dot product of
//! the code's levels with `P c_b − t P c_a`, `O(dims)` per pair (neighbour selection only).
//! Likewise for `⟨e_b, c_a⟩`. Within one region (`t = 1`, `w = 0`) this is exactly
//! [`Quantizer::pair_distance`].

use crate::code::Factors;
use crate::quantizer::{Layout, Metric, Quantizer, QueryCode, Residual};

/// A slot of [`RegionQuery`] not prepared yet.
const UNPREPARED: u32 = u32::MAX;

/// The centroids of `K` regions over one rotation and code width, and the estimates between
/// queries and codes (or two codes) of any regions.
#[derive(Clone, Debug)]
pub struct Regions {
    /// Codes, prepares and estimates for every region: none of that reads its centroid (a
    /// zero vector) except the inner-product pair estimate, which takes `‖c_k‖²` from here.
    quantizer: Quantizer,
    count: usize,
    /// `c_k`, row-major.
    centroids: Vec<f32>,
    /// `P c_k`, row-major.
    rotated: Vec<f32>,
    /// `‖c_k‖²`.
    norms_sq: Vec<f64>,
    /// `Σᵢ (P c_k)ᵢ`: the `−h Σ wᵢ` part of `⟨y, w⟩` for the pair estimates' `w`.
    rotated_sums: Vec<f64>,
    /// `P c_k` quantized as a query is: `Σ uᵢ (P c_k)ᵢ` of a code's levels `u` in one integer
    /// dot product (the pair estimates across regions).
    rotated_codes: Vec<QueryCode>,
    /// `(⟨c_a, c_b⟩, ‖c_a − c_b‖²)` of every pair of regions, `a · K + b`, when `K` is at most
    /// [`PAIR_TABLE_REGIONS`] (else computed per pair); made by the first pair estimate (scans
    /// make none).
    pairs: std::sync::OnceLock<Vec<(f64, f64)>>,
}

/// The most regions whose centroid pairs [`Regions`] tabulates (`K²` entries).
const PAIR_TABLE_REGIONS: usize = 256;

/// A query prepared for [`Regions`]: rotated once, and prepared for each region on first use.
///
/// The estimates take it as `&mut`: a search owns its query alone while it reads the graph
/// through other borrows, so a plain mutable cache needs no `RefCell` checks and cannot fail
/// at run time.
#[derive(Clone, Debug)]
pub struct RegionQuery {
    vector: Vec<f32>,
    /// `P q`.
    rotated: Vec<f32>,
    /// Per region, its index in `codes`, or [`UNPREPARED`].
    slots: Vec<u32>,
    codes: Vec<QueryCode>,
}

impl RegionQuery {
    /// Regions this query has been prepared for so far (each cost a quantization).
    pub fn prepared_regions(&self) -> usize {
        self.codes.len()
    }
}

impl Regions {
    /// Regions for `dims`-dimensional vectors with `bits`-bit codes in `layout` ([`Layout::Bytes`]
    /// only at 8 bits), rotation `seed`, and the centroids `centroids` (`K · dims` values,
    /// row-major, `K ≥ 1`).
    pub fn new(
        dims: usize,
        bits: u32,
        metric: Metric,
        layout: Layout,
        seed: u64,
        centroids: Vec<f32>,
    ) -> Self {
        let zero = vec![0f32; dims];
        let quantizer = match layout {
            Layout::BitPlanes => Quantizer::new(dims, bits, metric, zero, seed),
            Layout::Bytes => {
                assert_eq!(bits, 8, "byte codes have 8 bits");
                Quantizer::with_byte_codes(dims, metric, zero, seed)
            }
        };
        assert!(
            !centroids.is_empty() && centroids.len().is_multiple_of(dims),
            "centroids are K ≥ 1 rows of dims values"
        );
        let count = centroids.len() / dims;
        assert!(count < UNPREPARED as usize, "too many regions");
        let mut rotated = centroids.clone();
        for row in rotated.chunks_exact_mut(dims) {
            quantizer.rotation().apply(row);
        }
        // As `Quantizer::new` computes it, so that same-region estimates agree bitwise.
        let norms_sq = centroids
            .chunks_exact(dims)
            .map(|c| c.iter().map(|&v| f64::from(v) * f64::from(v)).sum())
            .collect();
        let rotated_sums = rotated
            .chunks_exact(dims)
            .map(|c| c.iter().map(|&v| f64::from(v)).sum())
            .collect();
        let rotated_codes = if count > 1 {
            rotated
                .chunks_exact(dims)
                .map(|row| {
                    let r = Residual::from_parts(row.to_vec(), 0.0, 0.0, 0.0, seed);
                    quantizer.prepare_residual(&r)
                })
                .collect()
        } else {
            Vec::new()
        };
        let pairs = std::sync::OnceLock::new();
        Regions {
            quantizer,
            count,
            centroids,
            rotated,
            norms_sq,
            rotated_sums,
            rotated_codes,
            pairs,
        }
    }

    /// Regions with the dimensions, width, metric, layout and seed of `quantizer` (whose own
    /// centroid plays no part).
    pub fn like(quantizer: &Quantizer, centroids: Vec<f32>) -> Self {
        Regions::new(
            quantizer.dims(),
            quantizer.bits(),
            quantizer.metric(),
            quantizer.layout(),
            quantizer.seed(),
            centroids,
        )
    }

    /// `K`, the number of regions.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn dims(&self) -> usize {
        self.quantizer.dims()
    }

    pub fn bits(&self) -> u32 {
        self.quantizer.bits()
    }

    pub fn metric(&self) -> Metric {
        self.quantizer.metric()
    }

    pub fn layout(&self) -> Layout {
        self.quantizer.layout()
    }

    pub fn seed(&self) -> u64 {
        self.quantizer.seed()
    }

    /// Bytes of one code.
    pub fn code_bytes(&self) -> usize {
        self.quantizer.code_bytes()
    }

    /// `c_k`.
    pub fn centroid(&self, region: u32) -> &[f32] {
        self.row(&self.centroids, region)
    }

    fn row<'a>(&self, rows: &'a [f32], region: u32) -> &'a [f32] {
        let (k, d) = (region as usize, self.dims());
        assert!(k < self.count, "region {k} of {}", self.count);
        &rows[k * d..(k + 1) * d]
    }

    /// The single-centroid quantizer whose codes and estimates region `region` reproduces
    /// (tests, the verifier).
    pub fn quantizer(&self, region: u32) -> Quantizer {
        let (dims, metric, seed) = (self.dims(), self.metric(), self.seed());
        let c = self.centroid(region).to_vec();
        match self.layout() {
            Layout::BitPlanes => Quantizer::new(dims, self.bits(), metric, c, seed),
            Layout::Bytes => Quantizer::with_byte_codes(dims, metric, c, seed),
        }
    }

    /// The region whose centroid is nearest to `vector` in L2, for either metric: the code's
    /// error (`Factors::error`, `scale`) is proportional to `‖o − c_k‖` whatever the query, so
    /// the nearest centroid gives the smallest error; the largest `⟨o, c_k⟩` would favour long
    /// centroids however far. `O(K · dims)`: a build with k-means assignments should use them.
    pub fn nearest_region(&self, vector: &[f32]) -> u32 {
        assert_eq!(vector.len(), self.dims(), "a vector of another size");
        if self.count == 1 {
            return 0;
        }
        let mut best = (f64::INFINITY, 0u32);
        for (k, c) in self.centroids.chunks_exact(self.dims()).enumerate() {
            let d = vector_distance::f32::l2_squared_distance(vector, c);
            if d < best.0 {
                best = (d, k as u32);
            }
        }
        best.1
    }

    /// The rotated residual of `vector` around `c_region`: what [`Quantizer::residual`] returns
    /// for the centroid `c_region`, so one residual serves regions of several widths (of the
    /// same centroids and seed).
    pub fn residual(&self, region: u32, vector: &[f32]) -> Residual {
        assert_eq!(vector.len(), self.dims(), "a vector of another size");
        let c = self.centroid(region);
        // The same operations in the same order as `Quantizer::residual`: codes equal bitwise.
        let mut r: Vec<f32> = vector.iter().zip(c).map(|(&o, &c)| o - c).collect();
        let centroid_dot = r
            .iter()
            .zip(c)
            .map(|(&a, &c)| f64::from(a) * f64::from(c))
            .sum();
        let norm_sq = r.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        let dot_centroid = vector
            .iter()
            .zip(c)
            .map(|(&q, &c)| f64::from(q) * f64::from(c))
            .sum();
        self.quantizer.rotation().apply(&mut r);
        Residual::from_parts(r, centroid_dot, norm_sq, dot_centroid, self.seed())
    }

    /// Codes `vector` as a member of `region` into `code` ([`Self::code_bytes`] long) and
    /// returns its factors (relative to `c_region`).
    pub fn encode(&self, region: u32, vector: &[f32], code: &mut [u8]) -> Factors {
        self.encode_residual(&self.residual(region, vector), code)
    }

    /// Codes a residual from [`Self::residual`]; its region is the one it was made for.
    pub fn encode_residual(&self, residual: &Residual, code: &mut [u8]) -> Factors {
        self.quantizer.encode_residual(residual, code)
    }

    /// Rotates `query` (`dims` values) once; regions are prepared as the estimates meet them.
    pub fn prepare(&self, query: &[f32]) -> RegionQuery {
        assert_eq!(query.len(), self.dims(), "a query of another size");
        let mut rotated = query.to_vec();
        self.quantizer.rotation().apply(&mut rotated);
        RegionQuery {
            vector: query.to_vec(),
            rotated,
            slots: vec![UNPREPARED; self.count],
            codes: Vec::new(),
        }
    }

    /// The query prepared for `region`, preparing it if this is the first time.
    #[inline]
    pub fn query_code<'q>(&self, query: &'q mut RegionQuery, region: u32) -> &'q QueryCode {
        let k = region as usize;
        assert_eq!(query.slots.len(), self.count, "a query of other regions");
        if query.slots[k] == UNPREPARED {
            self.prepare_region(query, region);
        }
        &query.codes[query.slots[k] as usize]
    }

    #[cold]
    fn prepare_region(&self, query: &mut RegionQuery, region: u32) {
        let (c, pc) = (self.centroid(region), self.row(&self.rotated, region));
        let x: Vec<f32> = query.rotated.iter().zip(pc).map(|(&q, &c)| q - c).collect();
        // Only the constant the metric's estimate uses (⟨q − c, c⟩ is not used by queries), by
        // the SIMD kernels: a walk prepares its query once per region it meets.
        let (norm_sq, dot_centroid) = match self.metric() {
            Metric::L2Squared => (
                vector_distance::f32::l2_squared_distance(&query.vector, c),
                0.0,
            ),
            Metric::NegativeInnerProduct => {
                (0.0, vector_distance::f32::inner_product(&query.vector, c))
            }
        };
        let residual = Residual::from_parts(x, 0.0, norm_sq, dot_centroid, self.seed());
        query.slots[region as usize] = query.codes.len() as u32;
        query.codes.push(self.quantizer.prepare_residual(&residual));
    }

    /// The estimated distance between the query and a code of `region`: what
    /// [`Quantizer::distance`] returns for the centroid `c_region`.
    #[inline]
    pub fn distance(
        &self,
        query: &mut RegionQuery,
        region: u32,
        code: &[u8],
        factors: &Factors,
    ) -> f64 {
        let prepared = self.query_code(query, region);
        self.quantizer.distance(prepared, code, factors)
    }

    /// [`Quantizer::bound`] for a code of `region`.
    pub fn bound(
        &self,
        query: &mut RegionQuery,
        region: u32,
        code: &[u8],
        factors: &Factors,
        epsilon: f64,
    ) -> f64 {
        let prepared = self.query_code(query, region);
        self.quantizer.bound(prepared, code, factors, epsilon)
    }

    /// [`Quantizer::error_bound`] for a code of `region`.
    #[inline]
    pub fn error_bound(
        &self,
        query: &mut RegionQuery,
        region: u32,
        factors: &Factors,
        epsilon: f64,
    ) -> f64 {
        let prepared = self.query_code(query, region);
        self.quantizer.error_bound(prepared, factors, epsilon)
    }

    /// The table of centroid pairs, made on first use (empty above [`PAIR_TABLE_REGIONS`]).
    fn pair_table(&self) -> &[(f64, f64)] {
        self.pairs.get_or_init(|| {
            let (count, dims) = (self.count, self.dims());
            if count <= 1 || count > PAIR_TABLE_REGIONS {
                return Vec::new();
            }
            let mut table = Vec::with_capacity(count * count);
            for a in self.centroids.chunks_exact(dims) {
                for b in self.centroids.chunks_exact(dims) {
                    table.push(centroid_pair(a, b));
                }
            }
            table
        })
    }

    /// The estimated distance between two codes, each given with its region (see the module
    /// comment for the formula). Within one region it is [`Quantizer::pair_distance`] of that
    /// region's quantizer; across regions it costs `O(dims)`.
    pub fn pair_distance(&self, a: (u32, &[u8], &Factors), b: (u32, &[u8], &Factors)) -> f64 {
        let (ka, kb) = (a.0, b.0);
        if ka == kb && self.metric() == Metric::L2Squared {
            return self.quantizer.pair_distance((a.1, a.2), (b.1, b.2));
        }
        let ee = self.quantizer.code_dot((a.1, a.2), (b.1, b.2));
        let (cd_a, cd_b) = (f64::from(a.2.centroid_dot), f64::from(b.2.centroid_dot));
        if ka == kb {
            // `Quantizer::pair_distance`'s expression, with `‖c_k‖²` from here.
            return -(self.norms_sq[ka as usize] + (cd_a + cd_b) + ee);
        }
        let (cc, delta_sq) = match self
            .pair_table()
            .get(ka as usize * self.count + kb as usize)
        {
            Some(&pair) => pair,
            None => centroid_pair(self.centroid(ka), self.centroid(kb)),
        };
        let (ea_cb, eb_ca) = self.cross_dots((ka, a.1, a.2), (kb, b.1, b.2), cc);
        match self.metric() {
            Metric::L2Squared => {
                // ⟨e_a, δ⟩ = ⟨e_a, c_a⟩ − ⟨e_a, c_b⟩ and ⟨e_b, δ⟩ = ⟨e_b, c_a⟩ − ⟨e_b, c_b⟩.
                let (ea_delta, eb_delta) = (cd_a - ea_cb, eb_ca - cd_b);
                let (na, nb) = (f64::from(a.2.norm), f64::from(b.2.norm));
                na * na + nb * nb + delta_sq - 2.0 * ee + 2.0 * ea_delta - 2.0 * eb_delta
            }
            Metric::NegativeInnerProduct => -(ee + ea_cb + eb_ca + cc),
        }
    }

    /// The estimates of `⟨e_a, c_b⟩` and `⟨e_b, c_a⟩` for codes of different regions, given
    /// `⟨c_a, c_b⟩`. Of `c_b` only the part off `c_a` is estimated from the code: the part along
    /// `c_a` follows from the exact `⟨e_a, c_a⟩`, and the error grows with the estimated part's
    /// norm, `‖c_b − t c_a‖ ≤ min(‖c_b‖, ‖c_a − c_b‖)`.
    fn cross_dots(
        &self,
        a: (u32, &[u8], &Factors),
        b: (u32, &[u8], &Factors),
        cc: f64,
    ) -> (f64, f64) {
        let (ka, kb) = (a.0 as usize, b.0 as usize);
        let h = f64::from((1u32 << self.bits()) - 1) / 2.0;
        let (sum_a, sum_b) = (self.rotated_sums[ka], self.rotated_sums[kb]);
        let along = |norm_sq: f64| if norm_sq > 0.0 { cc / norm_sq } else { 0.0 };
        let (ta, tb) = (along(self.norms_sq[ka]), along(self.norms_sq[kb]));
        // s ⟨y, w⟩ with y = u − h, for w = P c_b − t_a P c_a (code a) and P c_a − t_b P c_b.
        let levels = |code: &[u8], factors: &Factors, k: u32| {
            let centroid = &self.rotated_codes[k as usize];
            self.quantizer.levels_dot(code, factors.code_sum, centroid)
        };
        let (ua_a, ua_b) = (levels(a.1, a.2, a.0), levels(a.1, a.2, b.0));
        let (ub_a, ub_b) = (levels(b.1, b.2, a.0), levels(b.1, b.2, b.0));
        let yw_a = (ua_b - ta * ua_a) - h * (sum_b - ta * sum_a);
        let yw_b = (ub_a - tb * ub_b) - h * (sum_a - tb * sum_b);
        let ea_cb = ta * f64::from(a.2.centroid_dot) + f64::from(a.2.scale) * yw_a;
        let eb_ca = tb * f64::from(b.2.centroid_dot) + f64::from(b.2.scale) * yw_b;
        (ea_cb, eb_ca)
    }

    /// The exact distance between two full vectors under the metric (tests and tools).
    pub fn exact_distance(&self, a: &[f32], b: &[f32]) -> f64 {
        self.quantizer.exact_distance(a, b)
    }
}

/// `(⟨a, b⟩, ‖a − b‖²)` of two centroids.
fn centroid_pair(a: &[f32], b: &[f32]) -> (f64, f64) {
    let (mut cc, mut delta_sq) = (0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        cc += x * y;
        delta_sq += (x - y) * (x - y);
    }
    (cc, delta_sq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rotation::SplitMix64;

    const METRICS: [Metric; 2] = [Metric::L2Squared, Metric::NegativeInnerProduct];

    /// Seeded normal deviates (Box–Muller).
    struct Normal(SplitMix64);

    impl Normal {
        fn new(seed: u64) -> Self {
            Normal(SplitMix64::new(seed))
        }

        fn uniform(&mut self) -> f64 {
            ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn next(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// Points of a Gaussian mixture and the centre each was drawn around.
    struct Mixture {
        dims: usize,
        centres: Vec<f32>,
        rows: Vec<Vec<f32>>,
        labels: Vec<u32>,
        queries: Vec<Vec<f32>>,
        query_labels: Vec<u32>,
    }

    impl Mixture {
        /// `clusters` centres N(0, 1) per coordinate, `per_cluster` rows each and `queries`
        /// queries from the same mixture, at spread `sigma`.
        fn new(dims: usize, clusters: usize, per_cluster: usize, queries: usize) -> Self {
            Mixture::offset(dims, clusters, per_cluster, queries, 0.0)
        }

        /// The same with `offset` added to every coordinate of every centre.
        fn offset(
            dims: usize,
            clusters: usize,
            per_cluster: usize,
            queries: usize,
            offset: f64,
        ) -> Self {
            let sigma = 0.25;
            let mut rng = Normal::new(2024);
            let centres: Vec<f32> = (0..clusters * dims)
                .map(|_| (offset + rng.next()) as f32)
                .collect();
            let draw = |k: usize, rng: &mut Normal| -> Vec<f32> {
                centres[k * dims..(k + 1) * dims]
                    .iter()
                    .map(|&c| (f64::from(c) + sigma * rng.next()) as f32)
                    .collect()
            };
            let labels: Vec<u32> = (0..clusters * per_cluster)
                .map(|i| (i % clusters) as u32)
                .collect();
            let rows = labels.iter().map(|&k| draw(k as usize, &mut rng)).collect();
            let query_labels: Vec<u32> = (0..queries)
                .map(|_| (rng.uniform() * clusters as f64) as u32 % clusters as u32)
                .collect();
            let queries = query_labels
                .iter()
                .map(|&k| draw(k as usize, &mut rng))
                .collect();
            Mixture {
                dims,
                centres,
                rows,
                labels,
                queries,
                query_labels,
            }
        }

        fn clustered() -> Self {
            Mixture::new(384, 64, 64, 64)
        }

        fn mean(&self) -> Vec<f32> {
            let mut sum = vec![0f64; self.dims];
            for row in &self.rows {
                for (s, &v) in sum.iter_mut().zip(row) {
                    *s += f64::from(v);
                }
            }
            let n = self.rows.len() as f64;
            sum.iter().map(|s| (s / n) as f32).collect()
        }
    }

    type Coded = (Vec<u8>, Factors);

    fn encode_all(regions: &Regions, data: &Mixture) -> Vec<Coded> {
        data.rows
            .iter()
            .zip(&data.labels)
            .map(|(row, &k)| {
                let mut code = vec![0u8; regions.code_bytes()];
                let factors = regions.encode(k, row, &mut code);
                (code, factors)
            })
            .collect()
    }

    fn encode_global(q: &Quantizer, data: &Mixture) -> Vec<Coded> {
        data.rows
            .iter()
            .map(|row| {
                let mut code = vec![0u8; q.code_bytes()];
                let factors = q.encode(row, &mut code);
                (code, factors)
            })
            .collect()
    }

    /// Regions reproduce the single-centroid quantizer of their centroid: codes, factors and
    /// same-region pairs bitwise; query estimates bitwise for the same rotated query `Pq − Pc`,
    /// and within f32 rounding of the rotation against `P(q − c)`.
    fn check_against_single(regions: &Regions, region: u32, single: &Quantizer, data: &Mixture) {
        let mut coded = Vec::new();
        for row in data.rows.iter().take(40) {
            let mut code = vec![0u8; regions.code_bytes()];
            let mut expected = vec![0u8; single.code_bytes()];
            let factors = regions.encode(region, row, &mut code);
            assert_eq!(factors, single.encode(row, &mut expected));
            assert_eq!(code, expected);
            coded.push((code, factors));
        }
        for a in &coded[..10] {
            for b in &coded {
                let got = regions.pair_distance((region, &a.0, &a.1), (region, &b.0, &b.1));
                let want = single.pair_distance((&a.0, &a.1), (&b.0, &b.1));
                assert_eq!(got.to_bits(), want.to_bits());
            }
        }
        let mut worst = 0f64;
        for query in data.queries.iter().take(8) {
            let mut prepared = regions.prepare(query);
            let c = regions.centroid(region);
            let pc = regions.row(&regions.rotated, region);
            let x = prepared
                .rotated
                .iter()
                .zip(pc)
                .map(|(&q, &c)| q - c)
                .collect();
            let same = single.prepare_residual(&single.residual(query).with_rotated(x));
            let direct = single.prepare(query);
            assert_eq!(c, single.centroid());
            for (code, f) in &coded {
                let got = regions.distance(&mut prepared, region, code, f);
                let bound = regions.error_bound(&mut prepared, region, f, 1.0);
                let full = regions.bound(&mut prepared, region, code, f, 1.0);
                // The query's constant (‖q − c‖² or ⟨q, c⟩) comes from the f32 kernels here and
                // from f64 sums in `Quantizer::residual`: equal but for their rounding.
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * bound;
                assert!(close(got, single.distance(&same, code, f)));
                assert_eq!(bound.to_bits(), single.error_bound(&same, f, 1.0).to_bits());
                assert!(close(full, single.bound(&same, code, f, 1.0)));
                let gap = (got - single.distance(&direct, code, f)).abs();
                worst = worst.max(gap / bound);
            }
            assert_eq!(prepared.prepared_regions(), 1);
        }
        // `Pq − Pc` and `P(q − c)` differ by f32 rounding only: a tiny part of the bound.
        assert!(worst < 1e-3, "{worst}");
    }

    #[test]
    fn one_region_is_the_single_centroid_quantizer() {
        let data = Mixture::new(200, 6, 20, 8);
        let centroid = data.mean();
        for metric in METRICS {
            for (bits, layout) in [
                (1, Layout::BitPlanes),
                (2, Layout::BitPlanes),
                (4, Layout::BitPlanes),
                (8, Layout::BitPlanes),
                (8, Layout::Bytes),
            ] {
                let single = match layout {
                    Layout::BitPlanes => Quantizer::new(200, bits, metric, centroid.clone(), 9),
                    Layout::Bytes => Quantizer::with_byte_codes(200, metric, centroid.clone(), 9),
                };
                let regions = Regions::like(&single, centroid.clone());
                assert_eq!(regions.count(), 1);
                assert_eq!(regions.layout(), layout);
                check_against_single(&regions, 0, &single, &data);
            }
        }
    }

    #[test]
    fn every_region_is_its_own_single_centroid_quantizer() {
        let data = Mixture::new(200, 5, 20, 8);
        for metric in METRICS {
            for (bits, layout) in [(1, Layout::BitPlanes), (3, Layout::BitPlanes)] {
                let regions = Regions::new(200, bits, metric, layout, 17, data.centres.clone());
                for k in 0..regions.count() as u32 {
                    check_against_single(&regions, k, &regions.quantizer(k), &data);
                }
            }
        }
    }

    /// Mean absolute error of the query-to-code estimate, over all pairs and over pairs of the
    /// query's own cluster (the near rows a search decides between).
    fn query_errors(
        data: &Mixture,
        mut estimate: impl FnMut(usize, usize) -> f64,
        exact: impl Fn(&[f32], &[f32]) -> f64,
    ) -> (f64, f64) {
        let (mut all, mut n_all, mut near, mut n_near) = (0f64, 0f64, 0f64, 0f64);
        for (qi, query) in data.queries.iter().enumerate() {
            for (ri, row) in data.rows.iter().enumerate() {
                let error = (estimate(qi, ri) - exact(query, row)).abs();
                all += error;
                n_all += 1.0;
                if data.labels[ri] == data.query_labels[qi] {
                    near += error;
                    n_near += 1.0;
                }
            }
        }
        (all / n_all, near / n_near)
    }

    #[test]
    fn regions_cut_the_query_error_on_clustered_data() {
        let data = Mixture::clustered();
        for metric in METRICS {
            for bits in [1, 2, 4] {
                let regions = Regions::new(
                    384,
                    bits,
                    metric,
                    Layout::BitPlanes,
                    5,
                    data.centres.clone(),
                );
                let global = Quantizer::new(384, bits, metric, data.mean(), 5);
                let (coded, coded_global) =
                    (encode_all(&regions, &data), encode_global(&global, &data));
                let mut prepared: Vec<_> =
                    data.queries.iter().map(|q| regions.prepare(q)).collect();
                let prepared_global: Vec<_> =
                    data.queries.iter().map(|q| global.prepare(q)).collect();
                let exact = |a: &[f32], b: &[f32]| global.exact_distance(a, b);
                let with_regions = query_errors(
                    &data,
                    |qi, ri| {
                        let (code, f) = &coded[ri];
                        regions.distance(&mut prepared[qi], data.labels[ri], code, f)
                    },
                    exact,
                );
                let with_one = query_errors(
                    &data,
                    |qi, ri| {
                        let (code, f) = &coded_global[ri];
                        global.distance(&prepared_global[qi], code, f)
                    },
                    exact,
                );
                let all = with_regions.0 / with_one.0;
                let near = with_regions.1 / with_one.1;
                assert!(all < 0.4, "{metric:?} {bits} bits: all pairs {all}");
                assert!(
                    near < 1.0 / 3.0,
                    "{metric:?} {bits} bits: near pairs {near}"
                );
            }
        }
    }

    #[test]
    fn the_bound_holds_in_every_region() {
        let data = Mixture::new(384, 64, 64, 128);
        for metric in METRICS {
            for bits in [1, 2, 4] {
                let regions = Regions::new(
                    384,
                    bits,
                    metric,
                    Layout::BitPlanes,
                    6,
                    data.centres.clone(),
                );
                let coded = encode_all(&regions, &data);
                let mut outside = vec![0usize; regions.count()];
                let mut total = vec![0usize; regions.count()];
                for query in &data.queries {
                    let mut prepared = regions.prepare(query);
                    for ((row, &k), (code, f)) in data.rows.iter().zip(&data.labels).zip(&coded) {
                        let estimate = regions.distance(&mut prepared, k, code, f);
                        let bound = regions.error_bound(&mut prepared, k, f, 4.0);
                        let exact = regions.exact_distance(query, row);
                        total[k as usize] += 1;
                        if (estimate - exact).abs() > bound {
                            outside[k as usize] += 1;
                        }
                    }
                    assert_eq!(prepared.prepared_regions(), regions.count());
                }
                let worst = outside
                    .iter()
                    .zip(&total)
                    .map(|(&o, &t)| o as f64 / t as f64)
                    .fold(0f64, f64::max);
                assert!(
                    worst <= 1e-3,
                    "{metric:?} {bits} bits: {worst} of a region outside"
                );
            }
        }
    }

    /// Error sums of the code-to-code estimates: `(Σ|e|, Σe, Σe², n)`.
    #[derive(Default)]
    struct Errors(f64, f64, f64, f64);

    impl Errors {
        fn add(&mut self, error: f64) {
            self.0 += error.abs();
            self.1 += error;
            self.2 += error * error;
            self.3 += 1.0;
        }

        fn mean_abs(&self) -> f64 {
            self.0 / self.3
        }
    }

    #[test]
    fn pair_estimates_across_and_within_regions() {
        // With an offset common to all centres, `‖c‖` is far above `‖c_a − c_b‖`.
        for offset in [0.0, 3.0] {
            let data = Mixture::offset(384, 64, 64, 0, offset);
            check_pairs(&data);
        }
    }

    fn check_pairs(data: &Mixture) {
        let n = data.rows.len();
        for metric in METRICS {
            for bits in [1, 2, 4] {
                let centres = data.centres.clone();
                let regions = Regions::new(384, bits, metric, Layout::BitPlanes, 8, centres);
                let global = Quantizer::new(384, bits, metric, data.mean(), 8);
                let singles: Vec<_> = (0..64).map(|k| regions.quantizer(k)).collect();
                let coded = encode_all(&regions, data);
                let coded_global = encode_global(&global, data);
                let (mut cross, mut cross_one) = (Errors::default(), Errors::default());
                let (mut within, mut within_one) = (Errors::default(), Errors::default());
                // Pairs of distinct codes only: one code's error is shared by all its pairs.
                let mut disjoint = Errors::default();
                // Rows are labelled `i % 64`: partners `i + m` lie in other regions, partners
                // `i + 64 m` in the same.
                for a in 0..n {
                    for m in 1..=4 {
                        for (b, same) in [((a + m) % n, false), ((a + 64 * m) % n, true)] {
                            let (ka, kb) = (data.labels[a], data.labels[b]);
                            assert_eq!(ka == kb, same);
                            let ((code_a, fa), (code_b, fb)) = (&coded[a], &coded[b]);
                            let estimate =
                                regions.pair_distance((ka, code_a, fa), (kb, code_b, fb));
                            let (ga, gb) = (&coded_global[a], &coded_global[b]);
                            let one = global.pair_distance((&ga.0, &ga.1), (&gb.0, &gb.1));
                            let exact = regions.exact_distance(&data.rows[a], &data.rows[b]);
                            if same {
                                let single = &singles[ka as usize];
                                let want = single.pair_distance((code_a, fa), (code_b, fb));
                                assert_eq!(estimate.to_bits(), want.to_bits());
                                within.add(estimate - exact);
                                within_one.add(one - exact);
                            } else {
                                cross.add(estimate - exact);
                                cross_one.add(one - exact);
                                if m == 1 && a % 2 == 0 {
                                    disjoint.add(estimate - exact);
                                }
                            }
                        }
                    }
                }
                let bias = disjoint.1 / disjoint.3;
                let variance = disjoint.2 / disjoint.3 - bias * bias;
                let standard_error = (variance / disjoint.3).sqrt();
                let cross_ratio = cross.mean_abs() / cross_one.mean_abs();
                let within_ratio = within.mean_abs() / within_one.mean_abs();
                assert!(
                    bias.abs() < 4.0 * standard_error,
                    "{metric:?} {bits} bits: bias {bias} against standard error {standard_error}"
                );
                assert!(
                    cross_ratio < 0.5,
                    "{metric:?} {bits} bits: across {cross_ratio}"
                );
                assert!(
                    within_ratio < 0.2,
                    "{metric:?} {bits} bits: within {within_ratio}"
                );
            }
        }
    }

    #[test]
    fn nearest_region_is_the_true_centre() {
        let data = Mixture::clustered();
        for metric in METRICS {
            let regions = Regions::new(384, 1, metric, Layout::BitPlanes, 1, data.centres.clone());
            for (row, &k) in data.rows.iter().zip(&data.labels) {
                assert_eq!(regions.nearest_region(row), k);
            }
            for (query, &k) in data.queries.iter().zip(&data.query_labels) {
                assert_eq!(regions.nearest_region(query), k);
            }
        }
    }
}
