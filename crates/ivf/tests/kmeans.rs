//! k-means, assignment and probe selection against brute force, over plain f32 vectors.

use vector_ivf::{assign, kmeans, probes, Random, Space};

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Random for Rng {
    fn double(&mut self) -> f64 {
        (self.uint64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uint32(&mut self) -> u32 {
        (self.uint64() >> 32) as u32
    }
}

impl Rng {
    fn uint64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn normal(&mut self) -> f32 {
        // Box-Muller.
        let u = self.double().max(1e-12);
        let v = self.double();
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    }
}

/// Euclidean (or, spherical: angular) space over f32 vectors.
struct F32Space {
    dims: usize,
    spherical: bool,
}

fn l2(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y) * f64::from(x - y))
        .sum::<f64>()
        .sqrt()
}

fn norm(a: &[f32]) -> f64 {
    a.iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt()
}

impl Space for F32Space {
    type Point = Vec<f32>;
    fn dimensions(&self) -> usize {
        self.dims
    }
    fn distance(&self, a: &Vec<f32>, b: &Vec<f32>) -> f64 {
        if self.spherical {
            let ip: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum();
            ip.clamp(-1.0, 1.0).acos() / std::f64::consts::PI
        } else {
            l2(a, b)
        }
    }
    fn spherical(&self) -> bool {
        self.spherical
    }
    fn normalize(&self, p: &Vec<f32>) -> Vec<f32> {
        let n = norm(p);
        if n > 0.0 {
            p.iter().map(|x| (f64::from(*x) / n) as f32).collect()
        } else {
            p.clone()
        }
    }
    fn add_to(&self, p: &Vec<f32>, sums: &mut [f32]) {
        for (s, x) in sums.iter_mut().zip(p) {
            *s += x;
        }
    }
    fn point_from(&self, x: &[f32]) -> Vec<f32> {
        x.to_vec()
    }
    fn center_norm(&self, p: &Vec<f32>) -> Option<f64> {
        self.spherical.then(|| norm(p))
    }
}

/// `clusters` Gaussian clusters of `per` points around well separated centers.
fn clustered(
    rng: &mut Rng,
    clusters: usize,
    per: usize,
    dims: usize,
) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let truth: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dims).map(|_| rng.normal() * 20.0).collect())
        .collect();
    let mut points = Vec::new();
    for c in &truth {
        for _ in 0..per {
            points.push(c.iter().map(|x| x + rng.normal()).collect());
        }
    }
    (truth, points)
}

#[test]
fn finds_well_separated_clusters() {
    let mut rng = Rng(7);
    let (truth, points) = clustered(&mut rng, 8, 200, 16);
    let space = F32Space {
        dims: 16,
        spherical: false,
    };
    let centers = kmeans::centers(&space, &points, 8, &mut rng, || {}).unwrap();
    assert_eq!(centers.len(), 8);
    // Every true center has a found center within a few units (the clusters are 20 apart).
    for t in &truth {
        let nearest = centers.iter().map(|c| l2(c, t)).fold(f64::MAX, f64::min);
        assert!(nearest < 1.0, "true center {t:?} missed by {nearest}");
    }
}

#[test]
fn converged_centers_are_the_means_of_their_clusters() {
    let mut rng = Rng(11);
    let (_, points) = clustered(&mut rng, 5, 100, 8);
    let space = F32Space {
        dims: 8,
        spherical: false,
    };
    let centers = kmeans::centers(&space, &points, 12, &mut rng, || {}).unwrap();
    let mut sums = vec![vec![0f64; 8]; centers.len()];
    let mut counts = vec![0usize; centers.len()];
    for p in &points {
        let c = assign::nearest_list(centers.iter().map(|c| l2(p, c)));
        counts[c] += 1;
        for (s, x) in sums[c].iter_mut().zip(p) {
            *s += f64::from(*x);
        }
    }
    for (c, center) in centers.iter().enumerate() {
        if counts[c] == 0 {
            continue;
        }
        for (i, x) in center.iter().enumerate() {
            let mean = sums[c][i] / counts[c] as f64;
            assert!(
                (f64::from(*x) - mean).abs() < 1e-3,
                "center {c} dim {i}: {x} vs mean {mean}"
            );
        }
    }
}

#[test]
fn spherical_centers_are_unit_vectors() {
    let mut rng = Rng(3);
    let (_, points) = clustered(&mut rng, 4, 50, 6);
    let space = F32Space {
        dims: 6,
        spherical: true,
    };
    let samples: Vec<Vec<f32>> = points.iter().map(|p| space.normalize(p)).collect();
    let centers = kmeans::centers(&space, &samples, 6, &mut rng, || {}).unwrap();
    for c in &centers {
        assert!((norm(c) - 1.0).abs() < 1e-5, "norm {}", norm(c));
    }
}

#[test]
fn no_samples_give_random_centers() {
    let mut rng = Rng(5);
    let space = F32Space {
        dims: 3,
        spherical: false,
    };
    let centers = kmeans::centers(&space, &[], 4, &mut rng, || {}).unwrap();
    assert_eq!(centers.len(), 4);
    assert!(centers.iter().flatten().all(|x| (0.0..1.0).contains(x)));
    let spherical = F32Space {
        dims: 3,
        spherical: true,
    };
    let centers = kmeans::centers(&spherical, &[], 4, &mut rng, || {}).unwrap();
    assert!(centers.iter().all(|c| (norm(c) - 1.0).abs() < 1e-5));
}

#[test]
fn fewer_samples_than_lists() {
    let mut rng = Rng(9);
    let space = F32Space {
        dims: 2,
        spherical: false,
    };
    let samples = vec![vec![0.0, 0.0], vec![1.0, 1.0], vec![5.0, 5.0]];
    let centers = kmeans::centers(&space, &samples, 10, &mut rng, || {}).unwrap();
    assert_eq!(centers.len(), 10);
}

#[test]
fn bounds_that_cannot_be_allocated_are_an_error() {
    let mut rng = Rng(2);
    let space = F32Space {
        dims: 2,
        spherical: false,
    };
    // lower bounds for 3 samples x 2^61 lists: more than an address space holds.
    let samples = vec![vec![0.0, 0.0], vec![1.0, 1.0], vec![5.0, 5.0]];
    match kmeans::centers(&space, &samples, 1 << 61, &mut rng, || {}) {
        Err(kmeans::CenterError::OutOfMemory(bytes)) => assert!(bytes > 1 << 62),
        other => panic!("expected OutOfMemory, got {:?}", other.map(|c| c.len())),
    }
}

#[test]
fn nan_centers_are_reported() {
    let mut rng = Rng(1);
    let space = F32Space {
        dims: 2,
        spherical: false,
    };
    let samples = vec![vec![f32::NAN, 0.0], vec![1.0, 1.0]];
    assert_eq!(
        kmeans::centers(&space, &samples, 1, &mut rng, || {}),
        Err(kmeans::CenterError::NaN)
    );
}

#[test]
fn interrupt_is_called_every_iteration() {
    let mut rng = Rng(2);
    let (_, points) = clustered(&mut rng, 3, 30, 4);
    let space = F32Space {
        dims: 4,
        spherical: false,
    };
    let mut calls = 0;
    kmeans::centers(&space, &points, 3, &mut rng, || calls += 1).unwrap();
    assert!((1..=kmeans::MAX_ITERATIONS).contains(&calls));
}

#[test]
fn probes_at_lists_is_every_list_nearest_first() {
    let mut rng = Rng(4);
    let distances: Vec<f64> = (0..50).map(|_| rng.double()).collect();
    let lists = probes::nearest_lists(distances.iter().copied(), 50);
    let mut expected: Vec<u32> = (0..50).collect();
    expected.sort_by(|a, b| distances[*a as usize].total_cmp(&distances[*b as usize]));
    assert_eq!(lists, expected);
    // Fewer probes: the prefix.
    assert_eq!(
        probes::nearest_lists(distances.iter().copied(), 7),
        expected[..7]
    );
}

/// A space that takes pairs `batch` at a time and counts the distances it computes.
struct Batched {
    inner: F32Space,
    batch: usize,
    computed: std::cell::Cell<usize>,
}

impl Space for Batched {
    type Point = Vec<f32>;
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn distance(&self, a: &Vec<f32>, b: &Vec<f32>) -> f64 {
        self.computed.set(self.computed.get() + 1);
        self.inner.distance(a, b)
    }
    fn distances(&self, pairs: &[(&Vec<f32>, &Vec<f32>)], out: &mut [f64]) {
        assert!(
            pairs.len() <= self.batch,
            "{} pairs, batch {}",
            pairs.len(),
            self.batch
        );
        for (o, (a, b)) in out.iter_mut().zip(pairs) {
            *o = self.distance(a, b);
        }
    }
    fn batch(&self) -> usize {
        self.batch
    }
    fn spherical(&self) -> bool {
        self.inner.spherical()
    }
    fn normalize(&self, p: &Vec<f32>) -> Vec<f32> {
        self.inner.normalize(p)
    }
    fn add_to(&self, p: &Vec<f32>, sums: &mut [f32]) {
        self.inner.add_to(p, sums)
    }
    fn point_from(&self, x: &[f32]) -> Vec<f32> {
        self.inner.point_from(x)
    }
    fn center_norm(&self, p: &Vec<f32>) -> Option<f64> {
        self.inner.center_norm(p)
    }
}

/// Distances computed several at a time (with guesses of the next ones needed) give the very
/// centers of one at a time: the same random draws, the same bounds, the same moves.
#[test]
fn batched_distances_give_the_same_centers() {
    for (seed, spherical, clusters, per, dims, k) in [
        (21u64, false, 6, 80, 12, 10),
        (22, true, 5, 60, 9, 7),
        (23, false, 1, 400, 32, 16),
        (24, false, 30, 5, 3, 25),
    ] {
        let mut data_rng = Rng(seed);
        let (_, points) = clustered(&mut data_rng, clusters, per, dims);
        let space = |batch| Batched {
            inner: F32Space { dims, spherical },
            batch,
            computed: std::cell::Cell::new(0),
        };
        let one = space(1);
        let samples: Vec<Vec<f32>> = if spherical {
            points.iter().map(|p| one.normalize(p)).collect()
        } else {
            points
        };
        let expected = kmeans::centers(&one, &samples, k, &mut Rng(seed * 7), || {}).unwrap();
        for batch in [2, 3, 4] {
            let many = space(batch);
            let got = kmeans::centers(&many, &samples, k, &mut Rng(seed * 7), || {}).unwrap();
            assert_eq!(got, expected, "seed {seed}, batch {batch}");
            // Guesses cost extra distances, never fewer than needed.
            assert!(many.computed.get() >= one.computed.get());
        }
    }
}
