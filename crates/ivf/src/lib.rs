//! IVFFlat's algorithms, as pgvector 0.8.6 runs them, over a small value-space trait so that
//! the Postgres glue (support functions over varlena values) and the tests (plain `f32`
//! vectors) share them.
//!
//! * [`kmeans`]: the build's centers: k-means++ seeding and Elkan's k-means (spherical when
//!   the operator class has a k-means norm), random centers for an empty sample, and
//!   pgvector's checks of the result.
//! * [`assign`]: the list a value belongs to (nearest center, first on ties).
//! * [`probes`]: the lists a scan reads, nearest first, with pgvector's tie order.
//! * [`layout`]: how many pages the lists fill, counted before they are written.
//! * [`memory`]: what pgvector counts against `maintenance_work_mem` during a build.
//! * [`order`]: a scan batch's entries nearest first, sorted only as far as they are read.

pub mod assign;
pub mod kmeans;
pub mod layout;
pub mod memory;
pub mod order;
pub mod probes;

/// The space of an operator class's values, as k-means sees it (pgvector's support functions
/// 3 and 4 and the type's center helpers).
pub trait Space {
    /// A value of the type: a sample or a center.
    type Point: Clone;

    /// Number of components of a center (the column's dimensions, or bits).
    fn dimensions(&self) -> usize;

    /// The k-means distance (support function 3), `a` first.
    fn distance(&self, a: &Self::Point, b: &Self::Point) -> f64;

    /// `distance(a, b)` of each pair into `out` (one per pair). Each result must be exactly
    /// what [`Space::distance`] returns; an implementation may compute several at once.
    fn distances(&self, pairs: &[(&Self::Point, &Self::Point)], out: &mut [f64]) {
        for (o, (a, b)) in out.iter_mut().zip(pairs) {
            *o = self.distance(a, b);
        }
    }

    /// How many pairs [`Space::distances`] computes at once for about the price of one
    /// (1 when it computes them one by one). Above 1, k-means also computes distances it may
    /// turn out not to need, alongside one it needs.
    fn batch(&self) -> usize {
        1
    }

    /// Whether the operator class has a k-means norm (support function 4): samples and
    /// centers are then normalized (spherical k-means).
    fn spherical(&self) -> bool;

    /// The type's normalization (only called when [`Space::spherical`]).
    fn normalize(&self, point: &Self::Point) -> Self::Point;

    /// Adds the components of `point` to `sums` (pgvector's `sumCenter`, in `f32`).
    fn add_to(&self, point: &Self::Point, sums: &mut [f32]);

    /// The value whose components are `x` (pgvector's `updateCenter`: for `bit`, a bit is
    /// set when its component is above 0.5).
    fn point_from(&self, x: &[f32]) -> Self::Point;

    /// The norm of support function 2, when the operator class has one (cosine): a center
    /// with norm 0 is an error.
    fn center_norm(&self, point: &Self::Point) -> Option<f64>;
}

/// The backend's random numbers (`pg_prng` on the global state in the server).
pub trait Random {
    /// Uniform in `[0, 1)`.
    fn double(&mut self) -> f64;
    /// Uniform 32-bit integer.
    fn uint32(&mut self) -> u32;
}
