//! The `hnsw` index access method, as pgvector 0.8.6 defines it: one file per callback group.
//! The graph logic is in `vector_hnsw`; the pages it runs over are in
//! [`crate::stores::hnsw`].

pub mod build;
pub mod check;
pub mod cost;
pub mod handler;
pub mod insert;
pub mod options;
pub mod scan;
pub mod scan_stats;
pub mod vacuum;
