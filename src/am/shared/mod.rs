//! What both access methods use:
//!
//! * [`build`]: the table scan of a build (one callback for every scan), progress reports and
//!   `maintenance_work_mem`;
//! * [`check`]: the verifiers' common part (opening the target, the `heapallindexed` pass);
//! * [`routine`]: the capabilities declared to Postgres and the callbacks both share;
//! * [`cost`]: the common part of the cost estimate;
//! * [`scan`]: how a scan owns its state, and the checks of its first call;
//! * [`scan_counters`]: a scan's counters, as EXPLAIN and the last-scan functions show them;
//! * [`sort`]: Postgres's tuplesort over small tuples;
//! * [`parallel`]: parallel builds (context, segment, shared scan and sort);
//! * [`settings`]: the plumbing of options and settings.

pub mod build;
pub mod check;
pub mod cost;
pub mod parallel;
pub mod routine;
pub mod scan;
pub mod scan_counters;
pub mod settings;
pub mod sort;
