//! The page planner against pages filled with the page functions, entry by entry.

use proptest::prelude::*;
use vector_formats::page::{self, PageRef, BLCKSZ};
use vector_ivf::layout::PagePlanner;

/// pgvector's ivfflat special space.
const OPAQUE_SIZE: usize = 8;

/// Pages used when `entries` (list, length), in list order, are written to pages, each list
/// starting a page (lists without entries too).
fn filled_pages(lists: usize, entries: &[(usize, usize)]) -> u64 {
    let mut pages = 0;
    let mut page = vec![0u8; BLCKSZ];
    let mut next = 0;
    for list in 0..lists {
        page::init(&mut page, OPAQUE_SIZE);
        pages += 1;
        while next < entries.len() && entries[next].0 == list {
            let len = entries[next].1;
            if PageRef::new(&page).free_space() < page::maxalign(len) {
                page::init(&mut page, OPAQUE_SIZE);
                pages += 1;
            }
            page::add_item(&mut page, &vec![1u8; len]).expect("an entry fits an empty page");
            next += 1;
        }
    }
    pages
}

fn empty_space() -> usize {
    let mut page = vec![0u8; BLCKSZ];
    page::init(&mut page, OPAQUE_SIZE);
    PageRef::new(&page).exact_free_space()
}

fn planned_pages(lists: usize, entries: &[(usize, usize)]) -> u64 {
    let mut planner = PagePlanner::new(empty_space());
    let mut seen = 0;
    for &(list, len) in entries {
        planner.entry(list, len);
        // Never more than the pages the entries so far fill.
        assert!(planner.pages() >= seen);
        seen = planner.pages();
    }
    planner.finish(lists);
    planner.pages()
}

#[test]
fn fixed_sizes_as_vectors_give_them() {
    // 768-d vectors (two a page), 3-d, and a page-filling size.
    for len in [3096usize, 32, 4000, 8000, 8152] {
        let lists = 7;
        let entries: Vec<(usize, usize)> = (0..lists)
            .filter(|l| l % 3 != 1)
            .flat_map(|l| std::iter::repeat_n((l, len), 5 + l * 4))
            .collect();
        assert_eq!(
            planned_pages(lists, &entries),
            filled_pages(lists, &entries),
            "len {len}"
        );
    }
    assert_eq!(planned_pages(4, &[]), 4);
}

proptest! {
    #[test]
    fn planner_counts_the_pages_written(
        lists in 1usize..12,
        raw in prop::collection::vec((0usize..12, 1usize..4000), 0..300),
    ) {
        let mut entries: Vec<(usize, usize)> =
            raw.into_iter().map(|(l, len)| (l % lists, len)).collect();
        entries.sort_by_key(|e| e.0);
        prop_assert_eq!(planned_pages(lists, &entries), filled_pages(lists, &entries));
    }
}
