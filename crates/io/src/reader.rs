//! Overlapped reads for graph walks: a search hop asks for all the blocks of its unvisited
//! neighbors at once, and [`BlockReader`] reads them in that order while the I/O for the
//! following ones is already under way.
//!
//! * [`IoMethod::Prefetch`]: hints ([`BlockSource::prefetch`]) kept in a window of at most
//!   `budget` reads in flight, topped up as each block is consumed, then plain reads.
//! * [`IoMethod::ReadStream`]: one read stream per hop, begun at full distance (a stream reset
//!   between hops would ramp up again from one block at every hop). A hop never holds more
//!   than the layer's neighbor count.
//! * [`IoMethod::Off`]: plain synchronous reads.
//!
//! The budget of a hop is `min(io concurrency, the layer's neighbor slots)`, at least one.
//!
//! The reader starts warm: blocks are read one by one with no extra call, so an index that is
//! in shared buffers or in the kernel's page cache costs nothing more. Two reads of a hop that
//! miss both (each takes longer than [`DEVICE_READ`]) turn it cold, and the rest of that hop
//! and the following hops overlap their reads. A cold hop still reads its first block with a
//! plain, timed read (while the others are already requested); a hop without reads, or whose
//! plain reads all came from the page cache, turns the reader warm again. Reads are timed only
//! once a miss is expected, so an index in shared buffers never reads the clock. A walk starts
//! in the state the last walk of the same kind ([`Walk`]) and thread (backend) ended in: a
//! quantized index's graph pages are often cached while its full vectors are not, so the
//! reranks of its candidates keep a state of their own.
//!
//! Look-ahead hints ([`BlockReader::speculate`]) are issued when the next hop starts, once all
//! its own reads are hinted, with what is left of the budget. With `prefetch`, they are on only
//! while they do not make the walk's hops slower ([`crate::speculation`]), which are then
//! timed. A look-ahead hint holds a place in the window until a read issued after it has come
//! back (hints report no completion; a device serves reads about in order). A hint only asks
//! the kernel to
//! read ahead: a block hinted but never read leaves shared buffers (and the hit and read
//! counts) untouched, so every method and look-ahead setting reads exactly the same blocks into
//! shared buffers. Hints not consumed within the hint lifetime (in hops) are counted unused.
//!
//! Nothing here changes which blocks a walk visits, or when it locks them: a reader only
//! returns pinned, unlocked pages, in the order it was given.
//!
//! Lifetimes: a stream is owned by the [`BatchRead`] of one hop, which borrows its reader and
//! ends the stream before it returns, so a stream is never kept in state that outlives a call.

use crate::counters::IoCounters;
use crate::settings::{IoMethod, Settings};
use crate::source::{BlockNumber, BlockSource, Prefetched, Usage, DEVICE_READ};
use crate::speculation::{self, Speculation};
use std::cell::Cell;
use std::time::Duration;

/// How many hops an unused hint is kept for, until the settings are applied
/// ([`BlockReader::apply`] keeps them for the look-ahead plus two).
const FIRST_HINT_LIFETIME: u64 = 4;

thread_local! {
    /// Whether the last walk of this backend ended cold: the next one (the next insert of a
    /// bulk load, the next query) starts overlapping from its first hop.
    static LAST_WALK_COLD: Cell<bool> = const { Cell::new(false) };
    /// The same for the reranks of a quantized index's candidates.
    static LAST_RERANK_COLD: Cell<bool> = const { Cell::new(false) };
}

/// What a reader reads, for the state it starts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Graph hops (elements and their neighbor lists).
    Graph,
    /// The full vectors of a quantized index's candidates, a batch per rerank.
    Rerank,
}

impl Walk {
    fn last_cold(self) -> &'static std::thread::LocalKey<Cell<bool>> {
        match self {
            Walk::Graph => &LAST_WALK_COLD,
            Walk::Rerank => &LAST_RERANK_COLD,
        }
    }
}

/// Forgets how the last walk of this thread ended (as in a new backend: the next walk starts
/// warm). What its table fetches looked like is [`crate::heap::forget_table_watch`]'s.
pub fn forget_last_walk() {
    LAST_WALK_COLD.with(|last| last.set(false));
    LAST_RERANK_COLD.with(|last| last.set(false));
    speculation::forget();
}

/// A block hinted whose read was started and not yet consumed.
#[derive(Clone, Copy, Debug)]
struct Hint {
    block: BlockNumber,
    /// The hop it was issued in, to expire hints that were never used.
    hop: u64,
    /// Its place in the order hints were issued.
    seq: u64,
}

/// Reads the blocks of a walk's hops (see the module documentation). One per walk.
pub struct BlockReader<S: BlockSource> {
    source: S,
    walk: Walk,
    method: IoMethod,
    /// Read streams exist on this server.
    read_streams: bool,
    /// The tablespace's I/O concurrency (0 disables overlapping).
    io_concurrency: usize,
    /// Streams also get hints (the server's I/O goes through worker processes).
    advise_streams: bool,
    /// Upcoming candidates whose neighbors are hinted early (`hnsw.prefetch_lookahead`).
    lookahead: usize,
    /// A read since the last hop without reads.
    cold: bool,
    /// The last hop's plain reads missed shared buffers.
    missed_last_hop: bool,
    hints: Vec<Hint>,
    /// Hops started (stamps hints).
    hop: u64,
    /// Hints issued so far (numbers them).
    issued: u64,
    /// Hints numbered up to this are taken as read: a read issued after them has completed.
    done_upto: u64,
    /// Hints older than this many hops are counted unused and forgotten.
    hint_lifetime: u64,
    /// Look-ahead blocks to hint when the next hop starts.
    speculative: Vec<BlockNumber>,
    /// Whether look-ahead pays now (`prefetch` only).
    speculation: Speculation,
    counters: IoCounters,
}

impl<S: BlockSource> BlockReader<S> {
    /// A reader of `source` with `settings`, starting in the state the last walk ended in.
    pub fn new(source: S, settings: Settings) -> Self {
        Self::for_walk(source, settings, Walk::Graph)
    }

    /// A reader for `walk`, starting in the state the last walk of that kind ended in.
    pub fn for_walk(mut source: S, settings: Settings, walk: Walk) -> Self {
        let platform = source.platform();
        BlockReader {
            source,
            walk,
            method: settings.method.effective(platform.read_streams),
            read_streams: platform.read_streams,
            io_concurrency: platform.io_concurrency,
            advise_streams: platform.read_streams && platform.worker_io,
            lookahead: settings.lookahead,
            cold: walk.last_cold().with(Cell::get),
            missed_last_hop: false,
            hints: Vec::new(),
            hop: 0,
            issued: 0,
            done_upto: 0,
            hint_lifetime: FIRST_HINT_LIFETIME,
            speculative: Vec::new(),
            speculation: speculation::last(),
            counters: IoCounters::default(),
        }
    }

    /// Takes the settings now in effect for the next hops (a scan does at each fetch, as
    /// settings may change between fetches of a cursor): the method, the look-ahead, and a
    /// hint lifetime of the look-ahead plus two hops.
    pub fn apply(&mut self, settings: Settings) {
        self.method = settings.method.effective(self.read_streams);
        self.lookahead = settings.lookahead;
        self.hint_lifetime = (settings.lookahead as u64 + 2).max(1);
    }

    /// The source read from.
    pub fn source(&mut self) -> &mut S {
        &mut self.source
    }

    /// The method in effect.
    pub fn method(&self) -> IoMethod {
        self.method
    }

    /// Whether reads overlap now (the walk has met blocks outside shared buffers).
    pub fn is_cold(&self) -> bool {
        self.cold && self.overlaps()
    }

    fn overlaps(&self) -> bool {
        self.method != IoMethod::Off && self.io_concurrency > 0
    }

    /// How many upcoming candidates the walk should show [`speculate`](Self::speculate)'s
    /// planner now: the look-ahead while cold, else none.
    pub fn lookahead_width(&self) -> usize {
        if self.is_cold() && (!self.adapts() || self.speculation.on()) {
            self.lookahead
        } else {
            0
        }
    }

    /// Whether look-ahead turns itself on and off from the timing of the walk's hops: with
    /// `prefetch` (streams keep a fixed width).
    fn adapts(&self) -> bool {
        self.lookahead > 0 && self.method == IoMethod::Prefetch
    }

    /// The adaptive look-ahead's state.
    pub fn speculation(&self) -> Speculation {
        self.speculation
    }

    /// Whether the next batch should capture the neighbor lists it finds on its pages (for
    /// look-ahead): only while cold with look-ahead on.
    pub fn captures(&self) -> bool {
        self.lookahead > 0 && self.is_cold()
    }

    /// Hinted reads taken as still in flight: this hop's, and those of earlier hops (look-ahead)
    /// issued after the last read that has completed. Hints report no completion, but a device
    /// serves reads about in the order they come, so a look-ahead hint no longer holds a place
    /// in the window once the next hop's first read is back (it used to hold it until it
    /// expired, and a wrong guess left the following hops reading one block at a time).
    fn in_flight(&self) -> usize {
        self.hints
            .iter()
            .filter(|h| h.hop == self.hop || h.seq > self.done_upto)
            .count()
    }

    /// Hints `block` as a read of this hop's or a look-ahead; whether a read was started.
    fn hint(&mut self, block: BlockNumber) -> bool {
        if !self.prefetch(block) {
            return false;
        }
        self.issued += 1;
        self.hints.push(Hint {
            block,
            hop: self.hop,
            seq: self.issued,
        });
        true
    }

    /// Hints issued and neither consumed nor expired yet.
    pub fn hints_pending(&self) -> usize {
        self.hints.len()
    }

    /// The counters so far, counting the hints still pending as unused.
    pub fn counters(&self) -> IoCounters {
        let mut counters = self.counters;
        counters.unused += self.hints.len() as u64;
        counters
    }

    /// Reads in flight allowed for a hop whose layer has `fanout` neighbor slots.
    pub fn budget(&self, fanout: usize) -> usize {
        self.io_concurrency.min(fanout).max(1)
    }

    /// Starts reading `blocks` (distinct) for one hop on a layer with `fanout` neighbor slots.
    /// Take the pages in order with [`BatchRead::next`].
    pub fn batch<'a>(&'a mut self, blocks: &'a [BlockNumber], fanout: usize) -> BatchRead<'a, S> {
        self.hop += 1;
        self.expire_hints();
        self.counters.blocks += blocks.len() as u64;
        let budget = self.budget(fanout);
        let cold = self.is_cold();
        let timing = self.missed_last_hop || cold;
        let mut batch = BatchRead {
            usage: self.source.usage(),
            reader: self,
            blocks,
            pos: 0,
            mode: Mode::Plain,
            budget,
            issued: 0,
            stream: None,
            from: 0,
            device_misses: 0,
            page_cache_misses: 0,
            timing,
            missed: false,
            copied_here: false,
            measure: false,
            began: Duration::ZERO,
        };
        if cold {
            if batch.reader.adapts() {
                batch.measure = true;
                batch.began = batch.reader.source.clock();
            }
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

    /// Hints `block`: whether a read was started (false when it is in shared buffers).
    fn prefetch(&mut self, block: BlockNumber) -> bool {
        self.source.prefetch(block) == Prefetched::Started
    }

    /// Forgets a consumed hint; true if there was one.
    fn take_hint(&mut self, block: BlockNumber) -> bool {
        match self.hints.iter().position(|h| h.block == block) {
            Some(pos) => {
                let hint = self.hints.swap_remove(pos);
                self.done_upto = self.done_upto.max(hint.seq);
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

impl<S: BlockSource> Drop for BlockReader<S> {
    fn drop(&mut self) {
        self.walk.last_cold().with(|last| last.set(self.cold));
        if self.adapts() {
            speculation::keep(self.speculation);
        }
    }
}

/// How a batch is reading now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// One plain read per block, watching for a miss.
    Plain,
    /// Hint window.
    Prefetch,
    /// Read stream.
    Stream,
}

/// Where a read that missed shared buffers came from, judged by its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Miss {
    PageCache,
    Device,
}

/// One hop's reads, in the order of its blocks. Finishes on drop (ends its stream, counts).
pub struct BatchRead<'a, S: BlockSource> {
    reader: &'a mut BlockReader<S>,
    blocks: &'a [BlockNumber],
    /// Next block to hand out.
    pos: usize,
    mode: Mode,
    budget: usize,
    /// Prefetch mode: blocks up to here have been looked up / hinted.
    issued: usize,
    stream: Option<S::Stream>,
    /// Stream mode: the position of the stream's first block in the hop.
    from: usize,
    usage: Usage,
    /// Timed plain reads of this hop that missed shared buffers, by where they came from.
    device_misses: u32,
    page_cache_misses: u32,
    /// Time the next plain read.
    timing: bool,
    /// A plain read of this hop missed shared buffers.
    missed: bool,
    /// The page last handed out was just read by this backend itself.
    copied_here: bool,
    /// Time this cold hop for the adaptive look-ahead.
    measure: bool,
    /// When it began.
    began: Duration,
}

impl<S: BlockSource> BatchRead<'_, S> {
    /// The next block of the hop, pinned and unlocked.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<S::Page> {
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

    /// Pins the next pages into `pins` until it holds `limit` (or the hop ends), the way a
    /// store's load takes them a few at a time; `each(j, k, page, copied_here)` sees every page
    /// as it comes, with its place `j` in `pins` and `k` in the hop. Returns the hop position
    /// of `pins[0]`.
    pub fn fill(
        &mut self,
        pins: &mut Vec<S::Page>,
        limit: usize,
        mut each: impl FnMut(usize, usize, &S::Page, bool),
    ) -> usize {
        while pins.len() < limit {
            let k = self.pos;
            match self.next() {
                Some(page) => {
                    each(pins.len(), k, &page, self.copied_here);
                    pins.push(page);
                }
                None => break,
            }
        }
        self.pos - pins.len()
    }

    /// The source read from (to charge work done between pages, in the simulation).
    pub fn source(&mut self) -> &mut S {
        &mut self.reader.source
    }

    /// Hinted reads in flight now (the window), within [`budget`](Self::budget).
    pub fn hints_in_flight(&self) -> usize {
        self.reader.in_flight()
    }

    /// Whether this hop reads through a stream now.
    pub fn streaming(&self) -> bool {
        self.mode == Mode::Stream
    }

    /// The hop's budget of reads in flight.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Blocks handed out so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// Whether the page last returned by [`next`](Self::next) was just read synchronously by
    /// this backend: its bytes went through this CPU's cache on the way in (the kernel's copy
    /// and the checksum), so asking the CPU to fetch them again is wasted work.
    pub fn copied_here(&self) -> bool {
        self.copied_here
    }

    /// A plain read, timed when it misses shared buffers: a device read turns the reader
    /// cold and overlaps the rest of the hop (so does the probe read of a cold hop).
    fn next_plain(&mut self, block: BlockNumber) -> S::Page {
        let (page, miss) = self.timed_read(block);
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

    /// Reads `block`; for a timed miss of shared buffers, whether it came from a device.
    /// Records it for the end-of-hop decision. Reads are timed only once a miss is expected
    /// (after one in this hop or the previous one, and the probe of a cold hop), until one
    /// comes from the page cache: an index in shared buffers never reads the clock.
    fn timed_read(&mut self, block: BlockNumber) -> (S::Page, Option<Miss>) {
        let read = self.reader.source.read(block, self.timing);
        if read.hit {
            return (read.page, None);
        }
        // Every hint issued before this read has most likely been served too.
        self.reader.done_upto = self.reader.issued;
        self.missed = true;
        self.copied_here = true;
        let Some(took) = read.took else {
            // Time the next miss, unless the page cache already answered in this hop.
            self.timing = self.page_cache_misses == 0;
            return (read.page, None);
        };
        let miss = if took > DEVICE_READ {
            self.device_misses += 1;
            Miss::Device
        } else {
            // The page cache answers: no need to time the rest of this hop.
            self.timing = false;
            self.page_cache_misses += 1;
            Miss::PageCache
        };
        (read.page, Some(miss))
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
                self.stream = Some(self.reader.source.begin_stream(&self.blocks[from..]));
                self.from = from;
                self.mode = Mode::Stream;
            }
        }
    }

    /// Prefetch mode: tops the window up, then reads `block` (the one at `pos`).
    fn next_prefetched(&mut self, block: BlockNumber) -> S::Page {
        self.top_up_hints();
        self.reader.counters.in_flight_sum += self.reader.in_flight() as u64;
        self.reader.counters.in_flight_samples += 1;
        let hinted = self.reader.take_hint(block);
        // A plain read even when the look-up found the buffer: a "recent buffer" read would
        // not count as a use for the clock sweep, and evictions would then differ from `off`.
        if hinted {
            let read = self.reader.source.read(block, false);
            if !read.hit {
                self.reader.counters.prefetched += 1;
            }
            read.page
        } else {
            // Not requested ahead: its time tells a device from the page cache.
            self.timed_read(block).0
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
        let mut room = self.budget.saturating_sub(reader.in_flight());
        for i in 0..reader.speculative.len() {
            if room == 0 {
                break;
            }
            let block = reader.speculative[i];
            if blocks.contains(&block) || reader.hints.iter().any(|h| h.block == block) {
                continue;
            }
            if reader.hint(block) {
                reader.counters.speculated += 1;
                room -= 1;
            }
        }
    }

    /// Hints the blocks after the one at `pos` until `budget` hinted reads are in flight.
    fn top_up_hints(&mut self) {
        self.issued = self.issued.max(self.pos + 1);
        while self.issued < self.blocks.len() && self.reader.in_flight() < self.budget {
            let ahead = self.blocks[self.issued];
            if !self.reader.hints.iter().any(|h| h.block == ahead) {
                self.reader.hint(ahead);
            }
            self.issued += 1;
        }
    }

    /// Stream mode: the stream's next page, which is `block`'s.
    fn next_streamed(&mut self, block: BlockNumber) -> S::Page {
        if self.reader.advise_streams {
            // I/O workers read one block each at a time: the kernel's read-ahead, started by
            // the hints, gives the stream the concurrency the budget allows.
            self.top_up_hints();
        }
        let stream = self.stream.as_mut().expect("stream mode has a stream");
        let consumed = self.pos + 1;
        let page = self.reader.source.stream_next(stream, block);
        let handed = self.from + self.reader.source.stream_pulled(stream);
        self.reader.counters.in_flight_sum += handed.saturating_sub(consumed) as u64;
        self.reader.counters.in_flight_samples += 1;
        // A hinted block the stream read: its read is counted with the stream's.
        self.reader.take_hint(block);
        page
    }
}

impl<S: BlockSource> Drop for BatchRead<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding from an error: the stream's own drop leaves it to the error's cleanup.
            return;
        }
        // Release what a stream still holds (a batch left before its end) before counting.
        if let Some(stream) = self.stream.take() {
            self.reader.source.end_stream(stream);
        }
        let now = self.reader.source.usage();
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
        if self.measure {
            let took = self.reader.source.clock().saturating_sub(self.began);
            self.reader.speculation.record_hop(took, self.pos as u32);
        }
        // Warm again after a hop without reads, or whose timed reads all came from the
        // kernel's page cache (reads requested ahead always look fast, so they do not count).
        if self.reader.cold
            && (reads == 0 || (self.page_cache_misses > 0 && self.device_misses == 0))
        {
            self.reader.cold = false;
        }
    }
}
