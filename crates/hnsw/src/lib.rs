//! HNSW graph algorithms over a storage trait, with pgvector 0.8.6's exact
//! search, insert and vacuum semantics.
//!
//! The algorithms are generic over a small store ([`storage`]): a Postgres
//! implementation maps element ids to index TIDs and reads pages, while
//! [`memory::InMemoryGraph`] keeps everything in vectors for tests.
//!
//! * [`mod@search`] — layer search (Algorithm 2), greedy descent, one-shot k-NN.
//!   Each hop gathers all unvisited neighbor ids first and loads them with a
//!   single [`storage::GraphStore::load`] call so a page store can prefetch.
//! * [`scan`] — index scans including `hnsw.iterative_scan`; [`scan_memory`]
//!   measures their memory the way pgvector does.
//! * [`select`] — neighbor selection heuristic (Algorithm 4); [`connect`] —
//!   back-links on a store that keeps distances, with pgvector's cached flags.
//! * [`mod@insert`] — insertion (Algorithm 1) with back-link maintenance.
//! * [`repair`] — vacuum: delete elements, repair the graph around them.
//! * [`filter`] — search for the nearest elements that pass a per-element filter.
//! * [`rerank`] — a quantized graph's candidates reranked by exact distance.
//! * [`level`] — random level assignment.
//! * [`placement`] — which elements share a page when a build writes its graph.

pub mod connect;
pub mod filter;
pub mod insert;
pub mod level;
pub mod memory;
pub mod placement;
pub mod repair;
pub mod rerank;
pub mod scan;
pub mod scan_memory;
pub mod search;
pub mod select;
pub mod storage;

mod id_set;

pub use insert::{insert, GraphParams, InsertOutcome, LinkBack};
pub use memory::InMemoryGraph;
pub use repair::{vacuum, vacuum_with, RepairMode, VacuumReport, VacuumStore};
pub use rerank::{RerankStats, RerankStore, RerankedScan};
pub use scan::{IterativeScan, Scan, ScanParams};
pub use scan_memory::{AllocSetLayout, ContextEvent, ScanMemoryConfig};
pub use search::{search, search_with, search_with_beam, SearchStats};
pub use select::{select_neighbors, Selection};
pub use storage::{Candidate, EntryPoint, GraphStore, GraphWrite};
