//! A simulated disk ([`disk`]) and hnsw index on it ([`graph`]), to test the policy
//! deterministically and to predict cold latency ([`run`]; `examples/predict.rs`).

pub mod cache;
pub mod disk;
pub mod graph;
pub mod run;

pub use disk::{Call, DiskModel, HostModel, SimConfig, SimDisk, SimPage, SimStats, Workers};
pub use graph::{build_graph, random_vectors, CpuModel, PageMap, PagedStore, SerialStore};
