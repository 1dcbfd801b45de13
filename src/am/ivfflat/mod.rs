//! The `ivfflat` index access method, as pgvector 0.8.6 defines it: one file per callback
//! group. k-means, list assignment and probe selection are in `vector_ivf`; the pages are in
//! [`crate::stores::ivfflat`].

pub mod build;
pub mod check;
pub mod cost;
pub mod handler;
pub mod insert;
pub mod options;
pub mod scan;
pub mod scan_stats;
pub mod vacuum;
