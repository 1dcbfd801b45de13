//! A deterministic disk, page cache and shared buffers over a virtual clock ([`SimDisk`]),
//! implementing [`BlockSource`] as the buffer manager would.
//!
//! * **Device** ([`DiskModel`]): a read that starts while `n` others are in flight takes
//!   `latency + n × contention` µs; at most `queue_depth` reads are in flight (the others wait
//!   for a slot), and with an IOPS cap reads start at least `1 / iops` apart. This reproduces
//!   the measured curve of this machine's disk (`benches/hnsw/disk_limit.py`: 50 µs alone,
//!   13.5 µs each with 16 in flight) within a few percent.
//! * **Page cache**: LRU over whole pages. A hint (`PrefetchBuffer`) of a page it lacks starts a
//!   device read at once; a read of a page whose read is under way waits for it.
//! * **Shared buffers**: PostgreSQL's clock sweep (usage counts up to 5, free buffers first); a
//!   hint never brings a page in; a `BulkRead` range reuses a ring of 32 buffers.
//! * **I/O workers** (`io_method = worker`): a stream's reads are handed to `count` worker
//!   processes, each reading one block at a time, with a round trip per read.
//! * **CPU**: the calls cost the host's µs ([`HostModel`]); the store charges its own work with
//!   [`SimDisk::cpu`].
//!
//! Nothing reads a real clock: the same calls give the same times on every run.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
use std::time::Duration;
use vector_io::range::RangeWindow;
use vector_io::source::{BlockNumber, BlockSource, Platform, Prefetched, Read, Strategy, Usage};

/// A block of one of the simulated relations (the index is relation 0).
pub type Key = u64;

/// The key of `block` of relation `rel`.
pub fn key(rel: u32, block: BlockNumber) -> Key {
    (u64::from(rel) << 32) | u64::from(block)
}

/// A storage device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskModel {
    /// Name in reports.
    pub name: &'static str,
    /// µs of one read alone.
    pub latency_us: f64,
    /// µs each other read in flight adds to a read when it starts.
    pub contention_us: f64,
    /// Reads in flight at most (the device's queue).
    pub queue_depth: usize,
    /// Reads started per second at most.
    pub iops: Option<f64>,
}

impl DiskModel {
    /// This machine's virtual disk, fitted to `benches/results/disk-limit-2026-12-01.md`.
    pub const THIS_MACHINE: DiskModel = DiskModel {
        name: "this machine",
        latency_us: 48.5,
        contention_us: 11.0,
        queue_depth: 64,
        iops: None,
    };
    /// A local NVMe drive: ~80 µs per read, a deep queue, ~500k IOPS.
    pub const NVME: DiskModel = DiskModel {
        name: "local NVMe",
        latency_us: 80.0,
        contention_us: 0.5,
        queue_depth: 128,
        iops: Some(500_000.0),
    };
    /// A cloud block volume: ~1 ms per read, capped at 3,000 IOPS.
    pub const CLOUD_3K: DiskModel = DiskModel {
        name: "cloud volume, 3,000 IOPS",
        latency_us: 1000.0,
        contention_us: 0.0,
        queue_depth: 64,
        iops: Some(3000.0),
    };
    /// A cloud block volume: ~1 ms per read, capped at 16,000 IOPS.
    pub const CLOUD_16K: DiskModel = DiskModel {
        name: "cloud volume, 16,000 IOPS",
        latency_us: 1000.0,
        contention_us: 0.0,
        queue_depth: 64,
        iops: Some(16_000.0),
    };
}

/// `io_method = worker`: I/O worker processes reading a stream's blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workers {
    /// `io_workers`.
    pub count: usize,
    /// CPU µs of the backend to hand a read to a worker (submission, wake-up signal).
    pub submit_us: f64,
    /// µs from handing a read to a worker until it starts it (wake-up, queue).
    pub dispatch_us: f64,
    /// µs from the worker's read done until the backend can use the buffer.
    pub complete_us: f64,
    /// µs a backend that slept waiting for a worker's read takes to run again.
    pub wake_us: f64,
}

/// CPU and kernel costs of the calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostModel {
    /// A read served by the kernel's page cache (system call, copy, checksum).
    pub page_cache_read_us: f64,
    /// Extra of a read that waits for the device (buffer replacement, wake-up), on top of
    /// the device's time and the copy.
    pub device_read_extra_us: f64,
    /// A hint that starts a read (`PrefetchBuffer` and `posix_fadvise`).
    pub hint_us: f64,
    /// A look-up that finds the block in shared buffers (hint or read).
    pub buffer_hit_us: f64,
    /// Beginning or ending a read stream.
    pub stream_us: f64,
    /// `None`: streams submit their reads themselves (`io_uring`).
    pub workers: Option<Workers>,
}

impl HostModel {
    /// PostgreSQL 18 on this machine with `io_method = worker` (3 workers), fitted to
    /// `benches/results/cold-100k-768-2026-12-01.md` (see the crate's README).
    pub const THIS_MACHINE: HostModel = HostModel {
        page_cache_read_us: 1.9,
        device_read_extra_us: 5.0,
        hint_us: 2.5,
        buffer_hit_us: 0.1,
        stream_us: 1.0,
        workers: Some(Workers {
            count: 3,
            submit_us: 18.0,
            dispatch_us: 15.0,
            complete_us: 5.0,
            wake_us: 10.0,
        }),
    };
}

/// What a [`SimDisk`] simulates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    pub disk: DiskModel,
    pub host: HostModel,
    /// Shared buffers (pages).
    pub shared_buffers: usize,
    /// Pages the kernel's page cache holds.
    pub page_cache: usize,
    /// The tablespace's `effective_io_concurrency`.
    pub io_concurrency: usize,
    /// The server has read streams (PostgreSQL 17+).
    pub read_streams: bool,
}

impl SimConfig {
    /// A small configuration for tests: this machine's disk and host, `shared_buffers`
    /// pages of shared buffers, no page cache to speak of.
    pub fn test(shared_buffers: usize, io_concurrency: usize) -> Self {
        SimConfig {
            disk: DiskModel::THIS_MACHINE,
            host: HostModel::THIS_MACHINE,
            shared_buffers,
            page_cache: 16,
            io_concurrency,
            read_streams: true,
        }
    }
}

/// Counts of what the policy asked of the simulated buffer manager.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// `PrefetchBuffer` calls.
    pub hints: u64,
    /// Of those, reads started.
    pub hints_started: u64,
    /// Plain reads (`ReadBuffer`).
    pub reads: u64,
    /// Plain reads that read the clock (timed).
    pub clock_reads: u64,
    /// Read streams begun.
    pub streams: u64,
    /// Pages returned by streams.
    pub streamed: u64,
    /// Reads the device served.
    pub device_reads: u64,
    /// Most device reads in flight at once.
    pub max_device_in_flight: u64,
}

/// One call the policy made, for tests comparing settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Hint(BlockNumber),
    Read { block: BlockNumber, timed: bool },
    StreamBegin { blocks: usize },
    StreamNext(BlockNumber),
    StreamEnd,
}

/// A simulated page: which block it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimPage {
    pub block: BlockNumber,
}

struct Device {
    model: DiskModel,
    /// (start, finish) of reads that may still be in flight.
    active: Vec<(f64, f64)>,
    next_start: f64,
    reads: u64,
    max_in_flight: u64,
}

impl Device {
    fn new(model: DiskModel) -> Self {
        Device {
            model,
            active: Vec::new(),
            next_start: 0.0,
            reads: 0,
            max_in_flight: 0,
        }
    }

    fn in_flight_at(&self, t: f64) -> usize {
        self.active
            .iter()
            .filter(|&&(s, f)| s <= t && t < f)
            .count()
    }

    /// A read arriving at `at`: when it finishes.
    fn submit(&mut self, at: f64) -> f64 {
        // Reads long finished can no longer overlap anything that arrives now.
        self.active.retain(|&(_, f)| f > at - 20_000.0);
        let mut start = at.max(self.next_start);
        let mut others = self.in_flight_at(start);
        while others >= self.model.queue_depth.max(1) {
            // Wait for the first of them to finish.
            start = self
                .active
                .iter()
                .filter(|&&(s, f)| s <= start && start < f)
                .map(|&(_, f)| f)
                .fold(f64::INFINITY, f64::min);
            others = self.in_flight_at(start);
        }
        let finish = start + self.model.latency_us + others as f64 * self.model.contention_us;
        if let Some(iops) = self.model.iops {
            self.next_start = start + 1e6 / iops;
        }
        self.active.push((start, finish));
        self.reads += 1;
        self.max_in_flight = self.max_in_flight.max(others as u64 + 1);
        finish
    }
}

/// The kernel's page cache: when each page is (or will be) there, LRU order.
struct PageCache {
    capacity: usize,
    pages: HashMap<Key, (f64, u64)>,
    lru: BTreeMap<u64, Key>,
    stamp: u64,
}

impl PageCache {
    fn new(capacity: usize) -> Self {
        PageCache {
            capacity: capacity.max(1),
            pages: HashMap::new(),
            lru: BTreeMap::new(),
            stamp: 0,
        }
    }

    fn ready_at(&self, key: Key) -> Option<f64> {
        self.pages.get(&key).map(|&(ready, _)| ready)
    }

    fn touch(&mut self, key: Key, ready: f64) {
        self.stamp += 1;
        if let Some((_, old)) = self.pages.insert(key, (ready, self.stamp)) {
            self.lru.remove(&old);
        }
        self.lru.insert(self.stamp, key);
        while self.pages.len() > self.capacity {
            let Some((_, victim)) = self.lru.pop_first() else {
                break;
            };
            self.pages.remove(&victim);
        }
    }

    fn clear(&mut self) {
        self.pages.clear();
        self.lru.clear();
    }
}

/// Shared buffers with PostgreSQL's clock sweep.
struct SharedBuffers {
    slots: Vec<(Key, u8)>,
    map: HashMap<Key, usize>,
    capacity: usize,
    hand: usize,
}

const MAX_USAGE: u8 = 5;
/// Buffers of a `BulkRead` ring (256 kB).
const RING_BUFFERS: usize = 32;

impl SharedBuffers {
    fn new(capacity: usize) -> Self {
        SharedBuffers {
            slots: Vec::new(),
            map: HashMap::new(),
            capacity: capacity.max(1),
            hand: 0,
        }
    }

    fn contains(&self, key: Key) -> bool {
        self.map.contains_key(&key)
    }

    /// A pin of a buffer holding `key`: true (and one more use) if there is one.
    fn pin(&mut self, key: Key) -> bool {
        match self.map.get(&key) {
            Some(&slot) => {
                let usage = &mut self.slots[slot].1;
                *usage = (*usage + 1).min(MAX_USAGE);
                true
            }
            None => false,
        }
    }

    /// A free buffer or the clock sweep's victim.
    fn victim(&mut self) -> usize {
        if self.slots.len() < self.capacity {
            self.slots.push((Key::MAX, 0));
            return self.slots.len() - 1;
        }
        loop {
            let slot = self.hand;
            self.hand = (self.hand + 1) % self.slots.len();
            let usage = &mut self.slots[slot].1;
            if *usage == 0 {
                return slot;
            }
            *usage -= 1;
        }
    }

    fn place(&mut self, slot: usize, key: Key) {
        let old = self.slots[slot].0;
        if old != Key::MAX {
            self.map.remove(&old);
        }
        self.slots[slot] = (key, 1);
        self.map.insert(key, slot);
    }

    /// Loads `key` (not present) into a buffer.
    fn load(&mut self, key: Key) {
        let slot = self.victim();
        self.place(slot, key);
    }

    /// Loads `key` into a buffer of `ring` (a `BulkRead` strategy), reusing the ring's oldest
    /// buffer once it has all of its buffers.
    fn load_in_ring(&mut self, key: Key, ring: &mut VecDeque<usize>) {
        let slot = if ring.len() >= RING_BUFFERS {
            let slot = ring.pop_front().expect("a full ring");
            // Someone else is using it meanwhile: leave it to them.
            if self.slots[slot].1 > 1 {
                self.victim()
            } else {
                slot
            }
        } else {
            self.victim()
        };
        self.place(slot, key);
        ring.push_back(slot);
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.map.clear();
        self.hand = 0;
    }

    fn evict_relation(&mut self, rel: u32) {
        for slot in &mut self.slots {
            if slot.0 != Key::MAX && (slot.0 >> 32) as u32 == rel {
                self.map.remove(&slot.0);
                *slot = (Key::MAX, 0);
            }
        }
    }
}

/// A read stream over blocks (a hop's, or a range's).
pub struct SimStream {
    blocks: Vec<BlockNumber>,
    /// When each pulled block's buffer is valid, and whether it needed a read.
    valid_at: Vec<(f64, bool)>,
    consumed: usize,
    ios: usize,
    distance: usize,
    ring: Option<VecDeque<usize>>,
}

/// A range being read (see [`BlockSource::begin_range`]).
pub enum SimRange {
    /// A read stream (PostgreSQL 17+).
    Stream(SimStream),
    /// Hints and plain reads (before 17).
    Window(RangeWindow, Option<VecDeque<usize>>),
}

/// The simulated buffer manager and disk of one backend (see the module documentation).
pub struct SimDisk {
    cfg: SimConfig,
    /// The virtual clock, µs.
    now: f64,
    device: Device,
    cache: PageCache,
    buffers: SharedBuffers,
    usage: Usage,
    /// The same, by relation.
    rel_usage: HashMap<u32, Usage>,
    /// When each I/O worker is free again.
    workers: Vec<f64>,
    /// Relation read through [`BlockSource`] (0: the index).
    rel: u32,
    pub stats: SimStats,
    /// Every call, when recording.
    pub trace: Option<Vec<Call>>,
}

impl SimDisk {
    pub fn new(cfg: SimConfig) -> Self {
        SimDisk {
            cfg,
            now: 0.0,
            device: Device::new(cfg.disk),
            cache: PageCache::new(cfg.page_cache),
            buffers: SharedBuffers::new(cfg.shared_buffers),
            usage: Usage::default(),
            rel_usage: HashMap::new(),
            workers: vec![0.0; cfg.host.workers.map_or(0, |w| w.count)],
            rel: 0,
            stats: SimStats::default(),
            trace: None,
        }
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Reads through [`BlockSource`] go to relation `rel` from now on.
    pub fn set_relation(&mut self, rel: u32) {
        self.rel = rel;
    }

    /// The virtual clock, µs.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Spends `us` of CPU.
    pub fn cpu(&mut self, us: f64) {
        self.now += us;
    }

    /// Records every call from now on.
    pub fn record(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// Empties shared buffers and the page cache (a restart and `drop_caches`).
    pub fn drop_caches(&mut self) {
        self.buffers.clear();
        self.cache.clear();
    }

    /// Reads every block of `blocks` of relation `rel` into shared buffers, untimed.
    pub fn prewarm(&mut self, rel: u32, blocks: Range<BlockNumber>) {
        for block in blocks {
            let key = key(rel, block);
            if !self.buffers.pin(key) {
                self.buffers.load(key);
            }
        }
    }

    /// Whether `block` of relation `rel` is in shared buffers.
    pub fn is_buffered(&self, rel: u32, block: BlockNumber) -> bool {
        self.buffers.contains(key(rel, block))
    }

    /// Most device reads in flight at once so far, and device reads so far.
    pub fn device_counts(&self) -> (u64, u64) {
        (self.device.max_in_flight, self.device.reads)
    }

    /// Buffer hits and reads of relation `rel` so far.
    pub fn usage_of(&self, rel: u32) -> Usage {
        self.rel_usage.get(&rel).copied().unwrap_or_default()
    }

    /// Puts every block of `blocks` of relation `rel` in the page cache (read long ago).
    pub fn warm_page_cache(&mut self, rel: u32, blocks: Range<BlockNumber>) {
        for block in blocks {
            self.cache.touch(key(rel, block), f64::NEG_INFINITY);
        }
    }

    /// Evicts every buffer of relation `rel` from shared buffers.
    pub fn evict_relation(&mut self, rel: u32) {
        self.buffers.evict_relation(rel);
    }

    fn count(&mut self, key: Key, hit: bool) {
        let usage = self.rel_usage.entry((key >> 32) as u32).or_default();
        if hit {
            self.usage.hits += 1;
            usage.hits += 1;
        } else {
            self.usage.reads += 1;
            usage.reads += 1;
        }
    }

    fn log(&mut self, call: Call) {
        if let Some(trace) = self.trace.as_mut() {
            trace.push(call);
        }
    }

    /// A page read at `at` from the page cache or the device: when its bytes are copied.
    fn pread(&mut self, key: Key, at: f64) -> f64 {
        let host = self.cfg.host;
        match self.cache.ready_at(key) {
            Some(ready) => {
                self.cache.touch(key, ready);
                at.max(ready) + host.page_cache_read_us
            }
            None => {
                let finish = self.device.submit(at);
                self.cache.touch(key, finish);
                finish + host.device_read_extra_us + host.page_cache_read_us
            }
        }
    }

    /// A plain read of `key`: whether it was a hit, and the time it took.
    fn read_key(&mut self, key: Key, ring: Option<&mut VecDeque<usize>>) -> (bool, f64) {
        let started = self.now;
        if self.buffers.pin(key) {
            self.count(key, true);
            self.now += self.cfg.host.buffer_hit_us;
            return (true, self.now - started);
        }
        self.count(key, false);
        match ring {
            Some(ring) => self.buffers.load_in_ring(key, ring),
            None => self.buffers.load(key),
        }
        self.now = self.pread(key, self.now);
        (false, self.now - started)
    }

    /// A plain read of a block of relation `rel` (table rows), outside the policy.
    pub fn read_block(&mut self, rel: u32, block: BlockNumber) -> bool {
        self.read_key(key(rel, block), None).0
    }

    fn hint_key(&mut self, key: Key) -> Prefetched {
        if self.buffers.contains(key) {
            self.now += self.cfg.host.buffer_hit_us;
            return Prefetched::Cached;
        }
        self.now += self.cfg.host.hint_us;
        if self.cache.ready_at(key).is_none() {
            let finish = self.device.submit(self.now);
            self.cache.touch(key, finish);
        }
        Prefetched::Started
    }

    fn new_stream(&mut self, blocks: Vec<BlockNumber>, ring: Option<VecDeque<usize>>) -> SimStream {
        self.now += self.cfg.host.stream_us;
        SimStream {
            blocks,
            valid_at: Vec::new(),
            consumed: 0,
            ios: 0,
            // READ_STREAM_FULL: io_combine_limit (16 blocks) from the start.
            distance: 16,
            ring,
        }
    }

    /// The stream's look-ahead: pins what it can within its distance and I/O limit.
    fn look_ahead(&mut self, stream: &mut SimStream) {
        let max_ios = self.cfg.io_concurrency.max(1);
        let max_pinned = (4 * max_ios).max(16);
        while stream.valid_at.len() < stream.blocks.len()
            && stream.valid_at.len() - stream.consumed < stream.distance
        {
            let key = key(self.rel, stream.blocks[stream.valid_at.len()]);
            if self.buffers.pin(key) {
                self.count(key, true);
                self.now += self.cfg.host.buffer_hit_us;
                stream.valid_at.push((self.now, false));
                continue;
            }
            if stream.ios >= max_ios {
                break;
            }
            self.count(key, false);
            match stream.ring.as_mut() {
                Some(ring) => self.buffers.load_in_ring(key, ring),
                None => self.buffers.load(key),
            }
            let valid = match self.cfg.host.workers {
                Some(w) => {
                    let (worker, free) = self.workers.iter().copied().enumerate().fold(
                        (0, f64::INFINITY),
                        |best, (i, f)| {
                            if f < best.1 {
                                (i, f)
                            } else {
                                best
                            }
                        },
                    );
                    self.now += w.submit_us;
                    let start = (self.now + w.dispatch_us).max(free);
                    let done = self.pread(key, start);
                    self.workers[worker] = done;
                    done + w.complete_us
                }
                None => self.pread(key, self.now),
            };
            stream.valid_at.push((valid, true));
            stream.ios += 1;
            stream.distance = (stream.distance * 2).min(max_pinned);
        }
    }

    /// The stream's next buffer, waiting for its read.
    fn stream_take(&mut self, stream: &mut SimStream) -> Option<BlockNumber> {
        if stream.consumed >= stream.blocks.len() {
            return None;
        }
        self.look_ahead(stream);
        let (valid, io) = stream.valid_at[stream.consumed];
        if valid > self.now {
            self.now = valid + self.cfg.host.workers.map_or(0.0, |w| w.wake_us);
        }
        if io {
            stream.ios -= 1;
        }
        let block = stream.blocks[stream.consumed];
        stream.consumed += 1;
        self.look_ahead(stream);
        Some(block)
    }
}

impl BlockSource for SimDisk {
    type Page = SimPage;
    type Stream = SimStream;
    type RangeStream = SimRange;

    fn platform(&mut self) -> Platform {
        Platform {
            io_concurrency: self.cfg.io_concurrency,
            read_streams: self.cfg.read_streams,
            worker_io: self.cfg.host.workers.is_some(),
        }
    }

    fn prefetch(&mut self, block: BlockNumber) -> Prefetched {
        self.stats.hints += 1;
        self.log(Call::Hint(block));
        let result = self.hint_key(key(self.rel, block));
        if result == Prefetched::Started {
            self.stats.hints_started += 1;
        }
        self.note_device();
        result
    }

    fn read(&mut self, block: BlockNumber, timed: bool) -> Read<SimPage> {
        self.stats.reads += 1;
        if timed {
            self.stats.clock_reads += 1;
        }
        self.log(Call::Read { block, timed });
        let (hit, took) = self.read_key(key(self.rel, block), None);
        self.note_device();
        Read {
            page: SimPage { block },
            hit,
            took: (timed && !hit).then(|| Duration::from_nanos((took * 1000.0) as u64)),
        }
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn clock(&mut self) -> Duration {
        self.stats.clock_reads += 1;
        Duration::from_nanos((self.now * 1000.0) as u64)
    }

    fn begin_stream(&mut self, blocks: &[BlockNumber]) -> SimStream {
        self.stats.streams += 1;
        self.log(Call::StreamBegin {
            blocks: blocks.len(),
        });
        self.new_stream(blocks.to_vec(), None)
    }

    fn stream_next(&mut self, stream: &mut SimStream, block: BlockNumber) -> SimPage {
        self.stats.streamed += 1;
        self.log(Call::StreamNext(block));
        let got = self.stream_take(stream);
        assert_eq!(got, Some(block), "a stream returns its blocks in order");
        self.note_device();
        SimPage { block }
    }

    fn stream_pulled(&self, stream: &SimStream) -> usize {
        stream.valid_at.len()
    }

    fn end_stream(&mut self, _stream: SimStream) {
        self.log(Call::StreamEnd);
        self.now += self.cfg.host.stream_us;
    }

    fn begin_range(&mut self, range: Range<BlockNumber>, strategy: Strategy) -> SimRange {
        let ring = (strategy == Strategy::BulkRead).then(VecDeque::new);
        if self.cfg.read_streams {
            SimRange::Stream(self.new_stream(range.collect(), ring))
        } else {
            SimRange::Window(RangeWindow::new(range, self.cfg.io_concurrency), ring)
        }
    }

    fn range_next(&mut self, stream: &mut SimRange) -> Option<SimPage> {
        let block = match stream {
            SimRange::Stream(s) => self.stream_take(s)?,
            SimRange::Window(window, ring) => {
                let (block, hints) = window.advance()?;
                for b in hints {
                    self.hint_key(key(self.rel, b));
                }
                self.read_key(key(self.rel, block), ring.as_mut());
                block
            }
        };
        self.note_device();
        Some(SimPage { block })
    }

    fn end_range(&mut self, _stream: SimRange) {}
}

impl SimDisk {
    fn note_device(&mut self) {
        self.stats.device_reads = self.device.reads;
        self.stats.max_device_in_flight = self.device.max_in_flight;
    }
}
