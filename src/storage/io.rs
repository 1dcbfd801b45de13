//! Overlapped reads for graph walks: a search hop asks for all the blocks of its unvisited
//! neighbors at once, and [`BlockReader`] reads them in that order while the I/O for the
//! following ones is already under way.
//!
//! * [`IoMethod::Prefetch`]: `PrefetchBuffer` hints kept in a window of at most `budget`
//!   reads in flight, topped up as each block is consumed, then `ReadBuffer`.
//! * [`IoMethod::ReadStream`] (PG 17+): one read stream per hop, begun with
//!   `READ_STREAM_FULL` so it starts at full distance instead of ramping up from one block
//!   (a stream reset between hops would ramp up again from one at every hop). Its I/O limit is
//!   the tablespace's `effective_io_concurrency` (or `maintenance_io_concurrency` for
//!   writers), and a hop never holds more than the layer's neighbor count.
//! * [`IoMethod::Off`]: plain synchronous `ReadBuffer` calls.
//!
//! The reader starts warm: blocks are read one by one with no extra call, so an index that is
//! in shared buffers or in the kernel's page cache costs nothing more. Two reads of a hop that
//! miss both (each takes longer than [`DEVICE_READ`]) turn it cold, and the rest of that hop
//! and the following hops overlap their reads. A cold hop still reads its first block with a
//! plain, timed read (while the others are already requested); a hop without reads, or whose
//! plain reads all came from the page cache, turns the reader warm again.
//!
//! Look-ahead hints ([`BlockReader::speculate`]) are issued when the next hop starts, once all
//! its own reads are hinted, with what is left of the budget, through
//! `PrefetchBuffer`, which only asks the kernel to read ahead: a block hinted but never read
//! leaves shared buffers (and the hit and read counts) untouched, so every method and
//! look-ahead setting reads exactly the same blocks into shared buffers.
//!
//! Nothing here changes which blocks a walk visits, or when it locks them: a reader only
//! returns pinned, unlocked pages ([`PinnedPage`]), in the order it was given.
//!
//! Lifetimes: a read stream is Postgres memory (allocated in `CurrentMemoryContext`) that
//! holds pins. It is owned by the [`BatchRead`] of one hop, which borrows its reader and is
//! begun and dropped within one `load` call of the graph store, so no memory context is reset
//! or deleted while it lives, and it can never be kept in state that outlives the call (a
//! scan's, a build's) across a rescan or a per-tuple reset.

use super::page::BlockNumber;
use super::pinned::PinnedPage;
use super::{Prefetch, Relation};
use pgrx::pg_sys;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A read that misses shared buffers and takes longer than this came from a device, not from
/// the kernel's page cache: overlapping pays off. (Measured here: 2 µs from the page cache
/// through `ReadBuffer`, p99 10 µs; 45–140 µs from the virtual disk; NVMe drives take 50–100.)
const DEVICE_READ: Duration = Duration::from_micros(25);

/// How a walk reads the blocks of a hop (`hnsw.io_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMethod {
    /// One synchronous read after the other.
    Off,
    /// `PrefetchBuffer` hints ahead of the reads.
    Prefetch,
    /// A read stream per hop (PG 17+; falls back to [`IoMethod::Prefetch`] before).
    ReadStream,
}

impl IoMethod {
    /// The method to use on this server version.
    fn effective(self) -> Self {
        match self {
            IoMethod::ReadStream if !READ_STREAMS => IoMethod::Prefetch,
            other => other,
        }
    }
}

/// Whether this build has read streams.
pub const READ_STREAMS: bool = cfg!(any(feature = "pg17", feature = "pg18"));

/// Settings of a walk's reads.
#[derive(Clone, Copy, Debug)]
pub struct IoSettings {
    pub method: IoMethod,
    /// Writers (insert, build, vacuum) use `maintenance_io_concurrency`.
    pub maintenance: bool,
}

/// What a walk's reads did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Blocks the hops asked for (distinct within a hop).
    pub blocks: u64,
    /// Of those, found in shared buffers.
    pub hits: u64,
    /// Of those, read from disk (or the kernel's cache).
    pub reads: u64,
    /// Reads that had been requested before the walk needed the block (a hint, or a stream
    /// reading ahead).
    pub prefetched: u64,
    /// Hints whose block was never needed.
    pub unused: u64,
    /// Sum over consumed blocks of the reads requested ahead at that moment.
    pub in_flight_sum: u64,
    /// Number of samples in `in_flight_sum`.
    pub in_flight_samples: u64,
}

impl IoCounters {
    /// Mean number of reads requested ahead when a block was consumed.
    pub fn mean_in_flight(&self) -> f64 {
        if self.in_flight_samples == 0 {
            0.0
        } else {
            self.in_flight_sum as f64 / self.in_flight_samples as f64
        }
    }
}

/// A block hinted with `PrefetchBuffer` whose read was started and not yet consumed.
#[derive(Clone, Copy, Debug)]
struct Hint {
    block: BlockNumber,
    /// The hop it was issued in, to expire hints that were never used.
    hop: u64,
}

/// The blocks a read stream pulls from, through its callback.
struct StreamQueue {
    blocks: Vec<BlockNumber>,
    next: usize,
}

/// A [`StreamQueue`] at a fixed address, shared with a read stream's callback through a raw
/// pointer (so no Rust reference to it is held while the stream may call back).
struct QueueBox {
    ptr: *mut StreamQueue,
}

impl QueueBox {
    fn new() -> Self {
        let queue = Box::new(StreamQueue {
            blocks: Vec::new(),
            next: 0,
        });
        QueueBox {
            ptr: Box::into_raw(queue),
        }
    }

    /// Replaces the queued blocks (no stream is pulling from it meanwhile).
    fn refill(&mut self, blocks: &[BlockNumber]) {
        // SAFETY: ptr came from Box::into_raw and is only accessed from this backend, never
        // during a stream callback.
        let queue = unsafe { &mut *self.ptr };
        queue.blocks.clear();
        queue.blocks.extend_from_slice(blocks);
        queue.next = 0;
    }

    /// Blocks handed to the stream so far, and blocks queued.
    fn progress(&self) -> (usize, usize) {
        // SAFETY: as in refill; read between stream calls.
        let queue = unsafe { &*self.ptr };
        (queue.next, queue.blocks.len())
    }
}

impl Drop for QueueBox {
    fn drop(&mut self) {
        // SAFETY: ptr came from Box::into_raw; every stream using it has ended or been
        // abandoned with its transaction, so nothing reads it any more.
        drop(unsafe { Box::from_raw(self.ptr) });
    }
}

thread_local! {
    /// Whether the last walk of this backend ended cold: the next one (the next insert of a
    /// bulk load, the next query) starts overlapping from its first hop.
    static LAST_WALK_COLD: Cell<bool> = const { Cell::new(false) };
}

/// Reads the blocks of a walk's hops (see the module documentation). One per walk.
pub struct BlockReader {
    rel: Relation,
    method: IoMethod,
    maintenance: bool,
    /// The tablespace's I/O concurrency (0 disables overlapping).
    io_concurrency: usize,
    /// Streams also get `PrefetchBuffer` hints (the server's `io_method` is `worker`).
    advise_streams: bool,
    /// A read since the last hop without reads.
    cold: bool,
    /// The last hop's plain reads missed shared buffers.
    missed_last_hop: bool,
    hints: Vec<Hint>,
    /// Hops started (stamps hints).
    hop: u64,
    /// Hints older than this many hops are counted unused and forgotten.
    hint_lifetime: u64,
    /// Look-ahead blocks to hint when the next hop starts.
    speculative: Vec<BlockNumber>,
    counters: IoCounters,
    /// Owned (freed on drop); its address, given to the stream's callback, stays put.
    queue: QueueBox,
}

impl BlockReader {
    pub fn new(rel: Relation, settings: IoSettings) -> Self {
        let io_concurrency = tablespace_io_concurrency(rel, settings.maintenance);
        BlockReader {
            rel,
            method: settings.method.effective(),
            maintenance: settings.maintenance,
            io_concurrency,
            advise_streams: READ_STREAMS && server_io_method_is_worker(),
            cold: LAST_WALK_COLD.with(Cell::get),
            missed_last_hop: false,
            hints: Vec::new(),
            hop: 0,
            hint_lifetime: 4,
            speculative: Vec::new(),
            counters: IoCounters::default(),
            queue: QueueBox::new(),
        }
    }

    /// Changes the method for the next hops (settings may change between fetches).
    pub fn set_method(&mut self, method: IoMethod) {
        self.method = method.effective();
    }

    /// How many hops an unused hint is kept for.
    pub fn set_hint_lifetime(&mut self, hops: u64) {
        self.hint_lifetime = hops.max(1);
    }

    /// Whether reads overlap now (the walk has met blocks outside shared buffers).
    pub fn is_cold(&self) -> bool {
        self.cold && self.overlaps()
    }

    fn overlaps(&self) -> bool {
        self.method != IoMethod::Off && self.io_concurrency > 0
    }

    /// The counters so far, counting the hints still pending as unused.
    pub fn counters(&self) -> IoCounters {
        let mut counters = self.counters;
        counters.unused += self.hints.len() as u64;
        counters
    }

    /// Reads in flight allowed for a hop whose layer has `fanout` neighbor slots.
    fn budget(&self, fanout: usize) -> usize {
        self.io_concurrency.min(fanout).max(1)
    }

    /// Starts reading `blocks` (distinct) for one hop on a layer with `fanout` neighbor slots.
    /// Take the pages in order with [`BatchRead::next`].
    pub fn batch<'a>(&'a mut self, blocks: &'a [BlockNumber], fanout: usize) -> BatchRead<'a> {
        self.hop += 1;
        self.expire_hints();
        self.counters.blocks += blocks.len() as u64;
        let budget = self.budget(fanout);
        let cold = self.is_cold();
        let timing = self.missed_last_hop || cold;
        let mut batch = BatchRead {
            usage: BufferUsage::now(),
            reader: self,
            blocks,
            pos: 0,
            mode: Mode::Plain,
            budget,
            issued: 0,
            stream: None,
            device_misses: 0,
            page_cache_misses: 0,
            timing,
            missed: false,
            copied_here: false,
        };
        if cold {
            if batch.reader.method == IoMethod::ReadStream && batch.reader.advise_streams {
                // The first block is read plainly as a probe (see next_plain), the others
                // are already on their way.
                batch.top_up_hints();
            } else {
                batch.overlap_from(0);
                if batch.mode == Mode::Prefetch {
                    // The hop's own reads go to the device before the look-ahead's.
                    batch.top_up_hints();
                }
            }
            batch.hint_speculative();
        }
        batch.reader.speculative.clear();
        batch
    }

    /// Look-ahead: the blocks the walk will probably need after its next hop. They are asked
    /// for when that hop starts ([`BlockReader::batch`]), with the part of the budget the hop's
    /// own blocks leave free, while the walk is cold.
    pub fn speculate(&mut self, blocks: &[BlockNumber]) {
        self.speculative.clear();
        if self.is_cold() {
            self.speculative.extend_from_slice(blocks);
        }
    }

    /// `PrefetchBuffer(block)`: whether a read was started (false when the block is in shared
    /// buffers already).
    fn prefetch(&self, block: BlockNumber) -> bool {
        self.rel.prefetch_block(block) == Prefetch::Started
    }

    /// Forgets a consumed hint; true if there was one.
    fn take_hint(&mut self, block: BlockNumber) -> bool {
        match self.hints.iter().position(|h| h.block == block) {
            Some(pos) => {
                self.hints.swap_remove(pos);
                true
            }
            None => false,
        }
    }

    fn expire_hints(&mut self) {
        let oldest = self.hop.saturating_sub(self.hint_lifetime);
        let before = self.hints.len();
        self.hints.retain(|h| h.hop >= oldest);
        self.counters.unused += (before - self.hints.len()) as u64;
    }
}

impl Drop for BlockReader {
    fn drop(&mut self) {
        // (A stream is ended by its batch, which borrows the reader, so it is gone before the
        // queue it read is freed here.)
        LAST_WALK_COLD.with(|last| last.set(self.cold));
    }
}

/// How a batch is reading now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// One `ReadBuffer` per block, watching for a miss.
    Plain,
    /// `PrefetchBuffer` window.
    Prefetch,
    /// Read stream.
    Stream,
}

/// One hop's reads, in the order of its blocks. Finishes on drop (ends its stream, counts).
pub struct BatchRead<'a> {
    reader: &'a mut BlockReader,
    blocks: &'a [BlockNumber],
    /// Next block to hand out.
    pos: usize,
    mode: Mode,
    budget: usize,
    /// Prefetch mode: blocks up to here have been looked up / hinted.
    issued: usize,
    stream: Option<Stream>,
    usage: BufferUsage,
    /// Timed plain reads of this hop that missed shared buffers, by where they came from.
    device_misses: u32,
    page_cache_misses: u32,
    /// Time the next plain read.
    timing: bool,
    /// A plain read of this hop missed shared buffers.
    missed: bool,
    /// The page last handed out was just read by this backend itself (see
    /// [`BatchRead::copied_here`]).
    copied_here: bool,
}

/// Where a read that missed shared buffers came from, judged by its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Miss {
    PageCache,
    Device,
}

impl BatchRead<'_> {
    /// The next block of the hop, pinned and unlocked.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<PinnedPage> {
        let block = *self.blocks.get(self.pos)?;
        self.copied_here = false;
        let page = match self.mode {
            Mode::Plain => self.next_plain(block),
            Mode::Prefetch => self.next_prefetched(block),
            Mode::Stream => self.next_streamed(block),
        };
        self.pos += 1;
        Some(page)
    }

    /// Whether the page last returned by [`next`](Self::next) was just read synchronously by
    /// this backend: its bytes went through this CPU's cache on the way in (the kernel's copy
    /// and the checksum), so asking the CPU to fetch them again is wasted work.
    pub fn copied_here(&self) -> bool {
        self.copied_here
    }

    /// A plain read, timed when it misses shared buffers: a device read turns the reader
    /// cold and overlaps the rest of the hop (so does the probe read of a cold hop).
    fn next_plain(&mut self, block: BlockNumber) -> PinnedPage {
        let (page, miss) = self.timed_pin(block);
        // Two device reads in a hop, so that a page-cache read slowed down by a busy CPU
        // does not switch a warm walk over.
        if miss == Some(Miss::Device)
            && (self.device_misses >= 2 || self.reader.cold)
            && self.reader.overlaps()
        {
            self.reader.cold = true;
        }
        if self.reader.is_cold() {
            self.overlap_from(self.pos + 1);
        }
        page
    }

    /// Pins `block`; for a timed miss of shared buffers, whether it came from a device.
    /// Records it for the end-of-hop decision. Reads are timed only once a miss is expected
    /// (after one in this hop or the previous one, and the probe of a cold hop), until one
    /// comes from the page cache: an index in shared buffers never reads the clock.
    fn timed_pin(&mut self, block: BlockNumber) -> (PinnedPage, Option<Miss>) {
        let reads = BufferUsage::now().reads;
        let started = self.timing.then(Instant::now);
        let page = self.reader.rel.pin_page(block);
        if BufferUsage::now().reads == reads {
            return (page, None);
        }
        self.missed = true;
        self.copied_here = true;
        let Some(started) = started else {
            // Time the next miss, unless the page cache already answered in this hop.
            self.timing = self.page_cache_misses == 0;
            return (page, None);
        };
        let miss = if started.elapsed() > DEVICE_READ {
            self.device_misses += 1;
            Miss::Device
        } else {
            // The page cache answers: no need to time the rest of this hop.
            self.timing = false;
            self.page_cache_misses += 1;
            Miss::PageCache
        };
        (page, Some(miss))
    }

    /// Switches the blocks from `from` on to the reader's method.
    fn overlap_from(&mut self, from: usize) {
        if from >= self.blocks.len() {
            return;
        }
        match self.reader.method {
            IoMethod::Off => {}
            IoMethod::Prefetch => {
                self.mode = Mode::Prefetch;
                self.issued = from;
            }
            IoMethod::ReadStream => {
                self.reader.queue.refill(&self.blocks[from..]);
                let queue = self.reader.queue.ptr;
                self.stream = Some(Stream::begin(
                    self.reader.rel,
                    self.reader.maintenance,
                    queue,
                ));
                self.mode = Mode::Stream;
            }
        }
    }

    /// Prefetch mode: tops the window up, then reads `block` (the one at `pos`).
    fn next_prefetched(&mut self, block: BlockNumber) -> PinnedPage {
        self.top_up_hints();
        self.reader.counters.in_flight_sum += self.reader.hints.len() as u64;
        self.reader.counters.in_flight_samples += 1;
        let hinted = self.reader.take_hint(block);
        // A plain read even when the look-up found the buffer: ReadRecentBuffer would not
        // count as a use for the clock sweep, and evictions would then differ from `off`.
        if hinted {
            let reads = BufferUsage::now().reads;
            let page = self.reader.rel.pin_page(block);
            if BufferUsage::now().reads != reads {
                self.reader.counters.prefetched += 1;
            }
            page
        } else {
            // Not requested ahead: its time tells a device from the page cache.
            self.timed_pin(block).0
        }
    }

    /// Hints the look-ahead blocks with what the budget has left once every read of this hop
    /// has been hinted (only then is it known which of its blocks need a read; a stream that
    /// is not given hints keeps that to itself, and gets no look-ahead).
    fn hint_speculative(&mut self) {
        if self.issued < self.blocks.len() {
            return;
        }
        let blocks = self.blocks;
        let reader = &mut *self.reader;
        let mut room = self.budget.saturating_sub(reader.hints.len());
        for i in 0..reader.speculative.len() {
            if room == 0 {
                break;
            }
            let block = reader.speculative[i];
            if blocks.contains(&block) || reader.hints.iter().any(|h| h.block == block) {
                continue;
            }
            if reader.prefetch(block) {
                reader.hints.push(Hint {
                    block,
                    hop: reader.hop,
                });
                room -= 1;
            }
        }
    }

    /// Hints the blocks after the one at `pos` until `budget` hinted reads are in flight.
    fn top_up_hints(&mut self) {
        self.issued = self.issued.max(self.pos + 1);
        while self.issued < self.blocks.len() && self.reader.hints.len() < self.budget {
            let ahead = self.blocks[self.issued];
            if !self.reader.hints.iter().any(|h| h.block == ahead) && self.reader.prefetch(ahead) {
                self.reader.hints.push(Hint {
                    block: ahead,
                    hop: self.reader.hop,
                });
            }
            self.issued += 1;
        }
    }

    /// Stream mode: the stream's next buffer, which is `block`'s.
    fn next_streamed(&mut self, block: BlockNumber) -> PinnedPage {
        if self.reader.advise_streams {
            // I/O workers read one block each at a time: the kernel's read-ahead, started by
            // the hints, gives the stream the concurrency the budget allows.
            self.top_up_hints();
        }
        let stream = self.stream.as_ref().expect("stream mode has a stream");
        let consumed = self.pos + 1;
        let page = stream.next(block);
        let (queued, len) = self.reader.queue.progress();
        let handed = queued + (self.blocks.len() - len);
        self.reader.counters.in_flight_sum += handed.saturating_sub(consumed) as u64;
        self.reader.counters.in_flight_samples += 1;
        // A hinted block the stream read: its read is counted with the stream's.
        self.reader.take_hint(block);
        page
    }
}

impl Drop for BatchRead<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding from an ERROR: the stream's own drop leaves it to the abort.
            return;
        }
        // Release what a stream still holds (a batch left before its end) before counting.
        if let Some(stream) = self.stream.take() {
            stream.end();
        }
        let now = BufferUsage::now();
        let reads = (now.reads - self.usage.reads).max(0) as u64;
        let hits = (now.hits - self.usage.hits).max(0) as u64;
        let counters = &mut self.reader.counters;
        counters.reads += reads;
        counters.hits += hits;
        if self.mode == Mode::Stream {
            // Every read the stream made but its first was started ahead of the walk.
            counters.prefetched += reads.saturating_sub(1);
        }
        self.reader.missed_last_hop = self.missed;
        // Warm again after a hop without reads, or whose timed reads all came from the
        // kernel's page cache (reads requested ahead always look fast, so they do not count).
        if self.reader.cold
            && (reads == 0 || (self.page_cache_misses > 0 && self.device_misses == 0))
        {
            self.reader.cold = false;
        }
    }
}

/// Shared + local buffer hits and reads of this backend so far.
#[derive(Clone, Copy, Debug)]
struct BufferUsage {
    hits: i64,
    reads: i64,
}

impl BufferUsage {
    fn now() -> Self {
        // SAFETY: pgBufferUsage is a plain struct of counters owned by this backend; reading
        // four of its fields through a raw pointer has no side effect.
        unsafe {
            let usage = std::ptr::addr_of!(pg_sys::pgBufferUsage);
            BufferUsage {
                hits: (*usage).shared_blks_hit + (*usage).local_blks_hit,
                reads: (*usage).shared_blks_read + (*usage).local_blks_read,
            }
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

/// A read stream over a [`StreamQueue`] (PG 17+).
struct Stream {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    raw: *mut pg_sys::ReadStream,
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    rel: Relation,
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
impl Stream {
    fn begin(rel: Relation, maintenance: bool, queue: *mut StreamQueue) -> Self {
        let mut flags = pg_sys::READ_STREAM_FULL;
        if maintenance {
            flags |= pg_sys::READ_STREAM_MAINTENANCE;
        }
        #[cfg(feature = "pg18")]
        {
            // The callback neither blocks nor takes locks.
            flags |= pg_sys::READ_STREAM_USE_BATCHING;
        }
        // SAFETY: the relation is open; `queue` is boxed by the reader and outlives the
        // stream (ended by the batch, which borrows the reader that owns the box); the callback
        // only reads it. The stream is allocated in the current memory context, which is not
        // reset or deleted during the batch (see the module documentation).
        let raw = unsafe {
            pg_sys::read_stream_begin_relation(
                flags as i32,
                std::ptr::null_mut(),
                rel.raw,
                rel.fork.number(),
                Some(next_queued_block),
                queue.cast(),
                0,
            )
        };
        Stream { raw, rel }
    }

    /// The stream's next buffer, which must be `block`'s, pinned.
    fn next(&self, block: BlockNumber) -> PinnedPage {
        // SAFETY: the stream is live; the buffer it returns is pinned once for us.
        let buffer = unsafe { pg_sys::read_stream_next_buffer(self.raw, std::ptr::null_mut()) };
        assert!(
            buffer != pg_sys::InvalidBuffer as pg_sys::Buffer,
            "read stream ended before block {block}"
        );
        // SAFETY: a valid buffer pinned once by this backend and not locked; the stream
        // returns the blocks of its queue in order, and `block` is the next one.
        unsafe { PinnedPage::from_pinned(self.rel, buffer, block) }
    }

    fn end(self) {
        drop(self)
    }
}

#[cfg(any(feature = "pg17", feature = "pg18"))]
impl Drop for Stream {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding from an ERROR: the abort releases the pins and frees the memory;
            // calling into the stream now could raise another error.
            return;
        }
        // SAFETY: the stream is live; read_stream_end releases its pins and frees it.
        unsafe { pg_sys::read_stream_end(self.raw) }
    }
}

#[cfg(not(any(feature = "pg17", feature = "pg18")))]
impl Stream {
    fn begin(_rel: Relation, _maintenance: bool, _queue: *mut StreamQueue) -> Self {
        unreachable!("read streams need PostgreSQL 17")
    }
    fn next(&self, _block: BlockNumber) -> PinnedPage {
        unreachable!("read streams need PostgreSQL 17")
    }
    fn end(self) {}
}

/// The read stream's callback: the next block of the queue, or the end of the stream.
///
/// Not `#[pg_guard]`ed, because it cannot panic (a bounds-checked `get` and an increment) and
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
    match queue.blocks.get(queue.next) {
        Some(&block) => {
            queue.next += 1;
            block
        }
        None => pg_sys::InvalidBlockNumber,
    }
}

/// Hints for the table blocks of the rows an index scan is about to return: after the walk,
/// the executor fetches each row's heap tuple one after the other, and these reads would
/// otherwise wait one by one. Used only when the walk ended cold (a resident table is never
/// hinted); hints use `PrefetchBuffer`, so nothing enters shared buffers early.
pub struct HeapRowHints {
    heap: Relation,
    /// The table's tablespace `effective_io_concurrency`.
    budget: usize,
    /// Rows (in the order they are returned) already hinted or passed over.
    hinted: usize,
    last_block: Option<BlockNumber>,
    /// Hints issued (blocks that were not already in shared buffers).
    pub issued: u64,
}

impl HeapRowHints {
    /// Hints for the rows of `heap` (the scan's table).
    pub fn new(heap: Relation) -> Self {
        HeapRowHints {
            heap,
            budget: tablespace_io_concurrency(heap, false),
            hinted: 0,
            last_block: None,
            issued: 0,
        }
    }

    /// A rescan starts numbering rows again.
    pub fn restart(&mut self) {
        self.hinted = 0;
        self.last_block = None;
    }

    /// `returned` rows were handed out; `next_blocks` are the table blocks of the rows that
    /// follow, in the order they will be returned. Hints the ones within
    /// [`vector_hnsw::scan::heap_lookahead_distance`] not hinted yet.
    pub fn ahead(&mut self, returned: usize, next_blocks: impl Iterator<Item = BlockNumber>) {
        let until = returned + vector_hnsw::scan::heap_lookahead_distance(returned, self.budget);
        if self.hinted >= until {
            return;
        }
        for (row, block) in (returned..until).zip(next_blocks) {
            if row >= self.hinted && self.last_block != Some(block) {
                self.last_block = Some(block);
                if self.heap.prefetch_block(block) == Prefetch::Started {
                    self.issued += 1;
                }
            }
            self.hinted = self.hinted.max(row + 1);
        }
    }
}
