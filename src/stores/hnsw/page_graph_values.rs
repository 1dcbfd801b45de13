//! The values a writer keeps while one insert or repair runs: which loaded values are worth
//! keeping ([`KeepFilter`]), and where they are ([`ValueCache`]), for the pair distances of
//! neighbor selection and the duplicate checks, as pgvector keeps the values it loads.

use crate::stores::hnsw::page_graph::{Element, ElementId};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Which loaded values are worth keeping: those of live elements that can still be among the
/// `keep` nearest live elements loaded for the current query, the ones a search keeps in its
/// result queue and neighbor selection then compares (pgvector likewise copies the values of
/// the elements it adds to that queue only). A neighbor list loaded for a back-link (a new
/// query, at most `2 m <= keep` elements) is kept whole. Any other value needed later is read
/// again from its page, which gives the same bytes: a live element's value does not change
/// until vacuum deletes it, and vacuum waits for the inserts under way before deleting.
pub struct KeepFilter {
    /// How many nearest live elements count: `ef_construction` + 1 (repairs search one more).
    keep: usize,
    /// The query the distances below are to.
    query: Vec<u8>,
    /// The `keep` smallest distances of live elements loaded for `query` (a max-heap).
    nearest: std::collections::BinaryHeap<Distance>,
}

/// A distance ordered by `total_cmp`, for the heap.
#[derive(Clone, Copy, PartialEq)]
struct Distance(f64);

impl Eq for Distance {}

impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Distance {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl KeepFilter {
    pub fn new(keep: usize) -> Self {
        KeepFilter {
            keep: keep.max(1),
            query: Vec::new(),
            nearest: std::collections::BinaryHeap::new(),
        }
    }

    /// Distances from now on are to `query`: starts over if it is another one.
    pub fn start(&mut self, query: &[u8]) {
        let bytes = query;
        if self.query != bytes {
            self.query.clear();
            self.query.extend_from_slice(bytes);
            self.nearest.clear();
        }
    }

    /// Forgets the query and its distances.
    pub fn clear(&mut self) {
        self.query.clear();
        self.nearest.clear();
    }

    /// Whether to keep the value of a loaded element.
    pub fn admit(&mut self, element: &Element) -> bool {
        if !element.live {
            return false;
        }
        let d = Distance(element.distance);
        if self.nearest.len() < self.keep {
            self.nearest.push(d);
            return true;
        }
        match self.nearest.peek() {
            Some(&furthest) if d.0.is_nan() || d < furthest => {
                self.nearest.pop();
                self.nearest.push(d);
                true
            }
            _ => d.0.is_nan(),
        }
    }
}

/// Element values kept in one 8-byte aligned arena.
#[derive(Default)]
pub struct ValueCache {
    /// Element -> (first word, length in bytes).
    index: HashMap<ElementId, (usize, usize), BuildHasherDefault<TidHasher>>,
    words: Vec<u64>,
}

/// Where a value is in a writer's value cache (first word, length in bytes); valid until the
/// insert or repair it was read for ends.
#[derive(Clone, Copy, Debug)]
pub struct CachedValue(pub (usize, usize));

thread_local! {
    /// A cleared cache kept between inserts of this backend, so each insert does not grow a
    /// new one from scratch.
    static SPARE_CACHE: std::cell::RefCell<Option<ValueCache>> = const { std::cell::RefCell::new(None) };
}

/// Caches larger than this are not kept for the next insert.
const SPARE_CACHE_WORDS: usize = 1 << 20;

impl ValueCache {
    /// The spare cache of this backend, or a new one.
    pub fn take_spare() -> Self {
        SPARE_CACHE
            .with(|spare| spare.borrow_mut().take())
            .unwrap_or_default()
    }

    /// Hands the cache back for the next insert.
    pub fn give_back(mut self) {
        if self.words.capacity() <= SPARE_CACHE_WORDS {
            self.clear();
            SPARE_CACHE.with(|spare| *spare.borrow_mut() = Some(self));
        }
    }

    pub fn clear(&mut self) {
        self.index.clear();
        self.words.clear();
    }

    pub fn find(&self, id: ElementId) -> Option<(usize, usize)> {
        self.index.get(&id).copied()
    }

    pub fn bytes(&self, (word, len): (usize, usize)) -> &[u8] {
        let words = &self.words[word..word + len.div_ceil(8)];
        // SAFETY: the words hold at least `len` initialized bytes (written by `insert`); u8 has
        // no alignment requirement.
        unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) }
    }

    /// Keeps `bytes` as the value of `id` (the first value given for an id stays).
    pub fn insert(&mut self, id: ElementId, bytes: &[u8]) -> (usize, usize) {
        let entry = match self.index.entry(id) {
            Entry::Occupied(at) => return *at.get(),
            Entry::Vacant(entry) => entry,
        };
        let word = self.words.len();
        let n = bytes.len().div_ceil(8);
        self.words.reserve(n);
        // SAFETY: `reserve` allocated room for n more words after `word`. The last of them is
        // zeroed and the bytes copied over the start of them (bytes.len() <= 8 n), so all n
        // words are initialized before the length covers them. u8 has no alignment needs.
        unsafe {
            let dst = self.words.as_mut_ptr().add(word);
            if n > 0 {
                dst.add(n - 1).write(0);
            }
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), bytes.len());
            self.words.set_len(word + n);
        }
        *entry.insert((word, bytes.len()))
    }
}

/// A cheap hash for TIDs (the cache is probed for every element a selection compares): the block and offset
/// folded into one word and mixed (murmur3's finalizer).
#[derive(Default)]
pub struct TidHasher(u64);

impl Hasher for TidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.0 = (self.0 << 16) | u64::from(n);
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 << 32) | u64::from(n);
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}
