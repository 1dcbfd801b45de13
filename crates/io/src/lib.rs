//! The cold-read policy of the index scans (hnsw's graph walks, ivfflat's list chains), free of
//! PostgreSQL: when a walk overlaps its
//! reads, how many it keeps in flight, what it hints and when it forgets a hint, and what it
//! counts. The extension implements [`BlockSource`] over the buffer manager; the crate
//! `vector-io-sim` (crates/io-sim, not linked by the extension) implements it over a simulated
//! disk, to test the policy and predict cold latency.
//!
//! * [`reader`]: [`BlockReader`] and [`BatchRead`], the warm/cold state machine, the in-flight
//!   budget and the hint window, read streams, look-ahead hints and their expiry.
//! * [`layout`]: a batch's ids grouped by block ([`BatchLayout`]).
//! * [`lookahead`]: captured neighbor lists and look-ahead planning.
//! * [`chain`]: read-ahead along chains of pages (ivfflat's lists) ([`ChainHints`]).
//! * [`heap`]: table-row hints of cold scans ([`HeapRowHints`], [`TableFetchWatch`]).
//! * [`range`]: reading a contiguous block range with a buffer access strategy.
//! * [`pins`]: how many pages a batch keeps pinned.
//! * [`settings`], [`counters`], [`source`]: the settings, the counters and the trait.

pub mod chain;
pub mod counters;
pub mod heap;
pub mod layout;
pub mod lookahead;
pub mod pins;
pub mod range;
pub mod reader;
pub mod settings;
pub mod source;
pub mod speculation;

pub use chain::ChainHints;
pub use counters::IoCounters;
pub use heap::{heap_lookahead_distance, HeapRowHints, TableFetchWatch, TableRow};
pub use layout::BatchLayout;
pub use lookahead::{CapturedNeighbors, Lookahead};
pub use pins::{pin_limit, MAX_PINS};
pub use range::{read_range, RangeRead, RangeWindow};
pub use reader::{forget_last_walk, BatchRead, BlockReader, Walk};
pub use settings::{IoMethod, Settings};
pub use source::{
    BlockNumber, BlockSource, Platform, Prefetched, Read, Strategy, Usage, DEVICE_READ,
};
pub use speculation::Speculation;
