//! Stores: the implementations of the algorithm crates' storage traits, over the index's
//! pages (through [`crate::storage`]) or in memory (an index build). They hold the on-disk
//! formats' rules (where tuples go, how they change); the algorithms decide what to change.

pub mod check;
pub mod hnsw;
pub mod ivfflat;
