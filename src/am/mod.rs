//! Index access methods: the callbacks Postgres calls, one folder per method.
//!
//! * [`hnsw`]: the `hnsw` method's callbacks (handler, options and settings, cost, build,
//!   insert, scan, vacuum, validate). They decode their arguments and dispatch to the graph
//!   algorithms of `vector_hnsw` over the stores in [`crate::stores`].
//! * [`shared`]: what every method uses: the indexed type's facts and support functions.
//! * [`explain`]: the `EXPLAIN (ANALYZE, HNSW)` option (PostgreSQL 18).

pub mod explain;
pub mod hnsw;
pub mod ivfflat;
pub mod shared;
