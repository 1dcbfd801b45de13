//! Choosing the regions of a build: how many, which rows to learn them from, and their
//! centroids (k-means on those rows).
//!
//! A code's error grows with its vector's distance to the centroid it is taken around, so the
//! centroids are the means of the table's clusters: plain Euclidean k-means (the mean is what
//! minimizes the summed squared distance), for every metric, on a uniform sample of the rows.

use crate::rotation::SplitMix64;
use vector_ivf::{kmeans, Random, Space};

/// Rows per region a build aims at.
pub const ROWS_PER_REGION: u64 = 2_000;
/// The most regions a build makes: a query prepares itself once per region it meets.
pub const MAX_BUILD_REGIONS: usize = 256;
/// Sample rows per region k-means learns from.
pub const SAMPLES_PER_REGION: usize = 64;
/// A build left to choose keeps its regions only if they cut the mean squared distance from a
/// row to its centroid to this share of the distance to the mean, or less: a code's error grows
/// with that distance, and each region a walk meets costs the query a preparation (on 100,000
/// real 384-d rows 50 regions kept recall and cost a third more time a query).
pub const MAX_KEPT_ERROR_SHARE: f64 = 0.5;

/// The regions a build of `rows` rows makes: one per [`ROWS_PER_REGION`] rows, at least one
/// and at most [`MAX_BUILD_REGIONS`].
pub fn region_count(rows: u64) -> usize {
    (rows / ROWS_PER_REGION).clamp(1, MAX_BUILD_REGIONS as u64) as usize
}

/// A build's generator for its sample and k-means: the rotation's SplitMix64 under another
/// seed, so a build after `setseed()` is repeatable.
#[derive(Clone, Debug)]
pub struct SplitMix(SplitMix64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl Random for SplitMix {
    fn double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uint32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}

/// `want` distinct row numbers below `rows`, ascending, uniformly drawn (all rows when there
/// are no more than `want`).
pub fn sample_rows(rows: u64, want: usize, random: &mut SplitMix) -> Vec<u64> {
    if rows <= want as u64 {
        return (0..rows).collect();
    }
    // Floyd's algorithm: `want` draws, each distinct.
    let mut chosen = std::collections::BTreeSet::new();
    for j in rows - want as u64..rows {
        let t = random.next_u64() % (j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

/// Euclidean space over `f32` rows, for k-means.
struct Euclidean {
    dims: usize,
}

impl Space for Euclidean {
    type Point = Vec<f32>;

    fn dimensions(&self) -> usize {
        self.dims
    }

    fn distance(&self, a: &Vec<f32>, b: &Vec<f32>) -> f64 {
        vector_distance::f32::l2_distance(a, b)
    }

    fn spherical(&self) -> bool {
        false
    }

    fn normalize(&self, point: &Vec<f32>) -> Vec<f32> {
        point.clone()
    }

    fn add_to(&self, point: &Vec<f32>, sums: &mut [f32]) {
        for (s, v) in sums.iter_mut().zip(point) {
            *s += v;
        }
    }

    fn point_from(&self, x: &[f32]) -> Vec<f32> {
        x.to_vec()
    }

    fn center_norm(&self, _: &Vec<f32>) -> Option<f64> {
        None
    }
}

/// Why no centroids came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitError {
    /// An allocation of this many bytes failed.
    OutOfMemory(usize),
    /// A centroid came out with a non-finite element (a sample had one).
    NotFinite,
}

/// `k` centroids (row-major, `k · dims` values) for `samples` (rows of `dims` values, at least
/// one): k-means++ seeding, then Elkan's k-means. Fewer distinct samples than `k` give
/// duplicate centroids, which cost nothing but their rows. `interrupt` runs once per
/// iteration.
pub fn fit_centroids(
    samples: &[Vec<f32>],
    dims: usize,
    k: usize,
    random: &mut SplitMix,
    interrupt: impl FnMut(),
) -> Result<Vec<f32>, FitError> {
    assert!(
        !samples.is_empty() && k >= 1,
        "k-means needs samples and k ≥ 1"
    );
    let space = Euclidean { dims };
    let centers = match kmeans::centers(&space, samples, k, random, interrupt) {
        Ok(c) => c,
        Err(kmeans::CenterError::OutOfMemory(bytes)) => return Err(FitError::OutOfMemory(bytes)),
        Err(_) => return Err(FitError::NotFinite),
    };
    Ok(centers.concat())
}

/// The mean squared distance from each sample to its nearest centroid (row-major, `dims`
/// values each) as a share of its mean squared distance to `mean`: how much of the codes'
/// error the regions remove (1 when `mean` is as near as any centroid).
pub fn error_share(samples: &[Vec<f32>], centroids: &[f32], mean: &[f32]) -> f64 {
    let dims = mean.len();
    let (mut near, mut far) = (0f64, 0f64);
    for s in samples {
        far += vector_distance::f32::l2_squared_distance(s, mean);
        near += centroids
            .chunks_exact(dims)
            .map(|c| vector_distance::f32::l2_squared_distance(s, c))
            .fold(f64::INFINITY, f64::min);
    }
    if far > 0.0 {
        near / far
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_count_follows_the_rows() {
        assert_eq!(region_count(0), 1);
        assert_eq!(region_count(3_999), 1);
        assert_eq!(region_count(100_000), 50);
        assert_eq!(region_count(10_000_000), MAX_BUILD_REGIONS);
    }

    #[test]
    fn samples_are_distinct_and_in_range() {
        let mut random = SplitMix::new(7);
        let rows = sample_rows(1_000, 100, &mut random);
        assert_eq!(rows.len(), 100);
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert!(rows.iter().all(|&r| r < 1_000));
        assert_eq!(sample_rows(5, 100, &mut random), vec![0, 1, 2, 3, 4]);
        // Spread over the rows, not bunched at one end.
        let many = sample_rows(1_000_000, 10_000, &mut random);
        let low = many.iter().filter(|&&r| r < 500_000).count();
        assert!((4_500..5_500).contains(&low), "{low}");
    }

    #[test]
    fn regions_cut_the_error_of_clusters_not_of_a_cloud() {
        let dims = 32;
        let mut random = SplitMix::new(11);
        // 16 tight clusters: the regions remove nearly all of the distance to the mean.
        let centres: Vec<Vec<f32>> = (0..16)
            .map(|_| (0..dims).map(|_| random.double() as f32 * 4.0).collect())
            .collect();
        let clustered: Vec<Vec<f32>> = (0..1600)
            .map(|j| {
                let c = &centres[j % 16];
                c.iter()
                    .map(|&v| v + random.double() as f32 * 0.2)
                    .collect()
            })
            .collect();
        // One uniform cloud: 16 regions of 32 dimensions remove little.
        let cloud: Vec<Vec<f32>> = (0..1600)
            .map(|_| (0..dims).map(|_| random.double() as f32).collect())
            .collect();
        for (samples, low) in [(&clustered, true), (&cloud, false)] {
            let mut mean = vec![0f32; dims];
            for s in samples.iter() {
                for (m, v) in mean.iter_mut().zip(s) {
                    *m += v / samples.len() as f32;
                }
            }
            let fitted = fit_centroids(samples, dims, 16, &mut random, || {}).unwrap();
            let share = error_share(samples, &fitted, &mean);
            if low {
                assert!(share < 0.05, "clusters: {share}");
            } else {
                assert!(share > MAX_KEPT_ERROR_SHARE, "cloud: {share}");
            }
            // The mean alone removes nothing.
            assert!((error_share(samples, &mean, &mean) - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn centroids_find_the_clusters() {
        // 8 far-apart clusters in 16 dimensions: each fitted centroid lies near one centre, and
        // every centre gets one.
        let (dims, clusters) = (16, 8);
        let mut random = SplitMix::new(3);
        let centres: Vec<Vec<f32>> = (0..clusters)
            .map(|c| (0..dims).map(|i| if i == c { 10.0 } else { 0.0 }).collect())
            .collect();
        let samples: Vec<Vec<f32>> = (0..800)
            .map(|j| {
                let c = &centres[j % clusters];
                c.iter()
                    .map(|&v| v + (random.double() as f32 - 0.5) * 0.5)
                    .collect()
            })
            .collect();
        let fitted = fit_centroids(&samples, dims, clusters, &mut random, || {}).unwrap();
        assert_eq!(fitted.len(), clusters * dims);
        let mut seen = vec![false; clusters];
        for row in fitted.chunks_exact(dims) {
            let (best, d) = centres
                .iter()
                .enumerate()
                .map(|(i, c)| (i, vector_distance::f32::l2_distance(row, c)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            assert!(d < 0.5, "a centroid {d} from its cluster's centre");
            seen[best] = true;
        }
        assert!(seen.iter().all(|&s| s), "every cluster has a centroid");
    }
}
