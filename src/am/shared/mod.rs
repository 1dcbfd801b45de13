//! What both access methods use:
//!
//! * [`typeinfo`]: the indexed type's facts, its support functions and the distance between a
//!   query and a stored value;
//! * [`routine`]: the capabilities declared to Postgres and the callbacks both share;
//! * [`cost`]: the common part of the cost estimate;
//! * [`scan`]: how a scan owns its state, and the checks of its first call;
//! * [`scan_counters`]: a scan's counters, as EXPLAIN and the last-scan functions show them;
//! * [`sort`]: Postgres's tuplesort over small tuples;
//! * [`parallel`]: parallel builds (context, segment, shared scan and sort);
//! * [`out_of_memory`]: a failed allocation of data-sized memory as an ERROR, not an abort;
//! * [`settings`]: the plumbing of options and settings.

pub mod check;
pub mod cost;
pub mod parallel;
pub mod routine;
pub mod scan;
pub mod scan_counters;
pub mod settings;
pub mod sort;
