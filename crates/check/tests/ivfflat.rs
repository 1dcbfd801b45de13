//! The ivfflat checks over pgvector 0.8.6's own indexes (tests/fixtures/pgvector-ivfflat):
//! clean as built, and each seeded damage found where it was made.

use vector_check::ivfflat::{check, Options, Summary};
use vector_check::value::ValueType;
use vector_check::{Corruption, PageImages};
use vector_formats::page::{
    fixture_pages, item_range, special_range, write_u16, write_u32, BLCKSZ,
};

fn fixture(name: &str) -> (Vec<Vec<u8>>, ValueType) {
    let (text, kind) = match name {
        "i1" => (
            include_str!("../../../tests/fixtures/pgvector-ivfflat/i1_idx.pages"),
            ValueType::Vector,
        ),
        "i2" => (
            include_str!("../../../tests/fixtures/pgvector-ivfflat/i2_idx.pages"),
            ValueType::Halfvec,
        ),
        "i3" => (
            include_str!("../../../tests/fixtures/pgvector-ivfflat/i3_idx.pages"),
            ValueType::Bit,
        ),
        "i4" => (
            include_str!("../../../tests/fixtures/pgvector-ivfflat/i4_idx.pages"),
            ValueType::Vector,
        ),
        "i5" => (
            include_str!("../../../tests/fixtures/pgvector-ivfflat/i5_idx.pages"),
            ValueType::Vector,
        ),
        _ => unreachable!(),
    };
    (fixture_pages(text), kind)
}

fn run(
    pages: Vec<Vec<u8>>,
    value_type: ValueType,
    cross_check: bool,
) -> Result<Summary, Corruption> {
    check(
        &mut PageImages(pages),
        Options {
            value_type,
            cross_check,
            heap_tids: true,
        },
    )
}

#[test]
fn pgvector_indexes_are_clean() {
    let expected = [
        ("i1", 300, 3000 - 428 + 300),
        ("i2", 3, 500),
        ("i3", 2, 300),
        ("i4", 2, 900),
        ("i5", 4, 0),
    ];
    for (name, lists, entries) in expected {
        let (pages, kind) = fixture(name);
        for cross in [false, true] {
            let s = run(pages.clone(), kind, cross).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.lists, lists, "{name}");
            assert_eq!(s.entries, entries, "{name}");
            assert_eq!(
                s.heap_tids.as_ref().unwrap().len() as u64,
                entries,
                "{name}"
            );
            assert_eq!(
                (s.zero_pages, s.unchained_pages, s.compressed_entries),
                (0, 0, 0),
                "{name}"
            );
            assert_eq!(s.pages, s.list_pages + s.entry_pages + 1, "{name}");
        }
    }
    // Several pages per list in i4.
    let s = run(fixture("i4").0, ValueType::Vector, true).unwrap();
    assert!(s.entry_pages >= 4, "{s:?}");
}

fn expect_damage(
    name: &str,
    damage: impl FnOnce(&mut Vec<Vec<u8>>) -> (usize, Option<u16>),
    says: &str,
) {
    let (mut pages, kind) = fixture(name);
    let (block, offset) = damage(&mut pages);
    let e = run(pages, kind, true).expect_err("damage found");
    assert_eq!((e.block as usize, e.offset), (block, offset), "{e}");
    assert!(e.problem.contains(says), "{e}");
}

const META: usize = 24;

#[test]
fn metapage_damage() {
    expect_damage(
        "i1",
        |p| {
            write_u16(&mut p[0], META + 10, 299);
            (0, None)
        },
        "299 lists",
    );
    expect_damage(
        "i1",
        |p| {
            write_u16(&mut p[0], META + 10, 0);
            (0, None)
        },
        "0 lists",
    );
    expect_damage(
        "i1",
        |p| {
            write_u16(&mut p[0], META + 8, 4);
            (1, Some(1))
        },
        "3 dimensions, the index 4",
    );
    expect_damage(
        "i1",
        |p| {
            write_u32(&mut p[0], META, 1);
            (0, None)
        },
        "magic",
    );
}

#[test]
fn chain_damage() {
    let (pages, _) = fixture("i4");
    let next_at = special_range(&pages[1]).start;
    // The list page's first list and its start page.
    let list_at = item_range(&pages[1], 1).unwrap().start;
    let start = u32::from_ne_bytes(pages[1][list_at..list_at + 4].try_into().unwrap()) as usize;
    let second =
        u32::from_ne_bytes(pages[start][next_at..next_at + 4].try_into().unwrap()) as usize;
    assert!(second < pages.len(), "list 1 has two pages at least");
    // A self-loop, a loop back to the start, a link to the metapage or past the end.
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[second], next_at, second as u32);
            (second, None)
        },
        "already on a chain",
    );
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[second], next_at, start as u32);
            (second, None)
        },
        "already on a chain",
    );
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[start], next_at, 0);
            (start, None)
        },
        "not a page of the index",
    );
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[start], next_at, 99_999);
            (start, None)
        },
        "not a page of the index",
    );
    // A list starting at the list page.
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[1], list_at, 1);
            (1, Some(1))
        },
        "already on a chain",
    );
    // An insert page off the list's chain (only with cross_check).
    let other_list_start = {
        let at = item_range(&pages[1], 2).unwrap().start;
        u32::from_ne_bytes(pages[1][at..at + 4].try_into().unwrap())
    };
    expect_damage(
        "i4",
        |p| {
            write_u32(&mut p[1], list_at + 4, other_list_start);
            (1, Some(1))
        },
        "not on its chain",
    );
    // A page of zeros in a chain, a foreign page id.
    expect_damage(
        "i4",
        |p| {
            p[second].fill(0);
            (start, None)
        },
        "not initialized",
    );
    expect_damage(
        "i4",
        |p| {
            write_u16(&mut p[second], BLCKSZ - 2, 0xff90);
            (second, None)
        },
        "page id is 0xff90",
    );
}

#[test]
fn entry_damage() {
    let (pages, _) = fixture("i4");
    let list_at = item_range(&pages[1], 1).unwrap().start;
    let start = u32::from_ne_bytes(pages[1][list_at..list_at + 4].try_into().unwrap()) as usize;
    let e = item_range(&pages[start], 1).unwrap().start;
    // The tuple's size field beyond its item, a heap TID of offset 0, a value of other dims.
    expect_damage(
        "i4",
        |p| {
            write_u16(&mut p[start], e + 6, 0x1fff);
            (start, Some(1))
        },
        "malformed",
    );
    expect_damage(
        "i4",
        |p| {
            write_u16(&mut p[start], e + 4, 0);
            (start, Some(1))
        },
        "invalid heap TID",
    );
    // (vector(16) values are short enough for a 1-byte varlena header: dims at byte 9.)
    assert_eq!(pages[start][e + 8] & 1, 1);
    expect_damage(
        "i4",
        |p| {
            write_u16(&mut p[start], e + 9, 15);
            (start, Some(1))
        },
        "dimension count 15",
    );
    // Two entries for one heap row.
    expect_damage(
        "i4",
        |p| {
            let (a, b) = (
                item_range(&p[start], 1).unwrap().start,
                item_range(&p[start], 2).unwrap().start,
            );
            let tid = p[start][a..a + 6].to_vec();
            p[start][b..b + 6].copy_from_slice(&tid);
            (start, Some(2))
        },
        "indexed twice",
    );
}

/// Seeded random damage never panics the check.
#[test]
fn random_damage_never_panics() {
    let (clean, kind) = fixture("i2");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut found = 0;
    for case in 0..1500 {
        let mut pages = clean.clone();
        let block = (rand() as usize) % pages.len();
        let n = if case % 2 == 0 { 4 } else { 64 };
        let at = (rand() as usize) % (BLCKSZ - n);
        for b in &mut pages[block][at..at + n] {
            *b = rand() as u8;
        }
        if run(pages, kind, case % 3 == 0).is_err() {
            found += 1;
        }
    }
    assert!(found > 100, "found {found} of 1500");
}
