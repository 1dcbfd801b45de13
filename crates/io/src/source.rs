//! What the policy asks of the buffer manager: [`BlockSource`].
//!
//! The pgrx crate implements it over PostgreSQL's buffer manager (`src/storage/io.rs`), and
//! `vector-io-sim` (crates/io-sim) over a simulated disk. Every method is a plain call on a
//! concrete type: the policy is generic over the source, so nothing is dispatched dynamically
//! on the hot path.

use std::ops::Range;
use std::time::Duration;

/// A read that misses shared buffers and takes longer than this came from a device, not from
/// the kernel's page cache: overlapping pays off. (Measured here: 2 µs from the page cache
/// through `ReadBuffer`, p99 10 µs; 45–140 µs from the virtual disk; NVMe drives take 50–100.
/// On 2026-12-05 a host of this kind had a disk answering in 14.8 µs at best (p1 of random 8
/// kB `pread`s, p50 15.8) against 0.9 µs from the page cache (p99 4.1, p99.9 9.6): at 25 µs
/// it read as page cache and nothing overlapped, although 16 reads in flight took 5.9 µs
/// each.)
pub const DEVICE_READ: Duration = Duration::from_micros(10);

/// A block number of a relation fork.
pub type BlockNumber = u32;

/// What hinting a block (`PrefetchBuffer`) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetched {
    /// The block is not in shared buffers: a read was asked of the kernel.
    Started,
    /// The block is in shared buffers already: nothing to read.
    Cached,
    /// Neither (no prefetch support on this platform).
    NotStarted,
}

/// A block read with [`BlockSource::read`].
#[derive(Debug)]
pub struct Read<P> {
    /// The page, pinned (not locked).
    pub page: P,
    /// Found in shared buffers (no read was counted).
    pub hit: bool,
    /// How long the read took, only for a miss read with `timed` set. PostgreSQL cannot tell a
    /// read from the kernel's page cache from a device read: this time is the only signal.
    pub took: Option<Duration>,
}

/// This backend's shared (and local) buffer counters so far (`pgBufferUsage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Blocks found in shared buffers.
    pub hits: i64,
    /// Blocks read into shared buffers.
    pub reads: i64,
}

/// Facts of the server and tablespace a source reads from, asked once per walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The tablespace's `effective_io_concurrency` (or `maintenance_io_concurrency` for
    /// writers); 0 disables overlapping.
    pub io_concurrency: usize,
    /// Read streams exist (PostgreSQL 17+).
    pub read_streams: bool,
    /// The server runs its asynchronous I/O through worker processes (`io_method = worker`):
    /// each worker reads one block at a time, so streams are also given hints.
    pub worker_io: bool,
}

/// How the pages of a block range are kept in shared buffers (`BufferAccessStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// No strategy: pages compete for shared buffers like any other.
    Normal,
    /// `BAS_BULKREAD`: a small ring of buffers, so a large scan does not flush shared buffers.
    BulkRead,
}

/// The buffer manager as the read policy uses it.
///
/// Lifetimes: a stream ([`BlockSource::Stream`], [`BlockSource::RangeStream`]) belongs to the
/// one batch that began it and is ended by it ([`BlockSource::end_stream`],
/// [`BlockSource::end_range`]) before the batch returns; it is never kept between calls. If
/// it is dropped instead (while unwinding from an error), it must free nothing the error's
/// cleanup frees too.
pub trait BlockSource {
    /// A pinned, unlocked page.
    type Page;
    /// A read stream over one hop's blocks.
    type Stream;
    /// A read stream over a contiguous block range.
    type RangeStream;

    /// The server's and tablespace's facts (asked when a walk begins).
    fn platform(&mut self) -> Platform;

    /// `PrefetchBuffer(block)`: starts a read of `block` (without bringing it into shared
    /// buffers), or finds it there.
    fn prefetch(&mut self, block: BlockNumber) -> Prefetched;

    /// `ReadBuffer(block)`, pinned and unlocked. With `timed`, a miss reports how long it took;
    /// without, the clock is never read.
    fn read(&mut self, block: BlockNumber, timed: bool) -> Read<Self::Page>;

    /// This backend's buffer counters now.
    fn usage(&self) -> Usage;

    /// A monotonic clock, from an arbitrary origin (read only to time cold hops).
    fn clock(&mut self) -> Duration;

    /// Begins a read stream returning the pages of `blocks` in order, at full distance from
    /// its first block.
    fn begin_stream(&mut self, blocks: &[BlockNumber]) -> Self::Stream;

    /// The stream's next page, which is `block`'s.
    fn stream_next(&mut self, stream: &mut Self::Stream, block: BlockNumber) -> Self::Page;

    /// How many blocks the stream has taken from its queue so far (read or being read).
    fn stream_pulled(&self, stream: &Self::Stream) -> usize;

    /// Ends a stream, releasing what it still holds.
    fn end_stream(&mut self, stream: Self::Stream);

    /// Begins reading the blocks of `range` in order with `strategy` (a read stream on
    /// PostgreSQL 17+, a window of hints within the I/O concurrency before).
    fn begin_range(&mut self, range: Range<BlockNumber>, strategy: Strategy) -> Self::RangeStream;

    /// The next page of the range, or `None` at its end.
    fn range_next(&mut self, stream: &mut Self::RangeStream) -> Option<Self::Page>;

    /// Ends a range stream, releasing what it still holds.
    fn end_range(&mut self, stream: Self::RangeStream);
}

/// A source borrowed for one walk (the simulated disk outlives its walks, as a backend's buffers
/// outlive its queries).
impl<S: BlockSource> BlockSource for &mut S {
    type Page = S::Page;
    type Stream = S::Stream;
    type RangeStream = S::RangeStream;

    fn platform(&mut self) -> Platform {
        (**self).platform()
    }
    fn prefetch(&mut self, block: BlockNumber) -> Prefetched {
        (**self).prefetch(block)
    }
    fn read(&mut self, block: BlockNumber, timed: bool) -> Read<Self::Page> {
        (**self).read(block, timed)
    }
    fn clock(&mut self) -> Duration {
        (**self).clock()
    }
    fn usage(&self) -> Usage {
        (**self).usage()
    }
    fn begin_stream(&mut self, blocks: &[BlockNumber]) -> Self::Stream {
        (**self).begin_stream(blocks)
    }
    fn stream_next(&mut self, stream: &mut Self::Stream, block: BlockNumber) -> Self::Page {
        (**self).stream_next(stream, block)
    }
    fn stream_pulled(&self, stream: &Self::Stream) -> usize {
        (**self).stream_pulled(stream)
    }
    fn end_stream(&mut self, stream: Self::Stream) {
        (**self).end_stream(stream)
    }
    fn begin_range(&mut self, range: Range<BlockNumber>, strategy: Strategy) -> Self::RangeStream {
        (**self).begin_range(range, strategy)
    }
    fn range_next(&mut self, stream: &mut Self::RangeStream) -> Option<Self::Page> {
        (**self).range_next(stream)
    }
    fn end_range(&mut self, stream: Self::RangeStream) {
        (**self).end_range(stream)
    }
}
