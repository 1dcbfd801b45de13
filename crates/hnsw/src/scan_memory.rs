//! The memory an iterative scan holds, counted the way pgvector 0.8.6 counts it.
//!
//! pgvector stops resuming an iterative scan once `MemoryContextMemAllocated` of its scan
//! context exceeds `work_mem * hnsw.scan_mem_multiplier`. That number is the total size of the
//! blocks a PostgreSQL AllocSet took from malloc, so it moves in steps that depend on the exact
//! order and sizes of every allocation and free. To stop at the same point, `ScanMemory`
//! replays the allocations pgvector makes in that context, in pgvector's order, against a model
//! of the allocator:
//!
//! * `AllocSet`: requests up to the chunk limit (8 kB) are rounded up to a power of two (at
//!   least 8) and carved from the active block, each behind a chunk header; a freed chunk goes
//!   to the free list of its size class and is reused by the next request of that class. When
//!   the active block has no room, its rest is cut into free chunks (largest class first) and a
//!   new block is taken: 8 kB, doubling up to 256 kB (the sizes pgvector's context is created
//!   with), larger if the chunk needs it. Larger requests get a block of their own, given back
//!   when freed. The first (keeper) block also holds the context header.
//! * `VisitedTable`: pgvector's visited set is a `simplehash` table of index TIDs hashed with
//!   `murmurhash64`, and its growth (a new array twice as large, then the old one freed) is an
//!   allocation too. Growth happens when the table reaches 90% fill, or earlier when an insert
//!   probes more than 25 buckets or would shift more than 150 entries, so the table is
//!   reproduced bucket by bucket (robin hood insertion, linear re-insertion on growth).
//! * `PgList`: pgvector's result and entry lists are PostgreSQL `List`s, whose cell arrays
//!   grow by allocation and are freed when the list is emptied.
//!
//! The allocations, as pgvector makes them in its scan context (x86-64 sizes):
//!
//! * first call: the normalized query (cosine operator classes; given by the caller), the entry
//!   point element (128 bytes), its search candidate (64) and a one-cell list (64);
//! * every layer search: two pairing heaps (24 each), the unvisited-id buffer (8 per neighbor
//!   slot of the layer), and at the end one list cell per result;
//! * upper layers (each with a fresh visited table sized for `2 m` ids): an element for each
//!   loaded neighbor closer than the current best, and a candidate if it reaches the layer;
//! * layer 0 of the first search: a visited table sized for `ef_search * 2 m` ids (kept for
//!   the whole scan) and the discarded heap (24); every loaded neighbor gets an element and a
//!   candidate, whether kept or discarded;
//! * a resumed search: a list of its entry points, the two heaps and the buffer;
//! * when the limits are reached: a one-cell list for each discarded element handed out;
//! * every element handed out is freed (element and candidate) once its heap TIDs are done,
//!   and a result list is freed when its last element is.
//!
//! Nothing else pgvector allocates there is ever freed. The scan drives this model through
//! `Metered`, a store wrapper that sees each neighbor list read (visited-set inserts) and
//! each batch of loaded elements, and through direct calls for the rest.

use crate::storage::{Candidate, GraphLock, GraphStore};
use std::hash::{Hash, Hasher};

/// `sizeof(HnswElementData)`.
const ELEMENT: usize = 128;
/// `sizeof(HnswSearchCandidate)`.
const SEARCH_CANDIDATE: usize = 64;
/// `sizeof(pairingheap)`.
const PAIRING_HEAP: usize = 24;
/// `sizeof(HnswUnvisited)`, per neighbor slot of a layer.
const UNVISITED: usize = 8;
/// `sizeof(tidhash_hash)`: the visited table's header.
const TABLE_HEADER: usize = 48;
/// `sizeof(TidHashEntry)`: one bucket.
const TABLE_ENTRY: usize = 8;
/// `offsetof(List, initial_elements)`.
const LIST_HEADER: usize = 24;
/// `sizeof(ListCell)`.
const LIST_CELL: usize = 8;

/// Block sizes of pgvector's scan context (`AllocSetContextCreate(.., 0, 8 kB, 256 kB)`).
const INIT_BLOCK: usize = 8 * 1024;
const MAX_BLOCK: usize = 256 * 1024;
/// Smallest chunk is `1 << MIN_BITS` bytes; there are `FREE_LISTS` size classes.
const MIN_BITS: u32 = 3;
const FREE_LISTS: usize = 11;

/// Layout facts of the server's AllocSet that the block arithmetic depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocSetLayout {
    /// Header before every chunk (`ALLOC_CHUNKHDRSZ`): 8 since PostgreSQL 16, 16 before (and
    /// in builds with memory context checking).
    pub chunk_header: usize,
    /// Header of every block (`ALLOC_BLOCKHDRSZ`).
    pub block_header: usize,
    /// Free space in the keeper block of a new 8 kB context: 8 kB less the context header and
    /// the block header.
    pub keeper_space: usize,
    /// Chunks in blocks of their own keep room for a sentinel byte (memory context checking
    /// builds since PostgreSQL 16).
    pub large_sentinel: bool,
}

impl AllocSetLayout {
    /// PostgreSQL 17 and later, 64-bit release build.
    pub const POSTGRES_17: AllocSetLayout = AllocSetLayout {
        chunk_header: 8,
        block_header: 40,
        keeper_space: INIT_BLOCK - 200 - 40,
        large_sentinel: false,
    };
    /// PostgreSQL 16, 64-bit release build.
    pub const POSTGRES_16: AllocSetLayout = AllocSetLayout {
        chunk_header: 8,
        block_header: 40,
        keeper_space: INIT_BLOCK - 224 - 40,
        large_sentinel: false,
    };
    /// PostgreSQL 15, 64-bit release build.
    pub const POSTGRES_15: AllocSetLayout = AllocSetLayout {
        chunk_header: 16,
        block_header: 40,
        keeper_space: INIT_BLOCK - 224 - 40,
        large_sentinel: false,
    };
}

impl Default for AllocSetLayout {
    fn default() -> Self {
        AllocSetLayout::POSTGRES_17
    }
}

/// One allocation or free made in the scan context outside the graph search (the query
/// normalization of cosine operator classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextEvent {
    /// `palloc(size)`.
    Alloc(usize),
    /// `pfree` of a chunk requested with this size.
    Free(usize),
}

/// What the memory model needs to know about the store and the query.
#[derive(Clone, Debug)]
pub struct ScanMemoryConfig<Id> {
    /// The server's allocator layout.
    pub layout: AllocSetLayout,
    /// The index's `m` (sizes the visited tables and the unvisited buffers).
    pub m: usize,
    /// The 64-bit word pgvector hashes for an element id: the index TID's six bytes in memory
    /// order, zero-padded (`ItemPointerData` in a `uint64` union).
    pub visited_key: fn(&Id) -> u64,
    /// Allocations pgvector makes for the query before it searches.
    pub query: Vec<ContextEvent>,
}

impl<Id: Hash> Default for ScanMemoryConfig<Id> {
    /// Defaults for stores without index TIDs: pgvector's default `m` and a hash of the id.
    fn default() -> Self {
        ScanMemoryConfig {
            layout: AllocSetLayout::default(),
            m: 16,
            visited_key: hashed_key::<Id>,
            query: Vec::new(),
        }
    }
}

fn hashed_key<Id: Hash>(id: &Id) -> u64 {
    let mut hasher = crate::id_set::IdHasher::default();
    id.hash(&mut hasher);
    // Keep clear of the empty-bucket marker.
    hasher.finish() >> 1
}

/// PostgreSQL's `MAXALIGN` on 64-bit platforms.
fn max_align(size: usize) -> usize {
    (size + 7) & !7
}

/// Size class of a small request: the power of two it is rounded up to is `8 << class`.
fn size_class(size: usize) -> usize {
    if size > 1 << MIN_BITS {
        (usize::BITS - (size - 1).leading_zeros() - MIN_BITS) as usize
    } else {
        0
    }
}

fn class_size(class: usize) -> usize {
    (1 << MIN_BITS) << class
}

/// Model of one AllocSet context: only what decides the total of its blocks.
#[derive(Clone, Debug)]
pub(crate) struct AllocSet {
    layout: AllocSetLayout,
    /// `MemoryContextMemAllocated`: every block, the keeper included.
    allocated: usize,
    /// Space left in the active block.
    active_free: usize,
    next_block: usize,
    chunk_limit: usize,
    /// Number of chunks on each free list.
    free_chunks: [usize; FREE_LISTS],
}

impl AllocSet {
    /// A freshly created (or reset) context.
    pub(crate) fn new(layout: AllocSetLayout) -> Self {
        let mut chunk_limit = class_size(FREE_LISTS - 1);
        while chunk_limit + layout.chunk_header > (MAX_BLOCK - layout.block_header) / 4 {
            chunk_limit >>= 1;
        }
        AllocSet {
            layout,
            allocated: INIT_BLOCK,
            active_free: layout.keeper_space,
            next_block: INIT_BLOCK,
            chunk_limit,
            free_chunks: [0; FREE_LISTS],
        }
    }

    pub(crate) fn allocated(&self) -> usize {
        self.allocated
    }

    /// Size of the dedicated block of a request above the chunk limit.
    fn large_block(&self, size: usize) -> usize {
        let sentinel = usize::from(self.layout.large_sentinel);
        max_align(size + sentinel) + self.layout.block_header + self.layout.chunk_header
    }

    pub(crate) fn alloc(&mut self, size: usize) {
        if size > self.chunk_limit {
            self.allocated += self.large_block(size);
            return;
        }
        let class = size_class(size);
        if self.free_chunks[class] > 0 {
            self.free_chunks[class] -= 1;
            return;
        }
        let needed = class_size(class) + self.layout.chunk_header;
        if self.active_free < needed {
            self.new_block(needed);
        }
        self.active_free -= needed;
    }

    /// Retires the active block (its rest becomes free chunks) and starts a new one with room
    /// for `needed` bytes.
    fn new_block(&mut self, needed: usize) {
        let header = self.layout.chunk_header;
        while self.active_free >= class_size(0) + header {
            let room = self.active_free - header;
            let mut class = size_class(room);
            if class_size(class) != room {
                class -= 1;
            }
            self.free_chunks[class] += 1;
            self.active_free -= class_size(class) + header;
        }
        let mut block = self.next_block;
        self.next_block = (self.next_block * 2).min(MAX_BLOCK);
        while block < needed + self.layout.block_header {
            block <<= 1;
        }
        self.allocated += block;
        self.active_free = block - self.layout.block_header;
    }

    /// `pfree` of a chunk that was requested with `size` bytes.
    pub(crate) fn free(&mut self, size: usize) {
        if size > self.chunk_limit {
            self.allocated -= self.large_block(size);
        } else {
            self.free_chunks[size_class(size)] += 1;
        }
    }

    /// `repalloc` from `old` to `new` requested bytes.
    pub(crate) fn realloc(&mut self, old: usize, new: usize) {
        if old > self.chunk_limit {
            // The dedicated block is resized in place, whatever the new size.
            self.allocated -= self.large_block(old);
            self.allocated += self.large_block(new);
        } else if class_size(size_class(old)) < new {
            self.alloc(new);
            self.free(old);
        }
    }
}

/// `murmurhash64`, truncated to the 32 bits simplehash uses.
fn murmur_hash(key: u64) -> u32 {
    let mut h = key;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}

const EMPTY: u64 = u64::MAX;
/// simplehash's growth rules.
const FILL_FACTOR: f64 = 0.9;
const GROW_MAX_DIB: u32 = 25;
const GROW_MAX_MOVE: u32 = 150;
const GROW_MIN_FILL_FACTOR: f64 = 0.1;

/// One bucket of [`VisitedTable`]: a key and its hash (simplehash recomputes the hash; it is
/// kept here, next to the key, for speed), in 12 bytes.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    key: [u32; 2],
    hash: u32,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        key: [u32::MAX; 2],
        hash: 0,
    };

    fn new(key: u64, hash: u32) -> Self {
        Bucket {
            key: [key as u32, (key >> 32) as u32],
            hash,
        }
    }

    fn key(self) -> u64 {
        u64::from(self.key[0]) | u64::from(self.key[1]) << 32
    }

    fn is_empty(self) -> bool {
        self.key() == EMPTY
    }
}

/// pgvector's visited set (`tidhash`), bucket for bucket.
#[derive(Clone, Debug)]
pub(crate) struct VisitedTable {
    buckets: Vec<Bucket>,
    members: u32,
    grow_threshold: u32,
    mask: u32,
}

impl VisitedTable {
    /// `tidhash_create(ctx, nelements)`: the header, then the bucket array.
    pub(crate) fn create(nelements: usize, set: &mut AllocSet) -> Self {
        set.alloc(TABLE_HEADER);
        let size = table_size((nelements as f64 / FILL_FACTOR) as u64);
        set.alloc(TABLE_ENTRY * size);
        let mut table = VisitedTable {
            buckets: vec![Bucket::EMPTY; size],
            members: 0,
            grow_threshold: 0,
            mask: 0,
        };
        table.set_size(size);
        table
    }

    fn set_size(&mut self, size: usize) {
        self.mask = (size - 1) as u32;
        self.grow_threshold = (size as f64 * FILL_FACTOR) as u32;
    }

    fn size(&self) -> usize {
        self.buckets.len()
    }

    fn bucket(&self, hash: u32) -> u32 {
        hash & self.mask
    }

    fn distance(&self, optimal: u32, bucket: u32) -> u32 {
        bucket.wrapping_sub(optimal) & self.mask
    }

    fn sparse(&self) -> bool {
        (self.members as f64 / self.size() as f64) < GROW_MIN_FILL_FACTOR
    }

    /// `tidhash_insert`: true if `key` was already there.
    pub(crate) fn insert(&mut self, key: u64, set: &mut AllocSet) -> bool {
        let hash = murmur_hash(key);
        'restart: loop {
            if self.members >= self.grow_threshold {
                self.grow(set);
            }
            let mut current = self.bucket(hash);
            let mut insert_distance = 0;
            loop {
                let occupant = self.buckets[current as usize];
                if occupant.is_empty() {
                    self.buckets[current as usize] = Bucket::new(key, hash);
                    self.members += 1;
                    return false;
                }
                if occupant.key() == key {
                    return true;
                }
                let occupant_distance = self.distance(self.bucket(occupant.hash), current);
                if insert_distance > occupant_distance {
                    // Robin hood: take this bucket, shift the run up to the next empty one.
                    let mut empty = current;
                    let mut moves = 0;
                    loop {
                        empty = (empty + 1) & self.mask;
                        if self.buckets[empty as usize].is_empty() {
                            break;
                        }
                        moves += 1;
                        if moves > GROW_MAX_MOVE && !self.sparse() {
                            self.grow_threshold = 0;
                            continue 'restart;
                        }
                    }
                    while empty != current {
                        let previous = empty.wrapping_sub(1) & self.mask;
                        self.buckets[empty as usize] = self.buckets[previous as usize];
                        empty = previous;
                    }
                    self.buckets[current as usize] = Bucket::new(key, hash);
                    self.members += 1;
                    return false;
                }
                current = (current + 1) & self.mask;
                insert_distance += 1;
                if insert_distance > GROW_MAX_DIB && !self.sparse() {
                    self.grow_threshold = 0;
                    continue 'restart;
                }
            }
        }
    }

    /// `SH_GROW` to twice the size: the new array is allocated, every entry re-inserted
    /// linearly starting from a bucket that does not wrap around, then the old array freed.
    fn grow(&mut self, set: &mut AllocSet) {
        let old_size = self.size();
        let new_size = table_size(old_size as u64 * 2);
        set.alloc(TABLE_ENTRY * new_size);
        let old = std::mem::replace(&mut self.buckets, vec![Bucket::EMPTY; new_size]);
        self.set_size(new_size);
        let start = (0..old_size)
            .find(|&i| old[i].is_empty() || self.bucket(old[i].hash) as usize == i)
            .unwrap_or(0);
        for offset in 0..old_size {
            let entry = old[(start + offset) % old_size];
            if entry.is_empty() {
                continue;
            }
            let mut bucket = self.bucket(entry.hash);
            while !self.buckets[bucket as usize].is_empty() {
                bucket = (bucket + 1) & self.mask;
            }
            self.buckets[bucket as usize] = entry;
        }
        set.free(TABLE_ENTRY * old_size);
    }
}

/// simplehash's table size for a requested number of buckets.
fn table_size(requested: u64) -> usize {
    requested.max(2).next_power_of_two() as usize
}

/// A PostgreSQL `List` of pointers, as far as its allocations go.
#[derive(Clone, Debug, Default)]
pub(crate) struct PgList {
    len: usize,
    capacity: usize,
    /// Bytes of the header allocation (with its first cells).
    header: usize,
    /// Bytes of the separate cell array, once the list outgrew the cells after its header.
    cells: usize,
}

impl PgList {
    /// `lappend`.
    pub(crate) fn push(&mut self, set: &mut AllocSet) {
        if self.len == 0 {
            // new_list(1): the header plus cells, rounded to a power of two of cells.
            let header_cells = LIST_HEADER.div_ceil(LIST_CELL);
            let capacity = (1 + header_cells).max(8).next_power_of_two() - header_cells;
            let header = LIST_HEADER + capacity * LIST_CELL;
            set.alloc(header);
            *self = PgList {
                len: 1,
                capacity,
                header,
                cells: 0,
            };
            return;
        }
        if self.len >= self.capacity {
            let capacity = (self.len + 1).max(16).next_power_of_two();
            let bytes = capacity * LIST_CELL;
            if self.cells == 0 {
                set.alloc(bytes);
            } else {
                set.realloc(self.cells, bytes);
            }
            self.cells = bytes;
            self.capacity = capacity;
        }
        self.len += 1;
    }

    /// `list_delete_last`: the list is freed with its last cell.
    pub(crate) fn pop(&mut self, set: &mut AllocSet) {
        if self.len > 1 {
            self.len -= 1;
            return;
        }
        if self.len == 1 {
            if self.cells != 0 {
                set.free(self.cells);
            }
            set.free(self.header);
        }
        *self = PgList::default();
    }
}

/// The upper-layer search in progress.
#[derive(Debug)]
struct UpperLayer {
    layer: u8,
    /// Distance of W's only element: neighbors closer than it are allocated.
    best: f64,
    visited: VisitedTable,
}

/// pgvector's scan context during one scan (from a rescan to the next).
#[derive(Debug)]
pub(crate) struct ScanMemory {
    set: AllocSet,
    m: usize,
    upper: Option<UpperLayer>,
    /// The layer-0 visited table, kept across resumed searches.
    visited: Option<VisitedTable>,
    /// Whether a layer-0 search is running (every loaded element is allocated).
    ground: bool,
    /// The current result list (`so->w`).
    results: PgList,
}

impl ScanMemory {
    /// A reset context, then the query's allocations.
    pub(crate) fn new(layout: AllocSetLayout, m: usize, query: &[ContextEvent]) -> Self {
        let mut set = AllocSet::new(layout);
        for event in query {
            match *event {
                ContextEvent::Alloc(size) => set.alloc(size),
                ContextEvent::Free(size) => set.free(size),
            }
        }
        ScanMemory {
            set,
            m,
            upper: None,
            visited: None,
            ground: false,
            results: PgList::default(),
        }
    }

    /// `MemoryContextMemAllocated` of the scan context.
    pub(crate) fn allocated(&self) -> usize {
        self.set.allocated()
    }

    /// The entry point read from the metapage.
    pub(crate) fn entry_point(&mut self) {
        self.set.alloc(ELEMENT);
    }

    /// The entry point's candidate and the one-cell list holding it.
    pub(crate) fn entry_loaded(&mut self) {
        self.set.alloc(SEARCH_CANDIDATE);
        PgList::default().push(&mut self.set);
    }

    /// The two heaps and the unvisited buffer every layer search starts with.
    fn layer_search(&mut self, slots: usize) {
        self.set.alloc(PAIRING_HEAP);
        self.set.alloc(PAIRING_HEAP);
        self.set.alloc(UNVISITED * slots);
    }

    /// A neighbor list was read on `layer` for `element` (whose key and distance are given):
    /// a new upper layer starts with its first read; every neighbor goes into the visited set.
    fn neighbors(&mut self, layer: u8, element: (u64, f64), keys: impl Iterator<Item = u64>) {
        if layer > 0 && self.upper.as_ref().is_none_or(|u| u.layer != layer) {
            self.end_upper();
            self.layer_search(self.m);
            let mut visited = VisitedTable::create(2 * self.m, &mut self.set);
            visited.insert(element.0, &mut self.set);
            self.upper = Some(UpperLayer {
                layer,
                best: element.1,
                visited,
            });
        }
        let (set, table) = match self.upper.as_mut() {
            Some(upper) => (&mut self.set, &mut upper.visited),
            None => match self.visited.as_mut() {
                Some(visited) => (&mut self.set, visited),
                None => return,
            },
        };
        for key in keys {
            table.insert(key, set);
        }
    }

    /// An element was loaded with its distance to the query.
    fn loaded(&mut self, distance: f64, level: u8) {
        if let Some(upper) = self.upper.as_mut() {
            if distance < upper.best {
                self.set.alloc(ELEMENT);
                if level >= upper.layer {
                    self.set.alloc(SEARCH_CANDIDATE);
                    upper.best = distance;
                }
            }
        } else if self.ground {
            self.set.alloc(ELEMENT);
            self.set.alloc(SEARCH_CANDIDATE);
        }
    }

    /// The greedy descent is over: the last upper layer's one-element result list.
    pub(crate) fn end_upper(&mut self) {
        if self.upper.take().is_some() {
            PgList::default().push(&mut self.set);
        }
    }

    /// The first layer-0 search starts from `entries` (visited keys) with `ef`.
    pub(crate) fn start_first_ground(&mut self, ef: usize, entries: impl Iterator<Item = u64>) {
        self.end_upper();
        self.layer_search(2 * self.m);
        let mut visited = VisitedTable::create(ef * 2 * self.m, &mut self.set);
        // The discarded heap.
        self.set.alloc(PAIRING_HEAP);
        for key in entries {
            visited.insert(key, &mut self.set);
        }
        self.visited = Some(visited);
        self.ground = true;
    }

    /// A resumed layer-0 search starts from `entries` discarded elements.
    pub(crate) fn start_resume(&mut self, entries: usize) {
        let mut list = PgList::default();
        for _ in 0..entries {
            list.push(&mut self.set);
        }
        self.layer_search(2 * self.m);
        self.ground = true;
    }

    /// A layer-0 search ended with `count` results, which become the result list.
    pub(crate) fn results(&mut self, count: usize) {
        self.ground = false;
        for _ in 0..count {
            self.results.push(&mut self.set);
        }
    }

    /// One discarded element is handed out in a one-cell list (limits reached).
    pub(crate) fn hand_out_discarded(&mut self) {
        self.results.push(&mut self.set);
    }

    /// The last element of the result list is done: the list loses it (and is freed when
    /// empty); with iterative scans on, the element and its candidate are freed too.
    pub(crate) fn release_last(&mut self, free_element: bool) {
        self.results.pop(&mut self.set);
        if free_element {
            self.set.free(ELEMENT);
            self.set.free(SEARCH_CANDIDATE);
        }
    }
}

/// A store seen through the memory model: forwards every call and reports neighbor reads and
/// loaded batches to the model.
pub(crate) struct Metered<'a, S: GraphStore> {
    pub(crate) store: &'a mut S,
    pub(crate) memory: &'a mut ScanMemory,
    /// The id's visited-set key (see [`ScanMemoryConfig::visited_key`]).
    pub(crate) key: fn(&S::Id) -> u64,
}

impl<S: GraphStore> GraphStore for Metered<'_, S> {
    type Id = S::Id;
    type Meta = S::Meta;
    type Value = S::Value;

    fn entry_point(&mut self) -> Option<crate::storage::EntryPoint<S::Id>> {
        self.store.entry_point()
    }

    fn neighbors(&mut self, element: &Candidate<S::Id, S::Meta>, layer: u8, out: &mut Vec<S::Id>) {
        let start = out.len();
        self.store.neighbors(element, layer, out);
        let key = self.key;
        let entry = (key(&element.id), element.distance);
        self.memory
            .neighbors(layer, entry, out[start..].iter().map(key));
    }

    fn load(&mut self, query: &S::Value, ids: &[S::Id], out: &mut Vec<Candidate<S::Id, S::Meta>>) {
        let start = out.len();
        self.store.load(query, ids, out);
        for candidate in &out[start..] {
            self.memory.loaded(candidate.distance, candidate.level);
        }
    }

    fn lookahead_width(&self) -> usize {
        self.store.lookahead_width()
    }

    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Candidate<S::Id, S::Meta>],
        visited: &dyn Fn(&S::Id) -> bool,
    ) {
        self.store.lookahead(layer, upcoming, visited);
    }

    fn lock(&mut self, lock: GraphLock) {
        self.store.lock(lock);
    }

    fn unlock(&mut self, lock: GraphLock) {
        self.store.unlock(lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG18: AllocSetLayout = AllocSetLayout::POSTGRES_17;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(1), 0);
        assert_eq!(size_class(8), 0);
        assert_eq!(size_class(9), 1);
        assert_eq!(size_class(64), 3);
        assert_eq!(size_class(65), 4);
        assert_eq!(size_class(128), 4);
        assert_eq!(size_class(8192), 10);
    }

    #[test]
    fn chunks_fill_the_keeper_then_blocks_double() {
        let mut set = AllocSet::new(PG18);
        assert_eq!(set.allocated(), 8192);
        // 7952 bytes hold 58 chunks of 128 + 8.
        for _ in 0..58 {
            set.alloc(128);
        }
        assert_eq!(set.allocated(), 8192);
        set.alloc(128);
        assert_eq!(set.allocated(), 8192 + 8192);
        // The 64 bytes left in the keeper became a 32- and a 16-byte free chunk.
        assert_eq!(set.free_chunks[2], 1);
        assert_eq!(set.free_chunks[1], 1);
        set.alloc(20);
        set.alloc(10);
        assert_eq!(set.free_chunks, [0; FREE_LISTS]);
        // Next blocks: 16 kB, 32 kB, ... up to 256 kB.
        let mut blocks = vec![];
        let mut last = set.allocated();
        for _ in 0..20_000 {
            set.alloc(128);
            if set.allocated() != last {
                blocks.push(set.allocated() - last);
                last = set.allocated();
            }
        }
        assert_eq!(blocks[..6], [16384, 32768, 65536, 131072, 262144, 262144]);
    }

    #[test]
    fn freed_chunks_are_reused_and_large_chunks_given_back() {
        let mut set = AllocSet::new(PG18);
        set.alloc(100);
        set.free(100);
        set.alloc(128);
        assert_eq!(set.free_chunks, [0; FREE_LISTS]);
        set.alloc(8193);
        assert_eq!(set.allocated(), 8192 + 8200 + 40 + 8);
        set.realloc(8193, 20_000);
        assert_eq!(set.allocated(), 8192 + 20_000 + 40 + 8);
        set.free(20_000);
        assert_eq!(set.allocated(), 8192);
        // A small chunk grown past its class moves to a new chunk.
        set.alloc(128);
        set.realloc(128, 128);
        assert_eq!(set.free_chunks[4], 0);
        set.realloc(128, 256);
        assert_eq!(set.free_chunks[4], 1);
    }

    #[test]
    fn lists_grow_like_postgres() {
        let mut set = AllocSet::new(PG18);
        let mut list = PgList::default();
        list.push(&mut set);
        assert_eq!((list.capacity, list.cells), (5, 0));
        for _ in 0..5 {
            list.push(&mut set);
        }
        assert_eq!((list.len, list.capacity, list.cells), (6, 16, 128));
        for _ in 0..11 {
            list.push(&mut set);
        }
        assert_eq!((list.len, list.capacity, list.cells), (17, 32, 256));
        // Freed: header (64), the 128-byte array replaced by repalloc, then the 256 array.
        for _ in 0..17 {
            list.pop(&mut set);
        }
        assert_eq!(set.free_chunks[3], 1);
        assert_eq!(set.free_chunks[4], 1);
        assert_eq!(set.free_chunks[5], 1);
        assert_eq!(list.len, 0);
    }

    #[test]
    fn visited_table_finds_and_grows() {
        let mut set = AllocSet::new(PG18);
        // 2 * m = 32 ids: 35 buckets requested, 64 allocated, growth at 57 members.
        let mut table = VisitedTable::create(32, &mut set);
        assert_eq!(table.size(), 64);
        assert_eq!(table.grow_threshold, 57);
        for key in 0..57u64 {
            assert!(!table.insert(key << 32 | 7, &mut set));
        }
        assert_eq!(table.size(), 64);
        assert!(table.insert(3 << 32 | 7, &mut set));
        // The 58th insert (even of a present key) grows the table first.
        assert!(table.insert(5 << 32 | 7, &mut set));
        assert_eq!(table.size(), 128);
        for key in 0..2000u64 {
            table.insert(key << 32 | 7, &mut set);
        }
        assert_eq!(table.members, 2000);
        for key in 0..2000u64 {
            assert!(table.insert(key << 32 | 7, &mut set));
        }
        for (i, bucket) in table.buckets.iter().enumerate() {
            if !bucket.is_empty() {
                // Every entry sits within its probe run.
                assert_eq!(bucket.hash, murmur_hash(bucket.key()));
                let optimal = table.bucket(bucket.hash);
                let run = table.distance(optimal, i as u32);
                for step in 0..run {
                    let b = (optimal + step) & table.mask;
                    assert!(!table.buckets[b as usize].is_empty());
                }
            }
        }
    }

    #[test]
    fn murmur_matches_postgres() {
        // murmurhash64 finalizer values (fmix64) truncated to 32 bits.
        assert_eq!(murmur_hash(0), 0);
        assert_eq!(murmur_hash(1), 0x34c2_cb2c);
        assert_eq!(murmur_hash(7 << 32 | 1), 0x5f6c_e34e);
    }
}
