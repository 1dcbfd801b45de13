//! The centers of an ivfflat build, as pgvector 0.8.6 computes them.
//!
//! * No sample (an empty table, the INIT fork of an unlogged table): every component of every
//!   center is a uniform random number in `[0, 1)`, normalized for spherical k-means.
//! * Otherwise Elkan's k-means (triangle-inequality bounds, so most distances are skipped),
//!   seeded with k-means++: the first center is a random sample, each next one a sample drawn
//!   with probability proportional to its squared distance to the nearest center so far.
//!   At most 500 iterations; an empty cluster gets a new random center; spherical k-means
//!   normalizes the new centers after each step. Bounds are kept in `f32`, as in pgvector.
//! * The result is checked as pgvector checks it: the right number of centers, no NaN or
//!   infinite component, and no zero norm for operator classes that normalize (cosine).
//!
//! Samples are normalized by the caller when the space is spherical (pgvector does it while
//! sampling).

use crate::{Random, Space};

/// pgvector's iteration limit.
pub const MAX_ITERATIONS: usize = 500;

/// What `CheckCenters` found wrong (pgvector raises these as internal errors), or an
/// allocation of the bounds that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CenterError {
    NotEnoughCenters,
    NaN,
    Infinite,
    ZeroNorm,
    /// Bytes of the allocation that failed (the caller raises "out of memory").
    OutOfMemory(usize),
}

impl CenterError {
    /// pgvector's message.
    pub fn message(self) -> &'static str {
        match self {
            CenterError::NotEnoughCenters => "Not enough centers. Please report a bug.",
            CenterError::NaN => "NaN detected. Please report a bug.",
            CenterError::Infinite => "Infinite value detected. Please report a bug.",
            CenterError::ZeroNorm => "Zero norm detected. Please report a bug.",
            CenterError::OutOfMemory(_) => "out of memory",
        }
    }
}

/// `k` centers for `samples`. `interrupt` is called once per iteration (the server checks for
/// cancellation there).
pub fn centers<S: Space>(
    space: &S,
    samples: &[S::Point],
    k: usize,
    random: &mut impl Random,
    mut interrupt: impl FnMut(),
) -> Result<Vec<S::Point>, CenterError> {
    let centers = if samples.is_empty() {
        random_centers(space, k, random)
    } else {
        elkan(space, samples, k, random, &mut interrupt)?
    };
    check_centers(space, &centers, k)?;
    Ok(centers)
}

/// Uniform random centers (no samples).
fn random_centers<S: Space>(space: &S, k: usize, random: &mut impl Random) -> Vec<S::Point> {
    let d = space.dimensions();
    let mut x = vec![0f32; d];
    let centers: Vec<S::Point> = (0..k)
        .map(|_| {
            for v in x.iter_mut() {
                *v = random.double() as f32;
            }
            space.point_from(&x)
        })
        .collect();
    normalize_all(space, centers)
}

fn normalize_all<S: Space>(space: &S, centers: Vec<S::Point>) -> Vec<S::Point> {
    if space.spherical() {
        centers.iter().map(|c| space.normalize(c)).collect()
    } else {
        centers
    }
}

/// `len` copies of `value`, or the bytes that could not be had: the bounds grow with the
/// samples and lists, so a failed allocation must become an ERROR, not an abort.
fn filled<T: Clone>(len: usize, value: T) -> Result<Vec<T>, CenterError> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| CenterError::OutOfMemory(bytes))?;
    v.resize(len, value);
    Ok(v)
}

/// Elkan's k-means with k-means++ seeding.
fn elkan<S: Space>(
    space: &S,
    samples: &[S::Point],
    k: usize,
    random: &mut impl Random,
    interrupt: &mut impl FnMut(),
) -> Result<Vec<S::Point>, CenterError> {
    let n = samples.len();
    let d = space.dimensions();
    // Sample-major: lower[j * k + c].
    let mut lower = filled(n.saturating_mul(k), 0f32)?;
    let mut centers = seed(space, samples, k, random, &mut lower)?;

    let mut upper = filled(n, 0f32)?;
    let mut closest = filled(n, 0usize)?;
    for j in 0..n {
        let mut min = f32::MAX;
        let mut best = 0;
        for c in 0..k {
            if lower[j * k + c] < min {
                min = lower[j * k + c];
                best = c;
            }
        }
        upper[j] = min;
        closest[j] = best;
    }

    let mut half = filled(k.saturating_mul(k), 0f32)?;
    let mut s = filled(k, 0f32)?;
    let mut moved = filled(k, 0f32)?;
    let mut sums = filled(k.saturating_mul(d), 0f32)?;
    let mut counts = filled(k, 0usize)?;
    for iteration in 0..MAX_ITERATIONS {
        interrupt();
        // Step 1: half the distance between every two centers, and to the nearest other.
        for a in 0..k {
            for_batches(
                space,
                a + 1..k,
                |b| (&centers[a], &centers[b]),
                |b, d| {
                    let h = (0.5 * d) as f32;
                    half[a * k + b] = h;
                    half[b * k + a] = h;
                },
            );
        }
        for a in 0..k {
            let mut min = f32::MAX;
            for b in 0..k {
                if b != a && half[a * k + b] < min {
                    min = half[a * k + b];
                }
            }
            s[a] = min;
        }

        // Steps 2 and 3: reassign, skipping what the bounds rule out.
        let reset_bounds = iteration != 0;
        let mut changes = 0usize;
        for j in 0..n {
            if upper[j] <= s[closest[j]] {
                continue;
            }
            let mut stale = reset_bounds;
            let mut ahead = Ahead::new();
            for c in 0..k {
                let cj = closest[j];
                if c == cj || upper[j] <= lower[j * k + c] || upper[j] <= half[cj * k + c] {
                    continue;
                }
                // Whether center x will need a distance too, as far as the bounds tell now.
                let likely = |x: usize| {
                    x != cj && upper[j] > lower[j * k + x] && upper[j] > half[cj * k + x]
                };
                let dxcx = if stale {
                    let exact = ahead.distance(space, &samples[j], &centers, cj, c, likely) as f32;
                    lower[j * k + cj] = exact;
                    upper[j] = exact;
                    stale = false;
                    exact
                } else {
                    upper[j]
                };
                if dxcx > lower[j * k + c] || dxcx > half[cj * k + c] {
                    let likely = |x: usize| {
                        x != cj && upper[j] > lower[j * k + x] && upper[j] > half[cj * k + x]
                    };
                    let dxc = ahead.distance(space, &samples[j], &centers, c, c + 1, likely) as f32;
                    lower[j * k + c] = dxc;
                    if dxc < dxcx {
                        closest[j] = c;
                        upper[j] = dxc;
                        changes += 1;
                    }
                }
            }
        }

        // Step 4: the means of the clusters (a random point for an empty one).
        sums.iter_mut().for_each(|x| *x = 0.0);
        counts.iter_mut().for_each(|x| *x = 0);
        for j in 0..n {
            let c = closest[j];
            space.add_to(&samples[j], &mut sums[c * d..(c + 1) * d]);
            counts[c] += 1;
        }
        for c in 0..k {
            let x = &mut sums[c * d..(c + 1) * d];
            if counts[c] > 0 {
                for v in x.iter_mut() {
                    if v.is_infinite() {
                        *v = if *v > 0.0 { f32::MAX } else { -f32::MAX };
                    }
                    *v /= counts[c] as f32;
                }
            } else {
                for v in x.iter_mut() {
                    *v = random.double() as f32;
                }
            }
        }
        let new_centers: Vec<S::Point> = (0..k)
            .map(|c| space.point_from(&sums[c * d..(c + 1) * d]))
            .collect();
        let new_centers = normalize_all(space, new_centers);

        // Steps 5 and 6: move the bounds by how far each center moved.
        for_batches(
            space,
            0..k,
            |c| (&centers[c], &new_centers[c]),
            |c, d| {
                moved[c] = d as f32;
            },
        );
        for j in 0..n {
            for c in 0..k {
                let b = lower[j * k + c] - moved[c];
                lower[j * k + c] = if b < 0.0 { 0.0 } else { b };
            }
            upper[j] += moved[closest[j]];
        }

        // Step 7.
        centers = new_centers;
        if changes == 0 && iteration != 0 {
            break;
        }
    }
    Ok(centers)
}

/// k-means++: fills `lower[j * k + c]` with the distance of sample `j` to center `c`.
fn seed<S: Space>(
    space: &S,
    samples: &[S::Point],
    k: usize,
    random: &mut impl Random,
    lower: &mut [f32],
) -> Result<Vec<S::Point>, CenterError> {
    let n = samples.len();
    let mut centers = Vec::new();
    centers
        .try_reserve_exact(k)
        .map_err(|_| CenterError::OutOfMemory(k.saturating_mul(std::mem::size_of::<S::Point>())))?;
    centers.push(samples[random.uint32() as usize % n].clone());
    let mut weight = filled(n, f32::MAX)?;
    for i in 0..k {
        let mut sum = 0f64;
        let center = &centers[i];
        for_batches(
            space,
            0..n,
            |j| (&samples[j], center),
            |j, dist| {
                lower[j * k + i] = dist as f32;
                let squared = dist * dist;
                if squared < f64::from(weight[j]) {
                    weight[j] = squared as f32;
                }
                sum += f64::from(weight[j]);
            },
        );
        if i + 1 == k {
            break;
        }
        let mut choice = sum * random.double();
        let mut j = 0;
        while j < n - 1 {
            choice -= f64::from(weight[j]);
            if choice <= 0.0 {
                break;
            }
            j += 1;
        }
        centers.push(samples[j].clone());
    }
    Ok(centers)
}

/// Most pairs any [`Space::batch`] is used for.
const MAX_BATCH: usize = 4;

/// Calls `each(i, distance(pair(i)))` for every `i` of `range`, in order, computing the
/// distances [`Space::batch`] at a time.
fn for_batches<'p, S: Space>(
    space: &S,
    range: std::ops::Range<usize>,
    pair: impl Fn(usize) -> (&'p S::Point, &'p S::Point),
    mut each: impl FnMut(usize, f64),
) where
    S::Point: 'p,
{
    let batch = space.batch().clamp(1, MAX_BATCH);
    let mut out = [0f64; MAX_BATCH];
    let mut start = range.start;
    while start < range.end {
        let end = (start + batch).min(range.end);
        let first = pair(start);
        let mut pairs = [first; MAX_BATCH];
        for (slot, i) in pairs.iter_mut().zip(start..end) {
            *slot = pair(i);
        }
        space.distances(&pairs[..end - start], &mut out[..end - start]);
        for (i, d) in (start..end).zip(out) {
            each(i, d);
        }
        start = end;
    }
}

/// One sample's distances to centers, computed a batch at a time: the one needed now and
/// the next centers the bounds do not rule out yet, which will probably be needed next.
/// Every distance is what [`Space::distance`] gives, so the result does not depend on the
/// batch; a guess that turns out unneeded costs only its share of the batch.
struct Ahead {
    centers: [usize; MAX_BATCH],
    values: [f64; MAX_BATCH],
    len: usize,
}

impl Ahead {
    fn new() -> Self {
        Ahead {
            centers: [0; MAX_BATCH],
            values: [0.0; MAX_BATCH],
            len: 0,
        }
    }

    /// `distance(sample, centers[want])`; when not at hand, computed with the first centers
    /// from `from` on for which `likely` holds.
    fn distance<S: Space>(
        &mut self,
        space: &S,
        sample: &S::Point,
        centers: &[S::Point],
        want: usize,
        from: usize,
        likely: impl Fn(usize) -> bool,
    ) -> f64 {
        if let Some(i) = self.centers[..self.len].iter().position(|&c| c == want) {
            return self.values[i];
        }
        let batch = space.batch().clamp(1, MAX_BATCH);
        self.centers[0] = want;
        self.len = 1;
        let mut x = from;
        while self.len < batch && x < centers.len() {
            if x != want && likely(x) {
                self.centers[self.len] = x;
                self.len += 1;
            }
            x += 1;
        }
        let pairs = self.centers.map(|c| (sample, &centers[c]));
        space.distances(&pairs[..self.len], &mut self.values[..self.len]);
        self.values[0]
    }
}

fn check_centers<S: Space>(space: &S, centers: &[S::Point], k: usize) -> Result<(), CenterError> {
    if centers.len() != k {
        return Err(CenterError::NotEnoughCenters);
    }
    let mut x = vec![0f32; space.dimensions()];
    for center in centers {
        x.iter_mut().for_each(|v| *v = 0.0);
        space.add_to(center, &mut x);
        if x.iter().any(|v| v.is_nan()) {
            return Err(CenterError::NaN);
        }
        if x.iter().any(|v| v.is_infinite()) {
            return Err(CenterError::Infinite);
        }
    }
    for center in centers {
        if space.center_norm(center) == Some(0.0) {
            return Err(CenterError::ZeroNorm);
        }
    }
    Ok(())
}
