//! The graph an index build keeps in memory before it writes it to pages: in the backend's
//! own memory for a serial build, in the dynamic shared memory segment of a parallel build,
//! where every participant inserts into the same graph.
//!
//! The graph lives in one arena of 8-byte words ([`Region`]). Each element is one record in it,
//! and its id is the record's word offset: ids follow allocation order, which is how pgvector
//! breaks distance ties (by address, or by offset in a parallel build), and they mean the same
//! in every process, where the segment maps at different addresses. A record holds, in words:
//!
//! | words | what |
//! |---|---|
//! | 0 | record length in words, level, number of heap TIDs |
//! | 1 | value length in bytes |
//! | 2… | the value (varlena bytes, header included), then from its end on (the record's tail): |
//! | +0, +1 | the element's lock (parallel builds) |
//! | +2 | bit `l`: the cached flags of layer `l` can be trusted |
//! | +3, +4 | where the write-out put the element tuple and its neighbor tuple |
//! | +5 … +14 | up to [`HEAPTIDS`] heap TIDs (rows with equal values share an element) |
//! | +15… | `(level + 2) * m` neighbor slots as in the neighbor tuple (top layer first, layer 0 last with `2 * m`): a neighbor id and its distance to this element, unused slots [`NO_ELEMENT`]; then one byte per slot, the neighbor selection's cached flag |
//!
//! The value comes first, at the same place in every record, so that a search can ask the CPU
//! for the values of the elements it is about to compare knowing only their ids (a value after
//! the slots would first need the record's header, itself a cache miss).
//!
//! Distances and flags are kept beside the slots as pgvector's build keeps them, so a back-link
//! into a full list costs a few distances instead of a reload and a whole selection
//! ([`vector_hnsw::connect`]).
//!
//! In a parallel build pgvector's locks guard the shared parts: each element's lock its slots,
//! flags and heap TIDs (a search copies a list under it in share mode, a back-link changes it in
//! exclusive mode), the entry lock the entry point (share mode for an insert, exclusive for one
//! that may become the entry point, with the wait lock so those are not starved). A record's
//! level and value never change once written, and a record is only reached through a list or
//! the entry point after it is complete, so they are read without a lock.
//!
//! Memory is accounted the way pgvector accounts its own graph: in 1 MB generation blocks in a
//! serial build, allocation by allocation in a parallel one, so a build leaves memory after as
//! many tuples as pgvector's would. A record takes less than what pgvector allocates for the
//! same element, so the arena never fills before that account says the graph is full.

use crate::opclass::Compare;
use crate::storage::lwlock::{LockGuard, SharedLock, SHARED_LOCK_SIZE};
use crate::storage::page::ItemPointer;
use crate::stores::hnsw::build_memory::{pgvector_shared_bytes, MemoryAccount};
use crate::stores::hnsw::build_region::{LocalRegion, Region, NO_ENTRY};
use crate::stores::hnsw::format::{layer_m, neighbor_count, HEAPTIDS};
use std::sync::atomic::Ordering;
use vector_distance::prefetch::prefetch_lines;
use vector_hnsw::connect::{update_connection, ConnectScratch, Link};
use vector_hnsw::storage::{Candidate, Duplicate, EntryPoint, EntryUpdate, NewElement, Slot};
use vector_hnsw::{GraphStore, GraphWrite, LinkBack};

/// An unused neighbor slot.
pub const NO_ELEMENT: u32 = u32::MAX;

// Words of a record (see the module comment): the head, then the value.
const INFO: usize = 0;
const VALUE: usize = 1;
const VALUE_START: usize = 2;
// Words of the tail, after the value.
const LOCK: usize = 0;
const CLOSER_SET: usize = 2;
const PAGE_TID: usize = 3;
const NEIGHBOR_TID: usize = 4;
const HEAP_TIDS: usize = 5;
const SLOTS: usize = HEAP_TIDS + HEAPTIDS;
const _: () = assert!(SHARED_LOCK_SIZE <= 8 * (CLOSER_SET - LOCK));

const EMPTY_SLOT: u64 = NO_ELEMENT as u64;

/// Words of a record for an element of `level` with a value of `value_len` bytes; where its
/// tail starts.
fn record_words(level: u8, m: usize, value_len: usize) -> (usize, usize) {
    let slots = neighbor_count(level, m);
    let tail = VALUE_START + value_len.div_ceil(8);
    (tail + SLOTS + slots + slots.div_ceil(8), tail)
}

fn pack_tid(tid: ItemPointer) -> u64 {
    (u64::from(tid.block) << 16) | u64::from(tid.offset)
}

fn unpack_tid(word: u64) -> ItemPointer {
    ItemPointer::new((word >> 16) as u32, word as u16)
}

fn pack_slot(id: u32, distance: f32) -> u64 {
    (u64::from(distance.to_bits()) << 32) | u64::from(id)
}

/// How many elements ahead of the distance being computed `load` prefetches values: their
/// addresses need no load of their own, so the misses of several overlap.
const AHEAD: usize = 8;
/// Bytes of a value prefetched at most.
const MAX_PREFETCH: usize = 4096;

/// A build graph over a region.
pub struct BuildGraph<'s, R: Region, C: Compare> {
    compare: &'s C,
    m: usize,
    region: R,
    /// pgvector's serial accounting (serial builds).
    account: MemoryAccount,
    links: Vec<Link<u32>>,
    scratch: ConnectScratch<u32>,
}

impl<'s, R: Region, C: Compare> BuildGraph<'s, R, C> {
    pub fn new(compare: &'s C, m: usize, region: R) -> Self {
        BuildGraph {
            compare,
            m,
            region,
            account: MemoryAccount::default(),
            links: Vec::new(),
            scratch: ConnectScratch::default(),
        }
    }

    pub fn m(&self) -> usize {
        self.m
    }

    /// How the graph's values compare.
    pub fn compare(&self) -> &'s C {
        self.compare
    }

    pub fn region(&self) -> &R {
        &self.region
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.region.header().elements.load(Ordering::Acquire) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry point.
    pub fn entry(&self) -> Option<EntryPoint<u32>> {
        let packed = self.region.header().entry.load(Ordering::Acquire);
        (packed != NO_ENTRY).then_some(EntryPoint {
            id: packed as u32,
            level: (packed >> 32) as u8,
        })
    }

    /// Bytes of the arena in use (a quantized build measures its graph by this).
    pub fn arena_bytes(&self) -> usize {
        8 * self.region.used()
    }

    /// What pgvector's serial build would have allocated for the same graph.
    pub fn pgvector_memory(&self) -> usize {
        self.account.allocated()
    }

    fn word(&self, id: u32, at: usize) -> *mut u64 {
        // SAFETY: ids are offsets of complete records inside the region's used words, and `at`
        // stays inside the record (callers index by the record's own layout).
        unsafe { self.region.base().add(id as usize + at) }
    }

    fn read(&self, id: u32, at: usize) -> u64 {
        // SAFETY: see `word`; a shared word read here is either immutable once the record is
        // reachable or read under the element's lock.
        unsafe { self.word(id, at).read() }
    }

    fn write(&self, id: u32, at: usize, value: u64) {
        // SAFETY: see `word`; shared words are written before the record is reachable or under
        // the element's exclusive lock.
        unsafe { self.word(id, at).write(value) }
    }

    /// Where the record's tail (after its value) starts, in words.
    #[inline]
    fn tail(&self, id: u32) -> usize {
        VALUE_START + (self.read(id, VALUE) as u32 as usize).div_ceil(8)
    }

    fn element_lock(&self, id: u32) -> &SharedLock {
        // SAFETY: words LOCK.. of a record's tail hold its lock, initialized when the record
        // was written (parallel builds only call this).
        unsafe { SharedLock::at(self.word(id, self.tail(id) + LOCK).cast()) }
    }

    fn share(&self, id: u32) -> Option<LockGuard<'_>> {
        R::SHARED.then(|| self.element_lock(id).share())
    }

    fn exclusive(&self, id: u32) -> Option<LockGuard<'_>> {
        R::SHARED.then(|| self.element_lock(id).exclusive())
    }

    /// Record length in words.
    fn words_of(&self, id: u32) -> usize {
        self.read(id, INFO) as u32 as usize
    }

    pub fn level(&self, id: u32) -> u8 {
        (self.read(id, INFO) >> 32) as u8
    }

    fn heap_tid_count(&self, id: u32) -> usize {
        usize::from((self.read(id, INFO) >> 40) as u8)
    }

    /// The stored value of element `id` (varlena bytes).
    pub fn value_bytes(&self, id: u32) -> &[u8] {
        let len = self.read(id, VALUE) as u32 as usize;
        // SAFETY: the record's words from VALUE_START on hold `len` initialized value bytes,
        // which never change once the record is reachable; u8 has no alignment requirement.
        unsafe { std::slice::from_raw_parts(self.word(id, VALUE_START).cast::<u8>(), len) }
    }

    /// Asks the CPU for the head and the bytes `range` of the value of element `id`, knowing
    /// only its id (the value is at the same place in every record).
    fn prefetch_value(&self, id: u32, range: std::ops::Range<usize>) {
        // SAFETY: the record of `id` holds its head and its value, as long as the query's for
        // every type but sparsevec (then `range` is a guess); a prefetch reads nothing.
        let (head, value) = unsafe {
            (
                std::slice::from_raw_parts(self.word(id, INFO).cast::<u8>(), 8 * VALUE_START),
                std::slice::from_raw_parts(
                    self.word(id, VALUE_START).cast::<u8>().add(range.start),
                    range.len(),
                ),
            )
        };
        prefetch_lines(head);
        prefetch_lines(value);
    }

    /// The slots of `layer`, as word indexes in the record.
    fn layer_slots(&self, id: u32, layer: u8) -> Option<std::ops::Range<usize>> {
        let level = self.level(id);
        if layer > level {
            return None;
        }
        let start = self.tail(id) + SLOTS + usize::from(level - layer) * self.m;
        Some(start..start + layer_m(self.m, layer))
    }

    fn closer_byte(&self, id: u32, slot: usize) -> *mut u8 {
        let slots = neighbor_count(self.level(id), self.m);
        let first = self.tail(id) + SLOTS;
        // SAFETY: the flags follow the record's slots, one byte per slot (`slot` is a word
        // index among them).
        unsafe { self.word(id, first + slots).cast::<u8>().add(slot - first) }
    }

    /// Elements in the order they were added.
    pub fn elements(&self) -> Vec<u32> {
        let mut ids = Vec::new();
        crate::out_of_memory::reserve(&mut ids, self.len(), "the hnsw build's layout");
        let mut at = 0;
        while at < self.region.used() {
            ids.push(at as u32);
            at += self.words_of(at as u32);
        }
        ids
    }

    /// The element's heap TIDs, in the order they were added.
    pub fn heap_tids(&self, id: u32, out: &mut Vec<ItemPointer>) {
        out.clear();
        let at = self.tail(id) + HEAP_TIDS;
        out.extend((0..self.heap_tid_count(id)).map(|i| unpack_tid(self.read(id, at + i))));
    }

    /// The neighbor ids of `id` on `layer`, in stored order (for the write-out: the build's
    /// inserts are done, so no lock is taken).
    pub fn layer_neighbors(&self, id: u32, layer: u8, out: &mut Vec<u32>) {
        if let Some(range) = self.layer_slots(id, layer) {
            out.extend(
                range
                    .map(|w| self.read(id, w) as u32)
                    .take_while(|&n| n != NO_ELEMENT),
            );
        }
    }

    /// All neighbor slots of `id`, top layer first (as in the neighbor tuple).
    pub fn slots(&self, id: u32, out: &mut Vec<u32>) {
        out.clear();
        let slots = neighbor_count(self.level(id), self.m);
        let first = self.tail(id) + SLOTS;
        out.extend((first..first + slots).map(|w| self.read(id, w) as u32));
    }

    /// Records where the write-out puts the element's tuples.
    pub fn set_page_tids(&self, id: u32, element: ItemPointer, neighbors: ItemPointer) {
        let tail = self.tail(id);
        self.write(id, tail + PAGE_TID, pack_tid(element));
        self.write(id, tail + NEIGHBOR_TID, pack_tid(neighbors));
    }

    /// Where the write-out puts the element tuple and its neighbor tuple.
    pub fn page_tids(&self, id: u32) -> (ItemPointer, ItemPointer) {
        let tail = self.tail(id);
        (
            unpack_tid(self.read(id, tail + PAGE_TID)),
            unpack_tid(self.read(id, tail + NEIGHBOR_TID)),
        )
    }

    fn candidate(&self, id: u32, distance: f64) -> Candidate<u32, ()> {
        Candidate {
            id,
            distance,
            level: self.level(id),
            live: true,
            meta: (),
        }
    }
}

impl<C: Compare> BuildGraph<'_, LocalRegion, C> {
    /// Makes room for one more element (a value of `value_len` bytes at `level`), so that
    /// adding it allocates nothing. An error means the server has no memory left for the graph
    /// (as under an address-space limit): the build then goes on in the pages, where a failed
    /// allocation here would otherwise have aborted the backend.
    pub fn try_reserve_element(
        &mut self,
        value_len: usize,
        level: u8,
    ) -> Result<(), std::collections::TryReserveError> {
        self.region
            .try_reserve(record_words(level, self.m, value_len).0)
    }
}

impl<R: Region, C: Compare> GraphStore for BuildGraph<'_, R, C> {
    type Id = u32;
    type Meta = ();
    type Value = C::Value;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.entry()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        let Some(range) = self.layer_slots(element.id, layer) else {
            return;
        };
        let _lock = self.share(element.id);
        out.extend(
            range
                .map(|w| self.read(element.id, w) as u32)
                .take_while(|&n| n != NO_ELEMENT),
        );
    }

    fn load(&mut self, query: &C::Value, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        // Values of one column are as long as the query's stored form (a sparsevec's vary: then
        // this is a guess, and only a prefetch depends on it). Of a quantized build's records,
        // only the codes compared are fetched.
        let value_len = C::stored(query).map_or(0, <[u8]>::len);
        let range = self.compare.compared_range(value_len);
        let range = range.start..range.end.min(range.start + MAX_PREFETCH);

        // The batch is known up front: fetch the next elements' values into the cache while
        // the distance to the current one is computed.
        for &id in ids.iter().take(AHEAD) {
            self.prefetch_value(id, range.clone());
        }
        // Four at a time: the kernel overlaps them (same results as one by one).
        let mut distances = [0f64; 4];
        for (k, chunk) in ids.chunks(4).enumerate() {
            for &next in ids.iter().skip(k * 4 + AHEAD).take(chunk.len()) {
                self.prefetch_value(next, range.clone());
            }
            let mut values: [&[u8]; 4] = [&[]; 4];
            for (value, &id) in values.iter_mut().zip(chunk) {
                *value = self.value_bytes(id);
            }
            self.compare
                .distances(query, &values[..chunk.len()], &mut distances[..chunk.len()]);
            for (&id, &distance) in chunk.iter().zip(&distances) {
                out.push(self.candidate(id, distance));
            }
        }
    }

    fn lock(&mut self, lock: vector_hnsw::storage::GraphLock) {
        if !R::SHARED {
            return;
        }
        let header = self.region.header();
        // The algorithm holds the entry lock across calls, until `unlock`.
        match lock {
            vector_hnsw::storage::GraphLock::UpdateExclusive => {
                let waiting = header.entry_wait_lock.exclusive();
                header.entry_lock.hold(true);
                drop(waiting);
            }
            _ => {
                // Let an insert waiting for the exclusive lock go first.
                drop(header.entry_wait_lock.exclusive());
                header.entry_lock.hold(false);
            }
        }
    }

    fn unlock(&mut self, _lock: vector_hnsw::storage::GraphLock) {
        if R::SHARED {
            // SAFETY: inserts pair each `lock` with one `unlock`, so this process holds it.
            unsafe { self.region.header().entry_lock.release() };
        }
    }
}

impl<R: Region, C: Compare> LinkBack for BuildGraph<'_, R, C> {
    /// pgvector's in-memory `HnswUpdateConnection`: the list's stored distances and cached
    /// flags, no reload (only inserts add back-links to this store).
    fn link_back(
        &mut self,
        neighbor: &Candidate<u32, ()>,
        layer: u8,
        new: &Candidate<u32, ()>,
        lm: usize,
        _check_existing: bool,
    ) {
        let Some(range) = self.layer_slots(neighbor.id, layer) else {
            return;
        };
        let mut links = std::mem::take(&mut self.links);
        let mut scratch = std::mem::take(&mut self.scratch);
        let id = neighbor.id;
        let lock = self.exclusive(id);
        links.clear();
        for w in range.clone() {
            let slot = self.read(id, w);
            if slot as u32 == NO_ELEMENT {
                break;
            }
            links.push(Link {
                id: slot as u32,
                distance: f32::from_bits((slot >> 32) as u32),
                // SAFETY: the flag of this slot, under the element's lock.
                closer: unsafe { self.closer_byte(id, w).read() } != 0,
            });
        }
        let bit = 1u64 << layer;
        let closer_word = self.tail(id) + CLOSER_SET;
        let mut closer_set = self.read(id, closer_word) & bit != 0;
        let link = Link {
            id: new.id,
            distance: new.distance as f32,
            closer: false,
        };
        update_connection(
            &mut links,
            &mut closer_set,
            link,
            lm,
            &mut scratch,
            |a, b| {
                self.compare
                    .pair_distance(self.value_bytes(a), self.value_bytes(b)) as f32
            },
        );
        for (w, l) in range.zip(&links) {
            self.write(id, w, pack_slot(l.id, l.distance));
            // SAFETY: as above.
            unsafe { self.closer_byte(id, w).write(u8::from(l.closer)) };
        }
        if closer_set {
            self.write(id, closer_word, self.read(id, closer_word) | bit);
        }
        drop(lock);
        self.links = links;
        self.scratch = scratch;
    }
}

impl<R: Region, C: Compare> GraphWrite for BuildGraph<'_, R, C> {
    type HeapTid = ItemPointer;

    fn value(&mut self, element: &Candidate<u32, ()>) -> C::Value {
        self.compare.read_back(self.value_bytes(element.id))
    }

    type ValueRef = u32;

    fn value_ref(&mut self, element: &Candidate<u32, ()>) -> u32 {
        element.id
    }

    fn ref_distance(&self, a: u32, b: u32) -> f64 {
        self.compare
            .pair_distance(self.value_bytes(a), self.value_bytes(b))
    }

    fn add_element(
        &mut self,
        element: &NewElement<C::Value, ItemPointer>,
        neighbors: &[Vec<Candidate<u32, ()>>],
    ) -> Candidate<u32, ()> {
        let bytes = C::stored(&element.value).expect("indexed values are not NULL");
        let level = element.level;
        let (words, tail) = record_words(level, self.m, bytes.len());
        let Some(at) = self.region.allocate(words) else {
            // Serial builds reserve the record first, parallel ones keep pgvector's margin.
            pgrx::error!("hnsw allocator out of memory");
        };
        let id = at as u32;
        let info = words as u64 | (u64::from(level) << 32) | (1 << 40);
        self.write(id, INFO, info);
        self.write(id, VALUE, bytes.len() as u64);
        debug_assert_eq!(self.tail(id), tail);
        if R::SHARED {
            self.element_lock(id).init();
        }
        self.write(id, tail + CLOSER_SET, 0);
        self.write(id, tail + PAGE_TID, pack_tid(ItemPointer::INVALID));
        self.write(id, tail + NEIGHBOR_TID, pack_tid(ItemPointer::INVALID));
        self.write(id, tail + HEAP_TIDS, pack_tid(element.heap_tid));
        let slots = neighbor_count(level, self.m);
        for w in tail + SLOTS..tail + SLOTS + slots {
            self.write(id, w, EMPTY_SLOT);
            // SAFETY: the flag bytes of this new record, written before anyone can reach it.
            unsafe { self.closer_byte(id, w).write(0) };
        }
        for (layer, list) in neighbors.iter().enumerate().take(usize::from(level) + 1) {
            let range = self.layer_slots(id, layer as u8).expect("layer <= level");
            for (w, c) in range.zip(list) {
                self.write(id, w, pack_slot(c.id, c.distance as f32));
            }
        }
        // SAFETY: the record's value words, inside the record just allocated.
        let value = unsafe {
            std::slice::from_raw_parts_mut(self.word(id, VALUE_START).cast::<u8>(), bytes.len())
        };
        value.copy_from_slice(bytes);
        if R::SHARED {
            let header = self.region.header();
            header.accounted.fetch_add(
                pgvector_shared_bytes(level, self.m, bytes.len()) as u64,
                Ordering::Relaxed,
            );
        } else {
            self.account.add_element(level, self.m, bytes.len());
        }
        self.region.header().elements.fetch_add(1, Ordering::AcqRel);
        self.candidate(id, 0.0)
    }

    fn set_neighbor(&mut self, _: &Candidate<u32, ()>, _: u8, _: u32, _: Slot, _: bool) {
        unreachable!("a build graph gets back-links through link_back only");
    }

    fn write_neighbors(&mut self, _: &Candidate<u32, ()>, _: &[Vec<u32>]) {
        unreachable!("a build graph is never repaired");
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<u32>>, update: EntryUpdate) {
        let header = self.region.header();
        match entry {
            None => header.entry.store(NO_ENTRY, Ordering::Release),
            Some(point) => {
                let higher = self.entry().is_none_or(|cur| point.level > cur.level);
                if update == EntryUpdate::Always || higher {
                    let packed = u64::from(point.id) | (u64::from(point.level) << 32);
                    header.entry.store(packed, Ordering::Release);
                }
            }
        }
    }

    fn distances_are_exact(&self) -> bool {
        C::EXACT
    }

    fn try_add_duplicate(
        &mut self,
        value: &C::Value,
        heap_tid: ItemPointer,
        existing: &Candidate<u32, ()>,
    ) -> Duplicate {
        if !self
            .compare
            .same_value(value, self.value_bytes(existing.id))
        {
            return Duplicate::NotEqual;
        }
        let id = existing.id;
        let _lock = self.exclusive(id);
        let count = self.heap_tid_count(id);
        if count >= HEAPTIDS {
            return Duplicate::NoRoom;
        }
        self.write(id, self.tail(id) + HEAP_TIDS + count, pack_tid(heap_tid));
        let info = self.read(id, INFO) & !(0xff << 40);
        self.write(id, INFO, info | (((count + 1) as u64) << 40));
        Duplicate::Added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_never_larger_than_what_pgvector_accounts() {
        for m in [2, 4, 16, 48, 100] {
            for level in 0..8u8 {
                for value_len in [8 + 8, 8 + 4 * 3, 8 + 2 * 768, 8 + 4 * 2000, 8 + 8 * 1000] {
                    let ours = 8 * record_words(level, m, value_len).0;
                    assert!(
                        ours <= pgvector_shared_bytes(level, m, value_len),
                        "{m} {level} {value_len}"
                    );
                }
            }
        }
    }
}
