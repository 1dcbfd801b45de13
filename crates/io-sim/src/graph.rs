//! A simulated hnsw index on pages: the in-memory graph of `vector_hnsw` laid out on 8 kB pages
//! as the extension's build lays it out, walked by `vector_hnsw`'s search through the policy
//! ([`PagedStore`], our walk) or one read at a time ([`SerialStore`], pgvector's walk).

use super::disk::{SimDisk, SimPage};
use vector_hnsw::level::SplitMix64;
use vector_hnsw::memory::{l2_squared, InMemoryGraph};
use vector_hnsw::placement::{shared_lists_first, PagePacker};
use vector_hnsw::{Candidate, EntryPoint, GraphParams, GraphStore};
use vector_io::layout::BatchLayout;
use vector_io::lookahead::Lookahead;
use vector_io::pins::pin_limit;
use vector_io::reader::BlockReader;
use vector_io::settings::Settings;
use vector_io::source::{BlockNumber, BlockSource};

/// Page size.
const BLCKSZ: usize = 8192;
/// Page header (24 bytes) and the index's special space (8) take this much of each page.
const PAGE_OVERHEAD: usize = 24 + 8;
/// A line pointer.
const LINE_POINTER: usize = 4;
/// Header of an element tuple before its value.
const ELEMENT_HEADER: usize = 72;
/// Header of a neighbor tuple before its item pointers.
const NEIGHBOR_HEADER: usize = 4;
/// An item pointer.
const ITEM_POINTER: usize = 6;

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Bytes of the element tuple of a `vector` of `dims` dimensions (varlena header, dims,
/// unused, floats).
pub fn element_bytes(dims: usize) -> usize {
    align8(ELEMENT_HEADER + 8 + 4 * dims)
}

/// Bytes of the neighbor tuple of an element whose top layer is `level`.
pub fn neighbor_bytes(level: u8, m: usize) -> usize {
    align8(NEIGHBOR_HEADER + ITEM_POINTER * (usize::from(level) + 2) * m)
}

/// Where each element's tuples lie: the build writes the elements in the order of its placement
/// (pgvector's: from the last inserted to the first; or graph neighbors together), each
/// followed by its neighbor tuple on the same page when both fit on one (a new page is started
/// otherwise).
pub struct PageMap {
    element_block: Vec<BlockNumber>,
    neighbor_block: Vec<BlockNumber>,
    /// Blocks of the index, the metapage included.
    pub blocks: BlockNumber,
}

/// Lays out elements one after the other, as the extension's build does.
struct Packer<'g> {
    graph: &'g InMemoryGraph,
    element: usize,
    /// Free bytes of the current page, line pointers counted as they are added.
    free: usize,
    block: BlockNumber,
    map: PageMap,
}

const ROOM: usize = BLCKSZ - PAGE_OVERHEAD;

fn usable(free: usize) -> usize {
    free.saturating_sub(LINE_POINTER)
}

impl Packer<'_> {
    fn neighbors(&self, id: u32) -> usize {
        neighbor_bytes(self.graph.level(id), self.graph.m())
    }
}

impl PagePacker for Packer<'_> {
    fn fits(&self, id: u32) -> bool {
        let both = self.element + self.neighbors(id) + LINE_POINTER;
        if both <= ROOM - LINE_POINTER {
            usable(self.free) >= both
        } else {
            usable(self.free) >= self.element
        }
    }

    fn place(&mut self, id: u32) {
        let neighbors = self.neighbors(id);
        if !self.fits(id) {
            self.block += 1;
            self.free = ROOM;
        }
        self.free -= self.element + LINE_POINTER;
        self.map.element_block[id as usize] = self.block;
        if usable(self.free) < neighbors {
            self.block += 1;
            self.free = ROOM;
        }
        self.free -= neighbors + LINE_POINTER;
        self.map.neighbor_block[id as usize] = self.block;
    }
}

impl PageMap {
    /// The layout of `graph`'s elements, `vector`s of `dims` dimensions, in pgvector's order.
    pub fn new(graph: &InMemoryGraph, dims: usize) -> Self {
        let mut packer = PageMap::packer(graph, dims);
        for id in (0..graph.slots() as u32).rev() {
            packer.place(id);
        }
        packer.finish()
    }

    /// The same with graph neighbors placed together ([`vector_hnsw::placement`]).
    pub fn placed(graph: &InMemoryGraph, dims: usize) -> Self {
        let mut packer = PageMap::packer(graph, dims);
        let neighbors = |id: u32, out: &mut Vec<u32>| {
            out.extend_from_slice(graph.neighbor_ids(id, 0));
        };
        shared_lists_first(graph.slots() as u32, neighbors, &mut packer)
            .expect("memory for the placement");
        packer.finish()
    }

    /// The layout that `place` makes, handing every element to the packer once (to compare
    /// placements).
    pub fn placed_by(
        graph: &InMemoryGraph,
        dims: usize,
        place: impl FnOnce(&mut dyn PagePacker),
    ) -> Self {
        let mut packer = PageMap::packer(graph, dims);
        place(&mut packer);
        packer.finish()
    }

    fn packer(graph: &InMemoryGraph, dims: usize) -> Packer<'_> {
        let n = graph.slots();
        Packer {
            graph,
            element: element_bytes(dims),
            free: ROOM,
            block: 1,
            map: PageMap {
                element_block: vec![0; n],
                neighbor_block: vec![0; n],
                blocks: 0,
            },
        }
    }
}

impl Packer<'_> {
    fn finish(self) -> PageMap {
        PageMap {
            blocks: self.block + 1,
            ..self.map
        }
    }
}

impl PageMap {
    /// The block of an element tuple.
    pub fn block(&self, id: u32) -> BlockNumber {
        self.element_block[id as usize]
    }

    /// The block of an element's neighbor tuple.
    pub fn neighbor_block(&self, id: u32) -> BlockNumber {
        self.neighbor_block[id as usize]
    }

    /// Mean elements per page.
    pub fn elements_per_page(&self) -> f64 {
        self.element_block.len() as f64 / f64::from(self.blocks - 1).max(1.0)
    }
}

/// CPU time of a walk's own work, µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuModel {
    /// Decoding an element and its distance to the query.
    pub per_element_us: f64,
    /// Expanding a candidate (its neighbor list, the visited set).
    pub per_hop_us: f64,
}

/// Uniform random vectors in [-1, 1).
pub fn random_vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            (0..dims)
                .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
                .collect()
        })
        .collect()
}

/// Builds the graph of `vectors` (l2) by inserting them in order, levels drawn from `seed`.
pub fn build_graph(vectors: &[Vec<f32>], params: &GraphParams, seed: u64) -> InMemoryGraph {
    let mut rng = SplitMix64::new(seed);
    let mut uniform = || rng.next_f64();
    InMemoryGraph::build(vectors, params, l2_squared, &mut uniform).0
}

/// Our walk: `vector_hnsw`'s search over the simulated pages, each batch read through a
/// [`BlockReader`] exactly as the extension's page store loads it (blocks grouped, pinned a few
/// at a time, look-ahead from captured lists).
pub struct PagedStore<'a> {
    graph: &'a InMemoryGraph,
    pages: &'a PageMap,
    reader: BlockReader<&'a mut SimDisk>,
    cpu: CpuModel,
    layout: BatchLayout,
    pins: Vec<SimPage>,
    limit: usize,
    layer: u8,
    lookahead: Lookahead<u32>,
}

impl<'a> PagedStore<'a> {
    /// A walk's store (one per query, like a scan's), reading through `disk`.
    pub fn new(
        graph: &'a InMemoryGraph,
        pages: &'a PageMap,
        disk: &'a mut SimDisk,
        settings: Settings,
        cpu: CpuModel,
    ) -> Self {
        let limit = pin_limit(disk.config().shared_buffers as i64);
        let mut reader = BlockReader::new(disk, settings);
        // A scan applies the settings at its first fetch.
        reader.apply(settings);
        PagedStore {
            graph,
            pages,
            reader,
            cpu,
            layout: BatchLayout::default(),
            pins: Vec::new(),
            limit,
            layer: 0,
            lookahead: Lookahead::default(),
        }
    }

    /// The walk's reader.
    pub fn reader(&self) -> &BlockReader<&'a mut SimDisk> {
        &self.reader
    }
}

fn fanout(m: usize, layer: u8) -> usize {
    if layer == 0 {
        2 * m
    } else {
        m
    }
}

impl GraphStore for PagedStore<'_> {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.lookahead.clear();
        self.reader.source().read(0, false);
        self.graph.entry()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        self.layer = layer;
        if layer > element.level {
            return;
        }
        let cpu = self.cpu.per_hop_us;
        let disk = self.reader.source();
        disk.read(self.pages.neighbor_block(element.id), false);
        disk.cpu(cpu);
        out.extend_from_slice(self.graph.neighbor_ids(element.id, layer));
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        let pages = self.pages;
        let graph = self.graph;
        self.layout.group(ids, |&id| pages.block(id));
        let first_out = out.len();
        out.resize(
            first_out + ids.len(),
            Candidate {
                id: 0,
                distance: 0.0,
                level: 0,
                live: false,
                meta: (),
            },
        );
        let capture = self.reader.captures();
        let layer = self.layer;
        let per_element = self.cpu.per_element_us;
        let mut pins = std::mem::take(&mut self.pins);
        let mut batch = self
            .reader
            .batch(self.layout.blocks(), fanout(graph.m(), layer));
        loop {
            let first = batch.fill(&mut pins, self.limit, |_, _, _, _| {});
            if pins.is_empty() {
                break;
            }
            for (k, page) in (first..).zip(pins.drain(..)) {
                for &i in self.layout.members(k) {
                    let id = ids[i as usize];
                    debug_assert_eq!(page.block, pages.block(id));
                    batch.source().cpu(per_element);
                    let level = graph.level(id);
                    if capture && pages.neighbor_block(id) == page.block && level >= layer {
                        self.lookahead.captured.add(
                            id,
                            layer,
                            graph.neighbor_ids(id, layer).iter().copied(),
                        );
                    }
                    out[first_out + i as usize] = Candidate {
                        id,
                        distance: l2_squared(query, graph.vector(id)),
                        level,
                        live: graph.is_live(id),
                        meta: (),
                    };
                }
            }
        }
        debug_assert_eq!(batch.consumed(), self.layout.blocks().len());
        drop(batch);
        self.pins = pins;
    }

    fn lookahead_width(&self) -> usize {
        self.reader.lookahead_width()
    }

    fn lookahead(
        &mut self,
        layer: u8,
        upcoming: &[&Candidate<u32, ()>],
        visited: &dyn Fn(&u32) -> bool,
    ) {
        let pages = self.pages;
        self.lookahead.plan(
            &mut self.reader,
            layer,
            upcoming.iter().map(|c| &c.id),
            visited,
            |&id| pages.block(id),
        );
    }
}

/// pgvector's walk: the same search, each element's block read (`ReadBuffer`) one after the
/// other.
pub struct SerialStore<'a> {
    graph: &'a InMemoryGraph,
    pages: &'a PageMap,
    disk: &'a mut SimDisk,
    cpu: CpuModel,
}

impl<'a> SerialStore<'a> {
    pub fn new(
        graph: &'a InMemoryGraph,
        pages: &'a PageMap,
        disk: &'a mut SimDisk,
        cpu: CpuModel,
    ) -> Self {
        SerialStore {
            graph,
            pages,
            disk,
            cpu,
        }
    }
}

impl GraphStore for SerialStore<'_> {
    type Id = u32;
    type Meta = ();
    type Value = Vec<f32>;

    fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
        self.disk.read(0, false);
        self.graph.entry()
    }

    fn neighbors(&mut self, element: &Candidate<u32, ()>, layer: u8, out: &mut Vec<u32>) {
        if layer > element.level {
            return;
        }
        self.disk.read(self.pages.neighbor_block(element.id), false);
        self.disk.cpu(self.cpu.per_hop_us);
        out.extend_from_slice(self.graph.neighbor_ids(element.id, layer));
    }

    fn load(&mut self, query: &Vec<f32>, ids: &[u32], out: &mut Vec<Candidate<u32, ()>>) {
        for &id in ids {
            self.disk.read(self.pages.block(id), false);
            self.disk.cpu(self.cpu.per_element_us);
            out.push(Candidate {
                id,
                distance: l2_squared(query, self.graph.vector(id)),
                level: self.graph.level(id),
                live: self.graph.is_live(id),
                meta: (),
            });
        }
    }
}
