//! The graph an index build keeps in memory before it writes it to pages.
//!
//! Elements are numbered in insertion order (`u32` ids; pgvector breaks distance ties by element
//! address, which for its build follows allocation order). Values live in one 8-byte aligned
//! arena as the index stores them (varlena bytes, header included); distances come from the
//! index's support functions. Each element's neighbor slots are kept like its neighbor tuple:
//! `(level + 2) * m` ids, the top layer first, layer 0 last with `2 * m`, unused slots
//! [`NO_ELEMENT`]. Rows with equal values share an element (up to [`HEAPTIDS`] heap TIDs).
//!
//! Memory is accounted the way pgvector's build accounts it — the bytes its own element, neighbor
//! arrays and value copy would take in its generation context, in 1 MB blocks — so a build
//! leaves memory after about as many tuples as pgvector's would. What this store really uses is
//! less than that.

use crate::am::shared::typeinfo::{Support, Value};
use crate::storage::page::{maxalign, ItemPointer};
use crate::stores::hnsw::format::{layer_m, neighbor_count, HEAPTIDS};
use std::collections::HashMap;
use vector_hnsw::storage::{Candidate, Duplicate, EntryPoint, EntryUpdate, NewElement, Slot};
use vector_hnsw::{GraphStore, GraphWrite};

/// An unused neighbor slot.
pub const NO_ELEMENT: u32 = u32::MAX;

/// pgvector's generation context block size for the build graph.
const BLOCK_SIZE: usize = 1024 * 1024;
/// Header of one generation context block (`GenerationBlock`), before its chunks.
const BLOCK_HEADER: usize = 56;
/// The context header (`GenerationContext`) shares the first block, which is that much smaller
/// (and counted so): a graph of exactly `maintenance_work_mem` MB fits.
const CONTEXT_HEADER: usize = 192;
/// Header of one chunk (`MemoryChunk`).
const CHUNK_HEADER: usize = 8;
/// `sizeof(HnswElementData)`.
const PG_ELEMENT_SIZE: usize = 128;
/// `sizeof(HnswCandidate)`.
const PG_CANDIDATE_SIZE: usize = 16;
/// `offsetof(HnswNeighborArray, items)`.
const PG_NEIGHBOR_ARRAY_HEADER: usize = 8;

/// Bytes pgvector's build has allocated for its graph, in whole blocks.
#[derive(Clone, Debug)]
pub struct MemoryAccount {
    /// Bytes used in the current block.
    block_used: usize,
    /// Blocks allocated so far (the context starts with one).
    blocks: usize,
}

impl Default for MemoryAccount {
    fn default() -> Self {
        MemoryAccount {
            block_used: CONTEXT_HEADER + BLOCK_HEADER,
            blocks: 1,
        }
    }
}

impl MemoryAccount {
    /// `MemoryContextMemAllocated` of pgvector's graph context.
    pub fn allocated(&self) -> usize {
        self.blocks * BLOCK_SIZE - CONTEXT_HEADER
    }

    fn chunk(&mut self, size: usize) {
        let need = maxalign(size) + CHUNK_HEADER;
        if self.block_used + need > BLOCK_SIZE {
            // Large chunks get a block of their own in pgvector too; the block count is what
            // matters here.
            self.blocks += need.div_ceil(BLOCK_SIZE);
            self.block_used = BLOCK_HEADER + need.min(BLOCK_SIZE - BLOCK_HEADER);
        } else {
            self.block_used += need;
        }
    }

    /// Accounts one element of `level` with a value of `value_len` bytes, as pgvector allocates
    /// it: the element, its array of per-layer pointers, one neighbor array per layer, the value.
    pub fn add_element(&mut self, level: u8, m: usize, value_len: usize) {
        self.chunk(PG_ELEMENT_SIZE);
        self.chunk(8 * (usize::from(level) + 1));
        for layer in 0..=level {
            self.chunk(PG_NEIGHBOR_ARRAY_HEADER + PG_CANDIDATE_SIZE * layer_m(m, layer));
        }
        self.chunk(value_len);
    }
}

/// How many elements ahead of the distance being computed `load` prefetches values.
const AHEAD: usize = 2;

/// Asks the CPU to bring `bytes` into its caches (a hint: no effect on results).
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        // SAFETY: prefetching is a hint that never faults; the address is in bounds anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[derive(Clone, Debug)]
struct Node {
    /// Start of the value in `words`.
    value_word: usize,
    value_len: u32,
    /// Start of the neighbor slots in `slots`.
    slot_start: usize,
    level: u8,
    /// The first heap TID; further ones are in `MemoryGraph::more_tids`.
    heap_tid: ItemPointer,
}

/// A build graph in memory.
pub struct MemoryGraph<'s> {
    support: &'s Support,
    m: usize,
    words: Vec<u64>,
    nodes: Vec<Node>,
    slots: Vec<u32>,
    more_tids: HashMap<u32, Vec<ItemPointer>>,
    entry: Option<EntryPoint<u32>>,
    account: MemoryAccount,
}

impl<'s> MemoryGraph<'s> {
    pub fn new(support: &'s Support, m: usize) -> Self {
        MemoryGraph {
            support,
            m,
            words: Vec::new(),
            nodes: Vec::new(),
            slots: Vec::new(),
            more_tids: HashMap::new(),
            entry: None,
            account: MemoryAccount::default(),
        }
    }

    pub fn m(&self) -> usize {
        self.m
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The entry point.
    pub fn entry(&self) -> Option<EntryPoint<u32>> {
        self.entry
    }

    /// Makes room for one more element (a value of `value_len` bytes at `level`), so that
    /// adding it allocates nothing large. An error means the server has no memory left for the
    /// graph (as under an address-space limit): the build then goes on in the pages, where a
    /// failed allocation here would otherwise have aborted the backend.
    pub fn try_reserve_element(
        &mut self,
        value_len: usize,
        level: u8,
    ) -> Result<(), std::collections::TryReserveError> {
        self.words.try_reserve(value_len.div_ceil(8))?;
        self.slots.try_reserve(neighbor_count(level, self.m))?;
        self.nodes.try_reserve(1)?;
        Ok(())
    }

    /// What pgvector would have allocated for the same graph.
    pub fn pgvector_memory(&self) -> usize {
        self.account.allocated()
    }

    /// Bytes this store holds (arenas and tables, roughly).
    pub fn memory(&self) -> usize {
        self.words.capacity() * 8
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.slots.capacity() * 4
            + self.more_tids.len() * (HEAPTIDS * 6 + 48)
    }

    /// The stored value of element `id` (varlena bytes).
    pub fn value_bytes(&self, id: u32) -> &[u8] {
        let node = &self.nodes[id as usize];
        let words = &self.words[node.value_word..];
        // SAFETY: the words from value_word on hold at least value_len initialized bytes
        // (written by add_element); u8 has no alignment requirement.
        unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), node.value_len as usize) }
    }

    pub fn level(&self, id: u32) -> u8 {
        self.nodes[id as usize].level
    }

    /// The element's heap TIDs, in the order they were added.
    pub fn heap_tids(&self, id: u32) -> Vec<ItemPointer> {
        let mut tids = vec![self.nodes[id as usize].heap_tid];
        if let Some(more) = self.more_tids.get(&id) {
            tids.extend_from_slice(more);
        }
        tids
    }

    /// All neighbor slots of `id`, top layer first (as in the neighbor tuple).
    pub fn slots(&self, id: u32) -> &[u32] {
        let node = &self.nodes[id as usize];
        &self.slots[node.slot_start..node.slot_start + neighbor_count(node.level, self.m)]
    }

    fn layer_range(&self, id: u32, layer: u8) -> Option<std::ops::Range<usize>> {
        let node = &self.nodes[id as usize];
        if layer > node.level {
            return None;
        }
        let start = node.slot_start + usize::from(node.level - layer) * self.m;
        Some(start..start + layer_m(self.m, layer))
    }

    fn candidate(&self, id: u32, distance: f64) -> Candidate<u32, ()> {
        Candidate {
            id,
            distance,
            level: self.nodes[id as usize].level,
            live: true,
            meta: (),
        }
    }
}

impl GraphStore for MemoryGraph<'_> {
    type Id = u32;
    type Meta = ();
    type Value = Value;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.entry
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        if let Some(range) = self.layer_range(element.id, layer) {
            out.extend(
                self.slots[range]
                    .iter()
                    .copied()
                    .take_while(|&n| n != NO_ELEMENT),
            );
        }
    }

    fn load(&mut self, query: &Value, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        let query = self.support.prepare(query);
        // The batch is known up front: fetch the next element's value into the cache while
        // the distance to the current one is computed.
        for &id in ids.iter().take(AHEAD) {
            prefetch(self.value_bytes(id));
        }
        for (k, &id) in ids.iter().enumerate() {
            if let Some(&next) = ids.get(k + AHEAD) {
                prefetch(self.value_bytes(next));
            }
            let distance = query.distance(self.value_bytes(id));
            out.push(self.candidate(id, distance));
        }
    }
}

impl GraphWrite for MemoryGraph<'_> {
    type HeapTid = ItemPointer;

    fn value(&mut self, element: &Candidate<u32, ()>) -> Value {
        Value::from_bytes(self.value_bytes(element.id))
    }

    fn pair_distance(&mut self, a: &Candidate<u32, ()>, b: &Candidate<u32, ()>) -> f64 {
        self.support
            .pair_distance(self.value_bytes(a.id), self.value_bytes(b.id))
    }

    fn add_element(
        &mut self,
        element: &NewElement<Value, ItemPointer>,
        neighbors: &[Vec<u32>],
    ) -> Candidate<u32, ()> {
        let bytes = element.value.bytes().expect("indexed values are not NULL");
        let id = u32::try_from(self.nodes.len()).expect("fewer than 2^32 elements");
        let value_word = self.words.len();
        self.words.resize(value_word + bytes.len().div_ceil(8), 0);
        // SAFETY: the words just added hold at least bytes.len() bytes; u8 has no alignment
        // requirement and the slice is the only borrow of them.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(
                self.words[value_word..].as_mut_ptr().cast::<u8>(),
                bytes.len(),
            )
        };
        dst.copy_from_slice(bytes);
        let slot_start = self.slots.len();
        self.slots.resize(
            slot_start + neighbor_count(element.level, self.m),
            NO_ELEMENT,
        );
        self.nodes.push(Node {
            value_word,
            value_len: bytes.len() as u32,
            slot_start,
            level: element.level,
            heap_tid: element.heap_tid,
        });
        self.account.add_element(element.level, self.m, bytes.len());
        self.write_neighbors(&self.candidate(id, 0.0), neighbors);
        self.candidate(id, 0.0)
    }

    fn set_neighbor(
        &mut self,
        element: &Candidate<u32, ()>,
        layer: u8,
        new: u32,
        slot: Slot,
        check_existing: bool,
    ) {
        let Some(range) = self.layer_range(element.id, layer) else {
            return;
        };
        let list = &mut self.slots[range];
        if check_existing
            && list
                .iter()
                .take_while(|&&n| n != NO_ELEMENT)
                .any(|&n| n == new)
        {
            return;
        }
        let at = match slot {
            Slot::FirstFree => list.iter().position(|&n| n == NO_ELEMENT),
            Slot::At(i) => (i < list.len()).then_some(i),
        };
        if let Some(i) = at {
            list[i] = new;
        }
    }

    fn write_neighbors(&mut self, element: &Candidate<u32, ()>, neighbors: &[Vec<u32>]) {
        let level = self.nodes[element.id as usize].level;
        for layer in 0..=level {
            let range = self.layer_range(element.id, layer).expect("layer <= level");
            let list = &mut self.slots[range];
            list.fill(NO_ELEMENT);
            if let Some(ids) = neighbors.get(usize::from(layer)) {
                for (slot, &id) in list.iter_mut().zip(ids) {
                    *slot = id;
                }
            }
        }
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<u32>>, update: EntryUpdate) {
        match entry {
            None => self.entry = None,
            Some(point) => {
                let higher = self.entry.is_none_or(|cur| point.level > cur.level);
                if update == EntryUpdate::Always || higher {
                    self.entry = Some(point);
                }
            }
        }
    }

    fn try_add_duplicate(
        &mut self,
        value: &Value,
        heap_tid: ItemPointer,
        existing: &Candidate<u32, ()>,
    ) -> Duplicate {
        if value.bytes() != Some(self.value_bytes(existing.id)) {
            return Duplicate::NotEqual;
        }
        let more = self.more_tids.entry(existing.id).or_default();
        if more.len() + 1 >= HEAPTIDS {
            return Duplicate::NoRoom;
        }
        more.push(heap_tid);
        Duplicate::Added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements of level 0 with a vector(32) value that fit before a build of `mb` MB leaves
    /// memory.
    fn fitting(mb: usize) -> usize {
        let mut account = MemoryAccount::default();
        let mut n = 0;
        while account.allocated() < mb * BLOCK_SIZE {
            account.add_element(0, 16, 8 + 4 * 32);
            n += 1;
        }
        n
    }

    #[test]
    fn leaves_memory_where_pgvector_does() {
        // pgvector 0.8.6 on Postgres 18 with m = 16 and vector(32) values (about 1 in 16
        // elements above level 0): 1245, 2485, 3731 and 9951 tuples for 1, 2, 3 and 8 MB.
        for (mb, pgvector) in [(1, 1245), (2, 2485), (3, 3731), (8, 9951)] {
            let ours = fitting(mb);
            assert!(
                ours.abs_diff(pgvector) * 100 <= pgvector * 3,
                "{mb} MB: {ours}"
            );
        }
    }
}
