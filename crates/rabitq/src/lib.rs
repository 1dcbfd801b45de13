//! RaBitQ codes for the quantized hnsw index (Gao and Long, SIGMOD 2024; extended RaBitQ,
//! SIGMOD 2025), in pure Rust.
//!
//! * [`rotation`] — the seeded fast rotation every vector and query goes through;
//! * [`code`] — choosing a vector's 1-bit or multi-bit code, packing it into bit planes;
//! * [`quantizer`] — one index's quantizer: encoding, prepared queries, the estimated
//!   distances (query to code, code to code) and their error bound;
//! * [`regions`] — codes around per-region centroids over one quantizer, for clustered data;
//! * [`fit`] — how many regions a build makes, and their centroids (k-means on a sample);
//! * [`walk`] — how many candidates a graph walk over codes keeps.
//!
//! The kernels under the estimates (bit-plane dot products with runtime CPU dispatch) live in
//! `vector_distance::codes`.

pub mod code;
pub mod fit;
pub mod quantizer;
pub mod regions;
pub mod rotation;
pub mod walk;

pub use code::Factors;
pub use quantizer::{code_bytes, Layout, Metric, Quantizer, QueryCode, Residual, QUERY_BITS};
pub use regions::{RegionQuery, Regions};
pub use rotation::Rotation;
pub use walk::walk_candidates;
