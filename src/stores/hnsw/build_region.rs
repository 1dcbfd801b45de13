//! The memory a build graph's records live in ([`Region`]): growing backend memory for a serial
//! build ([`LocalRegion`]), a fixed part of the dynamic shared memory segment of a parallel build
//! ([`SharedRegion`]), with what every process shares about the graph ([`GraphHeader`]).

use crate::storage::lwlock::SharedLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What every process of a build shares about its graph (in a parallel build, in the segment).
#[repr(C)]
pub struct GraphHeader {
    /// The entry point: id in the low 32 bits, level above, [`NO_ENTRY`] when empty.
    pub(crate) entry: AtomicU64,
    /// Words of the arena handed out (parallel builds).
    next_word: AtomicU64,
    /// Words the arena has (parallel builds).
    capacity_words: u64,
    /// Bytes pgvector would have taken from its shared area (parallel builds).
    pub(crate) accounted: AtomicU64,
    /// Elements in the graph.
    pub(crate) elements: AtomicU64,
    /// Tuples indexed by every participant, the on-disk phase included.
    pub indtuples: AtomicU64,
    /// The graph was written to pages; inserts go there now.
    pub flushed: AtomicBool,
    pub(crate) entry_lock: SharedLock,
    pub(crate) entry_wait_lock: SharedLock,
    /// Held in share mode by every insert into memory, in exclusive mode to write the graph.
    pub flush_lock: SharedLock,
}

pub(crate) const NO_ENTRY: u64 = u64::MAX;

impl GraphHeader {
    /// A header for an arena of `capacity_words`, written at `at`, locks initialized.
    ///
    /// # Safety
    ///
    /// `at` is 8-byte aligned and points to `size_of::<GraphHeader>()` bytes that no other
    /// process uses yet.
    pub unsafe fn init_at<'a>(at: *mut u8, capacity_words: usize) -> &'a GraphHeader {
        let header = at.cast::<GraphHeader>();
        // SAFETY: per the contract; the locks are initialized below, before any use.
        unsafe {
            header.write(GraphHeader {
                entry: AtomicU64::new(NO_ENTRY),
                next_word: AtomicU64::new(0),
                capacity_words: capacity_words as u64,
                accounted: AtomicU64::new(0),
                elements: AtomicU64::new(0),
                indtuples: AtomicU64::new(0),
                flushed: AtomicBool::new(false),
                entry_lock: std::mem::zeroed(),
                entry_wait_lock: std::mem::zeroed(),
                flush_lock: std::mem::zeroed(),
            });
            let header = &*header;
            header.entry_lock.init();
            header.entry_wait_lock.init();
            header.flush_lock.init();
            header
        }
    }

    /// Bytes pgvector's parallel build would have allocated so far.
    pub fn accounted(&self) -> usize {
        self.accounted.load(Ordering::Relaxed) as usize
    }
}

/// The memory a graph's records live in.
pub trait Region {
    /// Whether other processes insert into the same graph (then locks are taken).
    const SHARED: bool;

    /// The first word of the arena.
    fn base(&self) -> *mut u64;

    /// Words allocated so far; records fill `0..used()`.
    fn used(&self) -> usize;

    /// Allocates a record of `words` words; its offset, or `None` when there is no room.
    fn allocate(&mut self, words: usize) -> Option<usize>;

    /// The shared state.
    fn header(&self) -> &GraphHeader;
}

/// A serial build's arena: growing backend memory.
pub struct LocalRegion {
    words: Vec<u64>,
    header: Box<GraphHeader>,
}

impl Default for LocalRegion {
    fn default() -> Self {
        let header = Box::new(GraphHeader {
            entry: AtomicU64::new(NO_ENTRY),
            next_word: AtomicU64::new(0),
            capacity_words: 0,
            accounted: AtomicU64::new(0),
            elements: AtomicU64::new(0),
            indtuples: AtomicU64::new(0),
            flushed: AtomicBool::new(false),
            // SAFETY: an all-zero LWLock is plain data; these are never taken (SHARED is false).
            entry_lock: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            entry_wait_lock: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            flush_lock: unsafe { std::mem::zeroed() },
        });
        LocalRegion {
            words: Vec::new(),
            header,
        }
    }
}

impl LocalRegion {
    /// Makes room for a record of `words` words, so that allocating it does not fail.
    pub fn try_reserve(&mut self, words: usize) -> Result<(), std::collections::TryReserveError> {
        self.words.try_reserve(words)
    }
}

impl Region for LocalRegion {
    const SHARED: bool = false;

    fn base(&self) -> *mut u64 {
        self.words.as_ptr().cast_mut()
    }

    fn used(&self) -> usize {
        self.words.len()
    }

    fn allocate(&mut self, words: usize) -> Option<usize> {
        let at = self.words.len();
        // Ids are u32 word offsets: past 32 GB the graph is full.
        if at + words > u32::MAX as usize {
            return None;
        }
        self.words.try_reserve(words).ok()?;
        self.words.resize(at + words, 0);
        Some(at)
    }

    fn header(&self) -> &GraphHeader {
        &self.header
    }
}

/// A parallel build's arena: a fixed part of the build's segment, allocated by every
/// participant.
pub struct SharedRegion<'a> {
    base: *mut u64,
    header: &'a GraphHeader,
}

impl<'a> SharedRegion<'a> {
    /// The arena at `base` described by `header`.
    ///
    /// # Safety
    ///
    /// `base` is 8-byte aligned and points to `header`'s capacity in words, mapped for `'a` and
    /// used only through this header's graph.
    pub unsafe fn new(base: *mut u8, header: &'a GraphHeader) -> Self {
        SharedRegion {
            base: base.cast(),
            header,
        }
    }
}

impl Region for SharedRegion<'_> {
    const SHARED: bool = true;

    fn base(&self) -> *mut u64 {
        self.base
    }

    fn used(&self) -> usize {
        (self.header.next_word.load(Ordering::Acquire) as usize)
            .min(self.header.capacity_words as usize)
    }

    fn allocate(&mut self, words: usize) -> Option<usize> {
        let at = self
            .header
            .next_word
            .fetch_add(words as u64, Ordering::AcqRel) as usize;
        (at + words <= (self.header.capacity_words as usize).min(u32::MAX as usize)).then_some(at)
    }

    fn header(&self) -> &GraphHeader {
        self.header
    }
}
