//! The buffer manager as the cold-read policy of `vector_io` sees it: [`RelationBlocks`]
//! implements [`BlockSource`] with `PrefetchBuffer`, `ReadBuffer` (hits and reads told by the
//! backend's `pgBufferUsage`, a miss timed only when the policy asks), read streams over a
//! queue of blocks (PG 17+) and over block ranges with a buffer access strategy, the
//! tablespace's I/O concurrency and the server's `io_method`. Every decision (when to overlap,
//! how many reads in flight, what to hint, what to count) is `vector_io`'s.
//!
//! Lifetimes: a read stream is Postgres memory (allocated in `CurrentMemoryContext`) that
//! holds pins. It lives only within one batch (one hop of a walk, or one range read): the
//! policy's batch begins it and ends it before returning, within one `load` call of the graph
//! store, so no memory context is reset or deleted while it lives, and it is never kept in
//! state that outlives the call (a scan's, a build's) across a rescan or a per-tuple reset (a
//! stream kept between hops was freed by rescans: signal 11). The blocks a stream pulls are in
//! a queue the stream owns, at a fixed address, which its callback reads.

use super::page::BlockNumber;
use super::pinned::PinnedPage;
use super::{AccessStrategy, PageReadGuard, Prefetch, ReadMode, Relation};
use pgrx::pg_sys;
use std::ops::Range;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use vector_io::{BlockSource, Platform, Prefetched, Read, Strategy, Usage};

pub use vector_io::{BlockReader, ChainHints, IoCounters, IoMethod, Settings};

/// Whether this build has read streams.
pub const READ_STREAMS: bool = cfg!(any(feature = "pg17", feature = "pg18"));

/// A relation fork's blocks, read through shared buffers.
pub struct RelationBlocks {
    rel: Relation,
    /// Writers (insert, build, vacuum) use `maintenance_io_concurrency`.
    maintenance: bool,
    /// A stream queue kept for the next stream (allocated once per walk).
    spare: Option<Box<StreamQueue>>,
}

impl RelationBlocks {
    /// The blocks of `rel`, for a scan (`maintenance` false) or a writer.
    pub fn new(rel: Relation, maintenance: bool) -> Self {
        RelationBlocks {
            rel,
            maintenance,
            spare: None,
        }
    }

    /// A reader of the walk's blocks.
    pub fn reader(rel: Relation, maintenance: bool, settings: Settings) -> BlockReader<Self> {
        BlockReader::new(RelationBlocks::new(rel, maintenance), settings)
    }
}

impl BlockSource for RelationBlocks {
    type Page = PinnedPage;
    type Stream = Stream;
    type RangeStream = RangeStream;

    fn platform(&mut self) -> Platform {
        let io_concurrency = tablespace_io_concurrency(self.rel, self.maintenance);
        Platform {
            io_concurrency,
            read_streams: READ_STREAMS,
            worker_io: READ_STREAMS && server_io_method_is_worker(),
        }
    }

    fn prefetch(&mut self, block: BlockNumber) -> Prefetched {
        match self.rel.prefetch_block(block) {
            Prefetch::Started => Prefetched::Started,
            Prefetch::Cached => Prefetched::Cached,
            Prefetch::NotStarted => Prefetched::NotStarted,
        }
    }

    #[inline]
    fn read(&mut self, block: BlockNumber, timed: bool) -> Read<PinnedPage> {
        let reads = buffer_usage().reads;
        let started = timed.then(Instant::now);
        let page = self.rel.pin_page(block);
        let hit = buffer_usage().reads == reads;
        let took = match started {
            Some(started) if !hit => Some(started.elapsed()),
            _ => None,
        };
        Read { page, hit, took }
    }

    #[inline]
    fn usage(&self) -> Usage {
        buffer_usage()
    }

    fn clock(&mut self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }

    fn begin_stream(&mut self, blocks: &[BlockNumber]) -> Stream {
        // The stream's callback ends it at InvalidBlockNumber: refuse one here instead.
        for &block in blocks {
            self.rel.check_block(block);
        }
        let mut queue = self.spare.take().unwrap_or_else(|| {
            Box::new(StreamQueue {
                blocks: Vec::new(),
                next: 0,
                end: 0,
            })
        });
        queue.blocks.clear();
        queue.blocks.extend_from_slice(blocks);
        queue.next = 0;
        queue.end = 0;
        Stream::begin(self.rel, self.maintenance, queue, None)
    }

    fn stream_next(&mut self, stream: &mut Stream, block: BlockNumber) -> PinnedPage {
        match stream.next(block) {
            Some(page) => page,
            None => panic!("read stream ended before block {block}"),
        }
    }

    fn stream_pulled(&self, stream: &Stream) -> usize {
        stream.pulled()
    }

    fn end_stream(&mut self, stream: Stream) {
        self.spare = stream.end();
    }

    fn begin_range(&mut self, range: Range<BlockNumber>, strategy: Strategy) -> RangeStream {
        RangeStream::begin(self, range, strategy)
    }

    fn range_next(&mut self, stream: &mut RangeStream) -> Option<PinnedPage> {
        stream.next(self)
    }

    fn end_range(&mut self, stream: RangeStream) {
        stream.end();
    }
}

/// Shared + local buffer hits and reads of this backend so far.
#[inline]
pub fn buffer_usage() -> Usage {
    // SAFETY: pgBufferUsage is a plain struct of counters owned by this backend; reading
    // four of its fields through a raw pointer has no side effect.
    unsafe {
        let usage = std::ptr::addr_of!(pg_sys::pgBufferUsage);
        Usage {
            hits: (*usage).shared_blks_hit + (*usage).local_blks_hit,
            reads: (*usage).shared_blks_read + (*usage).local_blks_read,
        }
    }
}

/// Reads and locks `block` of a chain of pages through `strategy`, letting `hints` read ahead
/// along its plan first (runs of blocks, one advisory read each) and timing the read only when
/// it asks to: ivfflat's lists and the passes of hnsw's vacuum over its element pages.
pub fn read_chain_page(
    rel: Relation,
    block: BlockNumber,
    mode: ReadMode,
    strategy: &AccessStrategy,
    hints: &mut ChainHints,
) -> PageReadGuard {
    let timed = hints.before_read(block, |first, count| rel.prefetch_range(first, count));
    let reads = buffer_usage().reads;
    let started = timed.then(Instant::now);
    let guard = rel.read_page_with(block, mode, strategy);
    let hit = buffer_usage().reads == reads;
    hints.after_read(hit, started.filter(|_| !hit).map(|t| t.elapsed()));
    guard
}

/// The pages of one chain read through a read stream over the range its pages are guessed to
/// lie in (PG 17+, through the caller's buffer access strategy): the stream's reads run
/// ahead of the reader, in I/O workers with `io_method = worker`, which then also copy and
/// checksum the pages. A page outside the stream's order ends it and is read plainly.
pub struct ChainStream<'a> {
    rel: Relation,
    strategy: &'a AccessStrategy,
    /// The stream, and the block it returns next.
    stream: Option<(Stream, BlockNumber)>,
}

impl<'a> ChainStream<'a> {
    pub fn new(rel: Relation, strategy: &'a AccessStrategy) -> Self {
        ChainStream {
            rel,
            strategy,
            stream: None,
        }
    }

    /// Streams blocks `first..=last` (a no-op before PG 17, or for an empty range).
    pub fn begin(&mut self, first: BlockNumber, last: BlockNumber, hints: &mut ChainHints) {
        self.finish(hints);
        if cfg!(any(feature = "pg17", feature = "pg18")) && first <= last {
            let queue = Box::new(StreamQueue {
                blocks: Vec::new(),
                next: first as usize,
                end: last as usize + 1,
            });
            let stream = Stream::begin_borrowed(self.rel, queue, self.strategy);
            self.stream = Some((stream, first));
        }
    }

    /// Reads and share-locks `block`: from the stream when it is the stream's next block, else
    /// plainly with `hints` (which count both).
    pub fn read(&mut self, block: BlockNumber, hints: &mut ChainHints) -> PageReadGuard {
        if let Some((mut stream, expect)) = self.stream.take() {
            if expect == block {
                let reads = buffer_usage().reads;
                if let Some(page) = stream.next(block) {
                    let started = buffer_usage().reads - reads;
                    hints.after_streamed_read(u64::try_from(started).unwrap_or(0));
                    self.stream = Some((stream, block.saturating_add(1)));
                    return page.lock(ReadMode::Shared);
                }
            }
            stream.end();
            hints.end_stream();
        }
        read_chain_page(self.rel, block, ReadMode::Shared, self.strategy, hints)
    }

    /// Ends the stream, if any (its pins are released).
    pub fn finish(&mut self, hints: &mut ChainHints) {
        if let Some((stream, _)) = self.stream.take() {
            stream.end();
            hints.end_stream();
        }
    }
}

/// Whether the server runs its asynchronous I/O through worker processes (PG 18's
/// `io_method = worker`, the default): each worker reads one block at a time, so a stream's
/// reads in flight are bounded by `io_workers` unless the kernel reads ahead for it. (With
/// `io_uring` the reads are truly asynchronous; with `sync` the stream issues the same hints
/// itself.)
pub fn server_io_method_is_worker() -> bool {
    // SAFETY: GetConfigOption with missing_ok returns NULL or a string owned by the GUC
    // machinery, read at once.
    unsafe {
        let value = pg_sys::GetConfigOption(c"io_method".as_ptr(), true, false);
        !value.is_null() && std::ffi::CStr::from_ptr(value).to_bytes() == b"worker"
    }
}

/// The tablespace's `effective_io_concurrency` (or `maintenance_io_concurrency`).
fn tablespace_io_concurrency(rel: Relation, maintenance: bool) -> usize {
    // SAFETY: the relation is open, so rd_rel is valid; the spccache lookups only read
    // catalogs (InvalidOid means the database's default tablespace).
    let n = unsafe {
        let spc = (*(*rel.raw).rd_rel).reltablespace;
        if maintenance {
            pg_sys::get_tablespace_maintenance_io_concurrency(spc)
        } else {
            pg_sys::get_tablespace_io_concurrency(spc)
        }
    };
    usize::try_from(n).unwrap_or(0)
}

/// The blocks a read stream pulls, through its callback: `blocks[next..]`, or with `blocks`
/// empty the range `next..end`.
struct StreamQueue {
    blocks: Vec<BlockNumber>,
    next: usize,
    end: usize,
}

/// A read stream over a `StreamQueue` (PG 17+). The queue is boxed, handed to the stream's
/// callback as a raw pointer (so no Rust reference to it is held while the stream may call
/// back) and freed, or given back for the next stream, when the stream has ended.
pub struct Stream {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    raw: *mut pg_sys::ReadStream,
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    rel: Relation,
    queue: *mut StreamQueue,
    /// The buffer access strategy the stream reads with, freed after it.
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    strategy: Option<AccessStrategy>,
}

impl Stream {
    /// Blocks taken from the queue so far.
    fn pulled(&self) -> usize {
        // SAFETY: queue came from Box::into_raw and is read between stream calls only.
        unsafe { (*self.queue).next }
    }
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
impl Stream {
    /// Begins a stream at full distance over `queue`, with `strategy` (or none).
    fn begin(
        rel: Relation,
        maintenance: bool,
        queue: Box<StreamQueue>,
        strategy: Option<AccessStrategy>,
    ) -> Self {
        let raw_strategy = strategy.as_ref().map_or(std::ptr::null_mut(), |s| s.raw);
        let mut stream = Self::begin_raw(rel, maintenance, queue, raw_strategy);
        stream.strategy = strategy;
        stream
    }

    /// Begins a stream through `raw_strategy` (or none), which outlives it.
    fn begin_raw(
        rel: Relation,
        maintenance: bool,
        queue: Box<StreamQueue>,
        raw_strategy: pg_sys::BufferAccessStrategy,
    ) -> Self {
        let mut flags = pg_sys::READ_STREAM_FULL;
        if maintenance {
            flags |= pg_sys::READ_STREAM_MAINTENANCE;
        }
        #[cfg(feature = "pg18")]
        {
            // The callback neither blocks nor takes locks.
            flags |= pg_sys::READ_STREAM_USE_BATCHING;
        }
        let queue = Box::into_raw(queue);
        // SAFETY: the relation is open; `queue` is owned by the returned Stream and freed only
        // after the stream has ended; the callback only reads and advances it. The stream is
        // allocated in the current memory context, which is not reset or deleted during the
        // batch (see the module documentation); the strategy, if any, outlives it likewise.
        let raw = unsafe {
            pg_sys::read_stream_begin_relation(
                flags as i32,
                raw_strategy,
                rel.raw,
                rel.fork.number(),
                Some(next_queued_block),
                queue.cast(),
                0,
            )
        };
        Stream {
            raw,
            rel,
            queue,
            strategy: None,
        }
    }

    /// Begins a stream for a scan over `queue`, reading through `strategy`, which the caller
    /// keeps alive until the stream has ended.
    fn begin_borrowed(rel: Relation, queue: Box<StreamQueue>, strategy: &AccessStrategy) -> Self {
        Self::begin_raw(rel, false, queue, strategy.raw)
    }

    /// The stream's next buffer, which must be `block`'s, pinned; `None` at its end.
    fn next(&mut self, block: BlockNumber) -> Option<PinnedPage> {
        // SAFETY: the stream is live; the buffer it returns is pinned once for us.
        let buffer = unsafe { pg_sys::read_stream_next_buffer(self.raw, std::ptr::null_mut()) };
        if buffer == pg_sys::InvalidBuffer as pg_sys::Buffer {
            return None;
        }
        // SAFETY: a valid buffer pinned once by this backend and not locked; the stream
        // returns the blocks of its queue in order, and `block` is the next one.
        Some(unsafe { PinnedPage::from_pinned(self.rel, buffer, block) })
    }

    /// Ends the stream (releasing its pins) and gives its queue back.
    fn end(self) -> Option<Box<StreamQueue>> {
        let mut this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the stream is live and ended once here (Drop does not run for `this`);
        // read_stream_end releases its pins and frees it.
        unsafe { pg_sys::read_stream_end(this.raw) };
        // Nothing uses the strategy any more.
        drop(this.strategy.take());
        // SAFETY: queue came from Box::into_raw and nothing reads it any more.
        Some(unsafe { Box::from_raw(this.queue) })
    }
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
impl Drop for Stream {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // SAFETY: the stream is live (`end` consumes it without dropping);
            // read_stream_end releases its pins and frees it (its strategy is freed after).
            unsafe { pg_sys::read_stream_end(self.raw) };
        }
        // (Unwinding from an ERROR: the abort releases the pins and frees the stream's memory;
        // calling into the stream now could raise another error. The abandoned stream is never
        // called again, so its queue can go.)
        // SAFETY: queue came from Box::into_raw and nothing reads it any more.
        drop(unsafe { Box::from_raw(self.queue) });
    }
}

#[cfg(not(any(feature = "pg17", feature = "pg18")))]
impl Stream {
    // The same signature as with read streams; never called (the policy falls back to hints).
    #[allow(clippy::boxed_local)]
    fn begin(
        _rel: Relation,
        _maintenance: bool,
        _queue: Box<StreamQueue>,
        _strategy: Option<AccessStrategy>,
    ) -> Self {
        unreachable!("read streams need PostgreSQL 17")
    }
    #[allow(clippy::boxed_local)]
    fn begin_borrowed(
        _rel: Relation,
        _queue: Box<StreamQueue>,
        _strategy: &AccessStrategy,
    ) -> Self {
        unreachable!("read streams need PostgreSQL 17")
    }
    fn next(&mut self, _block: BlockNumber) -> Option<PinnedPage> {
        unreachable!("read streams need PostgreSQL 17")
    }
    fn end(self) -> Option<Box<StreamQueue>> {
        None
    }
}

/// The read stream's callback: the next block of the queue, or the end of the stream.
///
/// Not `#[pg_guard]`ed, because it cannot panic (a bounds-checked `get` and increments) and
/// calls nothing in Postgres.
#[cfg(any(feature = "pg17", feature = "pg18"))]
unsafe extern "C-unwind" fn next_queued_block(
    _stream: *mut pg_sys::ReadStream,
    private: *mut std::ffi::c_void,
    _per_buffer_data: *mut std::ffi::c_void,
) -> pg_sys::BlockNumber {
    // SAFETY: private is the StreamQueue given to read_stream_begin_relation, alive and not
    // borrowed elsewhere while the stream runs (the batch only reads it between calls).
    let queue = unsafe { &mut *private.cast::<StreamQueue>() };
    if queue.blocks.is_empty() {
        // A range.
        if queue.next < queue.end {
            queue.next += 1;
            return (queue.next - 1) as pg_sys::BlockNumber;
        }
        return pg_sys::InvalidBlockNumber;
    }
    match queue.blocks.get(queue.next) {
        Some(&block) => {
            queue.next += 1;
            block
        }
        None => pg_sys::InvalidBlockNumber,
    }
}

/// A contiguous block range read in order with a buffer access strategy: a read stream on
/// PG 17+, a window of `PrefetchBuffer` hints within the tablespace's I/O concurrency
/// ([`vector_io::RangeWindow`]) and `ReadBufferExtended` with the strategy before.
pub struct RangeStream {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    stream: Option<Stream>,
    /// The next block the stream returns, and the end of the range.
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    block: BlockNumber,
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    end: BlockNumber,
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    window: vector_io::RangeWindow,
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    strategy: Option<AccessStrategy>,
}

/// A new buffer access strategy for `strategy` (none for [`Strategy::Normal`]).
fn access_strategy(strategy: Strategy) -> Option<AccessStrategy> {
    match strategy {
        Strategy::Normal => None,
        Strategy::BulkRead => Some(AccessStrategy::bulk_read()),
    }
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
impl RangeStream {
    fn begin(source: &mut RelationBlocks, range: Range<BlockNumber>, strategy: Strategy) -> Self {
        let queue = Box::new(StreamQueue {
            blocks: Vec::new(),
            next: range.start as usize,
            end: range.end.max(range.start) as usize,
        });
        let stream = Stream::begin(
            source.rel,
            source.maintenance,
            queue,
            access_strategy(strategy),
        );
        RangeStream {
            stream: Some(stream),
            block: range.start,
            end: range.end,
        }
    }

    fn next(&mut self, _source: &mut RelationBlocks) -> Option<PinnedPage> {
        if self.block >= self.end {
            return None;
        }
        let page = self.stream.as_mut()?.next(self.block);
        self.block += 1;
        page
    }

    fn end(mut self) {
        if let Some(stream) = self.stream.take() {
            stream.end();
        }
    }
}

#[cfg(not(any(feature = "pg17", feature = "pg18")))]
impl RangeStream {
    fn begin(source: &mut RelationBlocks, range: Range<BlockNumber>, strategy: Strategy) -> Self {
        let io_concurrency = source.platform().io_concurrency;
        RangeStream {
            window: vector_io::RangeWindow::new(range, io_concurrency),
            strategy: access_strategy(strategy),
        }
    }

    fn next(&mut self, source: &mut RelationBlocks) -> Option<PinnedPage> {
        let (block, hints) = self.window.advance()?;
        for ahead in hints {
            source.rel.prefetch_block(ahead);
        }
        Some(source.rel.pin_page_with(block, self.strategy.as_ref()))
    }

    fn end(self) {}
}
