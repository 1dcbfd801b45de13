//! Where a built graph's elements go on pages: graph neighbors together, so that one page read
//! serves several of a search hop's neighbors.
//!
//! A search that expands an element loads its unvisited neighbors, and each one's page is a
//! read when the index is cold. Placing an element on the same page as its nearest neighbors
//! (and those neighbors' nearest neighbors, while the page has room) turns several of those
//! reads into one. Placement only orders the elements: the caller's page format
//! ([`PagePacker`]) decides where each page ends, exactly as for any other order, so the graph
//! and every search on it stay the same; only the blocks move.
//!
//! Order ([`shared_lists_first`]):
//! * Pages are started from anchors taken newest first (pgvector's own order), each the newest
//!   element not placed yet. Anchors in breadth-first order from the entry point measured
//!   slower: consecutive pages then hold nearby parts of the graph, a query's reads look
//!   sequential to the kernel, and its read-ahead fetched 1.6 times the blocks a query needs.
//! * Each page is filled with the elements that share the most neighbor lists with the ones
//!   already on it: a hop loads the unvisited members of one list, so two elements that appear
//!   in many lists together are often loaded by the same hop, and one read then serves both.
//!   The lists counted for a member are its own and those of its [`NEIGHBOR_LISTS`] nearest
//!   neighbors (links mostly go both ways, so these are lists that name it, found without a
//!   reverse index). Counting all its neighbors' lists found 1.3% fewer blocks again but cost a
//!   100k × 384 build 1 s in 24 instead of 0.2. Ties go to the candidate met first, the
//!   anchor's nearest neighbors first. A page ends when [`MISSES_BEFORE_FULL`] candidates in
//!   a row would need a new page (elements differ in size with their level, so a smaller one
//!   may still fit). On real 384-dimensional sentence embeddings this read 6% fewer blocks a
//!   cold query than filling each page with the anchor's neighbors breadth-first
//!   (`crates/io/examples/placement_blocks.rs`).

use std::collections::TryReserveError;

/// The caller's page format. Elements are added one after the other; a page ends where the
/// next element would not fit.
pub trait PagePacker {
    /// True when element `i` would go on the page being filled.
    fn fits(&self, i: u32) -> bool;
    /// Adds element `i` after the last one (on a new page when it does not fit).
    fn place(&mut self, i: u32);
}

/// Candidates in a row that may fail to fit before the page is taken as full.
pub const MISSES_BEFORE_FULL: usize = 4;

/// How many of a page member's neighbors (nearest first) have their lists counted besides its
/// own.
pub const NEIGHBOR_LISTS: usize = 8;

/// The order to write elements `0..count` in, each page holding elements that share neighbor
/// lists.
///
/// `neighbors(i, out)` appends element `i`'s layer-0 neighbors, nearest first as stored. Every
/// element is placed exactly once and handed to `packer` in the returned order. Fails only when
/// its working memory (7 bytes per element, and the lists around one page) cannot be
/// allocated.
pub fn shared_lists_first<P: PagePacker + ?Sized>(
    count: u32,
    mut neighbors: impl FnMut(u32, &mut Vec<u32>),
    packer: &mut P,
) -> Result<Vec<u32>, TryReserveError> {
    let mut placed = filled(count as usize, false)?;
    // How many lists each candidate shares with the page's members; `touched` lists the
    // candidates with a count, in the order met.
    let mut shared = filled(count as usize, 0u16)?;
    let mut touched = Vec::new();
    let mut order = Vec::new();
    order.try_reserve_exact(count as usize)?;
    let (mut own, mut list) = (Vec::new(), Vec::new());
    let mut too_big = Vec::new();
    for anchor in (0..count).rev() {
        if placed[anchor as usize] {
            continue;
        }
        let mut member = Some(anchor);
        let mut misses = 0;
        too_big.clear();
        while let Some(m) = member {
            placed[m as usize] = true;
            packer.place(m);
            order.push(m);
            // Count the lists `m` is in (its own and its nearest neighbors') for their members.
            own.clear();
            neighbors(m, &mut own);
            for y in std::iter::once(m).chain(own.iter().copied().take(NEIGHBOR_LISTS)) {
                list.clear();
                if y == m {
                    list.extend_from_slice(&own);
                } else {
                    neighbors(y, &mut list);
                }
                for &c in &list {
                    let count = &mut shared[c as usize];
                    if *count == 0 {
                        touched.try_reserve(1)?;
                        touched.push(c);
                    }
                    *count = count.saturating_add(1);
                }
            }
            member = None;
            while member.is_none() {
                let mut best: Option<(u16, u32)> = None;
                for &c in &touched {
                    let count = shared[c as usize];
                    if !placed[c as usize]
                        && best.is_none_or(|(most, _)| count > most)
                        && !too_big.contains(&c)
                    {
                        best = Some((count, c));
                    }
                }
                let Some((_, c)) = best else { break };
                if packer.fits(c) {
                    misses = 0;
                    member = Some(c);
                } else {
                    misses += 1;
                    if misses >= MISSES_BEFORE_FULL {
                        break;
                    }
                    too_big.push(c);
                }
            }
        }
        for &c in &touched {
            shared[c as usize] = 0;
        }
        touched.clear();
    }
    Ok(order)
}

/// Positions of ids in a sorted list of distinct ids spread over a range (a build graph's
/// element offsets), found in a step or two: a table of where each stretch of the range starts,
/// one entry per id. Placement asks for a position for every neighbor it counts, and a binary
/// search for each took most of its time.
pub struct SortedIds<'a> {
    ids: &'a [u32],
    /// Range covered by one stretch.
    stretch: u32,
    /// Position of the first id at or after the start of each stretch.
    starts: Vec<u32>,
}

impl<'a> SortedIds<'a> {
    /// The table for `ids`, sorted ascending and distinct. Fails only when its memory (4 bytes
    /// per id) cannot be allocated.
    pub fn new(ids: &'a [u32]) -> Result<Self, TryReserveError> {
        let (first, last) = match (ids.first(), ids.last()) {
            (Some(&first), Some(&last)) => (first, last),
            _ => {
                return Ok(SortedIds {
                    ids,
                    stretch: 1,
                    starts: Vec::new(),
                })
            }
        };
        let span = u64::from(last - first) + 1;
        let stretch = span.div_ceil(ids.len() as u64).max(1) as u32;
        let count = span.div_ceil(u64::from(stretch)) as usize;
        let mut starts = Vec::new();
        starts.try_reserve_exact(count)?;
        let mut at = 0;
        for s in 0..count {
            let begins = u64::from(first) + s as u64 * u64::from(stretch);
            while at < ids.len() && u64::from(ids[at]) < begins {
                at += 1;
            }
            starts.push(at as u32);
        }
        Ok(SortedIds {
            ids,
            stretch,
            starts,
        })
    }

    /// The position of `id` in the list, if it is there.
    pub fn position(&self, id: u32) -> Option<u32> {
        let first = *self.ids.first()?;
        let s = (id.checked_sub(first)? / self.stretch) as usize;
        let mut at = *self.starts.get(s)? as usize;
        while at < self.ids.len() && self.ids[at] < id {
            at += 1;
        }
        (self.ids.get(at) == Some(&id)).then_some(at as u32)
    }
}

fn filled<T: Clone>(len: usize, value: T) -> Result<Vec<T>, TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{l2_squared, InMemoryGraph};
    use crate::storage::{Candidate, EntryPoint, GraphStore};
    use crate::{search, GraphParams};
    use std::collections::HashSet;

    /// Pages of a fixed number of equal elements.
    struct FixedPages {
        per_page: usize,
        on_page: usize,
        page_of: Vec<u32>,
        pages: u32,
    }

    impl FixedPages {
        fn new(count: usize, per_page: usize) -> Self {
            FixedPages {
                per_page,
                on_page: 0,
                page_of: vec![u32::MAX; count],
                pages: 0,
            }
        }
    }

    impl PagePacker for FixedPages {
        fn fits(&self, _: u32) -> bool {
            self.pages > 0 && self.on_page < self.per_page
        }
        fn place(&mut self, i: u32) {
            if !self.fits(i) {
                self.pages += 1;
                self.on_page = 0;
            }
            self.on_page += 1;
            assert_eq!(self.page_of[i as usize], u32::MAX, "{i} placed twice");
            self.page_of[i as usize] = self.pages - 1;
        }
    }

    /// pgvector's order: newest first, `per_page` to a page.
    fn insertion_pages(count: usize, per_page: usize) -> Vec<u32> {
        let mut packer = FixedPages::new(count, per_page);
        for i in (0..count as u32).rev() {
            packer.place(i);
        }
        packer.page_of
    }

    fn random_graph(count: usize, dims: usize, seed: u64) -> InMemoryGraph {
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        // Clustered, as real embeddings are: 20 centers, points around them.
        let centers: Vec<Vec<f32>> = (0..20)
            .map(|_| (0..dims).map(|_| next() as f32).collect())
            .collect();
        let params = GraphParams {
            m: 8,
            ef_construction: 32,
        };
        let vectors: Vec<Vec<f32>> = (0..count)
            .map(|_| {
                let center = &centers[(next() * 20.0) as usize % 20];
                center
                    .iter()
                    .map(|&c| c + (next() as f32 - 0.5) * 0.3)
                    .collect()
            })
            .collect();
        InMemoryGraph::build(&vectors, &params, l2_squared, &mut next).0
    }

    fn layer0(graph: &InMemoryGraph) -> impl FnMut(u32, &mut Vec<u32>) + '_ {
        |i, out| out.extend_from_slice(graph.neighbor_ids(i, 0))
    }

    /// A store that notes the pages of every element a search loads.
    struct PageCounting<'g> {
        graph: &'g mut InMemoryGraph,
        page_of: &'g [u32],
        pages: HashSet<u32>,
    }

    impl GraphStore for PageCounting<'_> {
        type Id = u32;
        type Meta = <InMemoryGraph as GraphStore>::Meta;
        type Value = <InMemoryGraph as GraphStore>::Value;

        fn entry_point(&mut self) -> Option<EntryPoint<u32>> {
            let entry = self.graph.entry_point();
            if let Some(e) = entry {
                self.pages.insert(self.page_of[e.id as usize]);
            }
            entry
        }
        fn neighbors(&mut self, e: &Candidate<u32, Self::Meta>, layer: u8, out: &mut Vec<u32>) {
            self.pages.insert(self.page_of[e.id as usize]);
            self.graph.neighbors(e, layer, out)
        }
        fn load(
            &mut self,
            query: &Self::Value,
            ids: &[u32],
            out: &mut Vec<Candidate<u32, Self::Meta>>,
        ) {
            self.pages
                .extend(ids.iter().map(|&i| self.page_of[i as usize]));
            self.graph.load(query, ids, out)
        }
    }

    #[test]
    fn places_every_element_once_in_packer_order() {
        let graph = random_graph(500, 8, 7);
        let mut packer = FixedPages::new(500, 4);
        let order = shared_lists_first(500, layer0(&graph), &mut packer).unwrap();
        assert_eq!(order.len(), 500);
        let distinct: HashSet<u32> = order.iter().copied().collect();
        assert_eq!(distinct.len(), 500);
        assert_eq!(order[0], 499, "the newest element anchors the first page");
        // The packer saw them in that order: pages never go back.
        let pages: Vec<u32> = order.iter().map(|&i| packer.page_of[i as usize]).collect();
        assert!(pages.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn unreachable_and_edgeless_elements_are_placed() {
        // No edges at all: every element is an anchor, newest first.
        let mut packer = FixedPages::new(10, 3);
        let order = shared_lists_first(10, |_, _| {}, &mut packer).unwrap();
        assert_eq!(order, (0..10).rev().collect::<Vec<u32>>());
        assert_eq!(
            packer.pages, 4,
            "anchors fill the room their neighbors leave"
        );
        assert!(shared_lists_first(0, |_, _| {}, &mut FixedPages::new(0, 3))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn pages_hold_neighbors() {
        let graph = random_graph(2000, 16, 11);
        let mut packer = FixedPages::new(2000, 4);
        shared_lists_first(2000, layer0(&graph), &mut packer).unwrap();
        let with_neighbor = |page_of: &[u32]| {
            (0..2000u32)
                .filter(|&i| {
                    graph
                        .neighbor_ids(i, 0)
                        .iter()
                        .any(|&n| page_of[n as usize] == page_of[i as usize])
                })
                .count()
        };
        let placed = with_neighbor(&packer.page_of);
        let inserted = with_neighbor(&insertion_pages(2000, 4));
        assert!(
            placed > 1700,
            "{placed} of 2000 share a page with a neighbor"
        );
        assert!(placed > 3 * inserted, "{placed} against {inserted}");
    }

    #[test]
    fn sorted_ids_find_every_position_and_nothing_else() {
        // Offsets of elements of uneven sizes, as a build graph lays them out.
        let mut ids = Vec::new();
        let mut at = 7u32;
        for i in 0..1000u32 {
            ids.push(at);
            at += if i % 13 == 0 { 900 } else { 300 + i % 5 };
        }
        let table = SortedIds::new(&ids).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(table.position(id), Some(i as u32));
            assert_eq!(table.position(id + 1), None);
        }
        assert_eq!(table.position(0), None);
        assert_eq!(table.position(u32::MAX), None);
        let none = SortedIds::new(&[]).unwrap();
        assert_eq!(none.position(7), None);
        let one = SortedIds::new(&[u32::MAX]).unwrap();
        assert_eq!(one.position(u32::MAX), Some(0));
        assert_eq!(one.position(0), None);
    }

    /// The fill this module used before: the anchor's unplaced neighbors in list order, then
    /// theirs (breadth-first), until the page is full.
    fn breadth_first_pages(graph: &InMemoryGraph, per_page: usize) -> Vec<u32> {
        let count = graph.slots();
        let mut packer = FixedPages::new(count, per_page);
        let mut placed = vec![false; count];
        for anchor in (0..count as u32).rev() {
            if placed[anchor as usize] {
                continue;
            }
            placed[anchor as usize] = true;
            packer.place(anchor);
            let mut page = vec![anchor];
            let mut at = 0;
            while at < page.len() && packer.fits(0) {
                for &c in graph.neighbor_ids(page[at], 0) {
                    if !placed[c as usize] && packer.fits(c) {
                        placed[c as usize] = true;
                        packer.place(c);
                        page.push(c);
                    }
                }
                at += 1;
            }
        }
        packer.page_of
    }

    /// Distinct pages the searches for `queries` load under each layout; the searches must
    /// find the same elements under all of them.
    fn pages_read(
        graph: &mut InMemoryGraph,
        layouts: &[Vec<u32>],
        queries: &[Vec<f32>],
    ) -> Vec<usize> {
        let mut totals = vec![0; layouts.len()];
        for query in queries {
            let mut results = Vec::new();
            for (layout, total) in layouts.iter().zip(totals.iter_mut()) {
                let mut store = PageCounting {
                    graph: &mut *graph,
                    page_of: layout,
                    pages: HashSet::new(),
                };
                let (found, _) = search::search(&mut store, query, 40);
                *total += store.pages.len();
                results.push(found.iter().map(|c| c.id).collect::<Vec<u32>>());
            }
            assert!(results.windows(2).all(|w| w[0] == w[1]));
        }
        totals
    }

    /// Pages that share lists read fewer pages than pages filled with each anchor's neighbors
    /// breadth-first.
    #[test]
    fn shared_lists_read_fewer_pages_than_breadth_first_neighbors() {
        for per_page in [2, 4, 10] {
            let mut graph = random_graph(3000, 16, 5);
            let mut packer = FixedPages::new(3000, per_page);
            shared_lists_first(3000, layer0(&graph), &mut packer).unwrap();
            let layouts = [breadth_first_pages(&graph, per_page), packer.page_of];
            let queries: Vec<Vec<f32>> = (0..50)
                .map(|q| graph.vector(q * 37 + 1).iter().map(|x| x + 0.01).collect())
                .collect();
            let totals = pages_read(&mut graph, &layouts, &queries);
            eprintln!("{per_page} to a page: {totals:?}");
            assert!(
                totals[1] < totals[0],
                "{per_page} to a page: {} pages sharing lists against {} breadth-first",
                totals[1],
                totals[0]
            );
        }
    }

    /// The searches are the same (placement does not touch the graph) and read fewer distinct
    /// pages, at 4 and at 10 elements to a page (384 and 128 dimensions in pgvector's format).
    #[test]
    fn searches_read_fewer_pages() {
        for per_page in [4, 10] {
            let mut graph = random_graph(3000, 16, 5);
            let mut packer = FixedPages::new(3000, per_page);
            shared_lists_first(3000, layer0(&graph), &mut packer).unwrap();
            let layouts = [insertion_pages(3000, per_page), packer.page_of];
            let mut totals = [0usize; 2];
            let queries: Vec<Vec<f32>> = (0..50)
                .map(|q| graph.vector(q * 37 + 1).iter().map(|x| x + 0.01).collect())
                .collect();
            for query in &queries {
                let mut results = Vec::new();
                for (layout, total) in layouts.iter().zip(totals.iter_mut()) {
                    let mut store = PageCounting {
                        graph: &mut graph,
                        page_of: layout,
                        pages: HashSet::new(),
                    };
                    let (found, _) = search::search(&mut store, query, 40);
                    *total += store.pages.len();
                    results.push(found.iter().map(|c| c.id).collect::<Vec<u32>>());
                }
                assert_eq!(results[0], results[1]);
            }
            assert!(
                totals[1] * 2 < totals[0],
                "{per_page} to a page: {} pages placed against {} in insertion order",
                totals[1],
                totals[0]
            );
        }
    }
}
