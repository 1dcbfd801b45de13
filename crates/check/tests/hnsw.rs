//! The hnsw checks over pgvector 0.8.6's own indexes (tests/fixtures/pgvector-hnsw): clean as
//! built, and each seeded damage found where it was made.

use vector_check::heap::Presence;
use vector_check::hnsw::{check, Options, Summary};
use vector_check::value::ValueType;
use vector_check::{Corruption, PageImages};
use vector_formats::hnsw::{tuple_kind, ElementView, TupleKind};
use vector_formats::page::{
    fixture_pages, item_range, special_range, write_u16, write_u32, ItemPointer, OffsetNumber,
    PageRef, BLCKSZ,
};

fn fixture(name: &str) -> (Vec<Vec<u8>>, ValueType) {
    let (text, kind) = match name {
        "t1" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t1_idx.pages"),
            ValueType::Vector,
        ),
        "t2" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t2_idx.pages"),
            ValueType::Halfvec,
        ),
        "t3" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t3_idx.pages"),
            ValueType::Bit,
        ),
        "t4" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t4_idx.pages"),
            ValueType::Sparsevec,
        ),
        "t5" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t5_idx.pages"),
            ValueType::Vector,
        ),
        "t6" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t6_idx.pages"),
            ValueType::Vector,
        ),
        "t7" => (
            include_str!("../../../tests/fixtures/pgvector-hnsw/t7_idx.pages"),
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

const FIXTURES: [&str; 7] = ["t1", "t2", "t3", "t4", "t5", "t6", "t7"];

#[test]
fn pgvector_indexes_are_clean() {
    for name in FIXTURES {
        let (pages, kind) = fixture(name);
        let plain = run(pages.clone(), kind, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        let cross = run(pages, kind, true).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plain.elements, cross.elements);
        assert_eq!(plain.zero_pages, 0, "{name}");
        assert_eq!(plain.unchained_pages, 0, "{name}");
        let c = cross.cross.expect("cross-checked");
        assert_eq!(c.orphan_neighbor_tuples, 0, "{name}");
        assert_eq!(c.above_entry_level, 0, "{name}");
        eprintln!("{name}: {} live, {c:?}", cross.live_elements);
        // Inner products of sparse vectors with disjoint indices are all 0: pgvector's
        // pruning disconnects many of t4's elements. The l2 graphs stay whole.
        if name != "t4" {
            assert_eq!(c.unreachable, 0, "{name}");
        }
    }
}

#[test]
fn counts_match_what_pgvector_built() {
    // t1: 250 rows, every 7th deleted and vacuumed, 30 more (reusing deleted slots).
    let (pages, kind) = fixture("t1");
    let s = run(pages, kind, true).unwrap();
    assert_eq!(s.heap_tids.as_ref().unwrap().len(), 250 - 35 + 30);
    assert_eq!(s.live_elements as usize, 250 - 35 + 30);
    // t7: 22 rows, 13 of them equal to one other: 10 share one element.
    let (pages, kind) = fixture("t7");
    let s = run(pages, kind, true).unwrap();
    assert_eq!(s.heap_tids.as_ref().unwrap().len(), 22);
    assert!(s.live_elements < 22);
    // t6: empty.
    let (pages, kind) = fixture("t6");
    let s = run(pages, kind, true).unwrap();
    assert_eq!((s.elements, s.live_elements), (0, 0));
}

#[test]
fn heap_tids_tell_missing_rows() {
    let (pages, kind) = fixture("t1");
    let s = run(pages.clone(), kind, false).unwrap();
    let tids = s.heap_tids.unwrap();
    let (tid, value) = first_live(&pages);
    assert_eq!(tids.presence(tid, &value), Presence::Indexed);
    let mut other = value.clone();
    *other.last_mut().unwrap() ^= 1;
    assert_eq!(tids.presence(tid, &other), Presence::OtherValue);
    assert_eq!(
        tids.presence(ItemPointer::new(9999, 1), &value),
        Presence::Missing
    );
}

/// The first live element's first heap TID and value.
fn first_live(pages: &[Vec<u8>]) -> (ItemPointer, Vec<u8>) {
    for page in &pages[1..] {
        for (_, item) in PageRef::new(page).items() {
            if let Ok(e) = ElementView::parse(item) {
                if let (Some(t), Some(v)) = (e.heap_tids().next(), e.value()) {
                    return (t, v.to_vec());
                }
            }
        }
    }
    panic!("no live element")
}

/// The (block, offset) of the first item of `kind` from block 1 on.
fn first(pages: &[Vec<u8>], kind: TupleKind) -> (usize, OffsetNumber) {
    for (b, page) in pages.iter().enumerate().skip(1) {
        for (o, item) in PageRef::new(page).items() {
            if tuple_kind(item) == kind {
                return (b, o);
            }
        }
    }
    panic!("no such item")
}

fn item_start(page: &[u8], offset: OffsetNumber) -> usize {
    item_range(page, offset).unwrap().start
}

/// Damages a copy of t1 and expects the check (plain unless `cross`) to name `block` (and
/// `offset`) with a message containing `says`.
fn expect_damage(
    damage: impl FnOnce(&mut Vec<Vec<u8>>) -> (usize, Option<OffsetNumber>),
    cross: bool,
    says: &str,
) {
    let (mut pages, kind) = fixture("t1");
    let (block, offset) = damage(&mut pages);
    let e = run(pages, kind, cross).expect_err("damage found");
    assert_eq!((e.block as usize, e.offset), (block, offset), "{e}");
    assert!(e.problem.contains(says), "{e}");
}

const META: usize = 24; // PageGetContents of the metapage

#[test]
fn metapage_damage() {
    expect_damage(
        |p| {
            write_u16(&mut p[0], META + 12, 0);
            (0, None)
        },
        false,
        "m = 0",
    );
    expect_damage(
        |p| {
            write_u32(&mut p[0], META + 16, 9999);
            (0, None)
        },
        false,
        "entry point is in block 9999",
    );
    expect_damage(
        |p| {
            write_u32(&mut p[0], META, 7);
            (0, None)
        },
        false,
        "magic",
    );
    expect_damage(
        |p| {
            write_u16(&mut p[0], META + 22, 70);
            (0, None)
        },
        false,
        "level 70",
    );
    // A level the element does not have: only the cross-check can tell.
    expect_damage(
        |p| {
            write_u16(&mut p[0], META + 22, 0);
            (0, None)
        },
        true,
        "level 0 in the metapage",
    );
}

#[test]
fn chain_damage() {
    let n = fixture("t1").0.len();
    assert!(n > 3, "t1 has several element pages");
    let next_at = special_range(&fixture("t1").0[1]).start;
    expect_damage(
        |p| {
            write_u32(&mut p[1], next_at, 1);
            (1, None)
        },
        false,
        "next page is block 1",
    );
    expect_damage(
        |p| {
            write_u32(&mut p[n - 1], next_at, 1);
            (n - 1, None)
        },
        false,
        "loops back to block 1",
    );
    expect_damage(
        |p| {
            write_u32(&mut p[2], next_at, 0);
            (2, None)
        },
        false,
        "next page is block 0",
    );
    expect_damage(
        |p| {
            write_u32(&mut p[2], next_at, n as u32);
            (2, None)
        },
        false,
        "not another element page",
    );
    // A page of zeros in the middle of the chain.
    expect_damage(
        |p| {
            p[2].fill(0);
            (1, None)
        },
        false,
        "next page 2 is not initialized",
    );
    expect_damage(
        |p| {
            write_u16(&mut p[3], BLCKSZ - 2, 0xff84);
            (3, None)
        },
        false,
        "page id is 0xff84",
    );
}

#[test]
fn tuple_damage() {
    let (pages, _) = fixture("t1");
    let (eb, eo) = first(&pages, TupleKind::Element);
    let (nb, no) = first(&pages, TupleKind::Neighbor);
    let e_at = item_start(&pages[eb], eo);
    let n_at = item_start(&pages[nb], no);
    // Level 255.
    expect_damage(
        |p| {
            p[eb][e_at + 1] = 255;
            (eb, Some(eo))
        },
        false,
        "level 255",
    );
    // A value varlena longer than its item.
    expect_damage(
        |p| {
            write_u32(&mut p[eb], e_at + 72, 4000 << 2);
            (eb, Some(eo))
        },
        false,
        "varlena that fits",
    );
    // A value with other dimensions.
    expect_damage(
        |p| {
            write_u16(&mut p[eb], e_at + 76, 2);
            (eb, Some(eo))
        },
        false,
        "dimension",
    );
    // Unknown tuple type.
    expect_damage(
        |p| {
            p[eb][e_at] = 9;
            (eb, Some(eo))
        },
        false,
        "unknown type 9",
    );
    // A neighbor slot at the metapage, past the end, at offset 0 of a real page.
    expect_damage(
        |p| {
            write_u16(&mut p[nb], n_at + 4, 0);
            write_u16(&mut p[nb], n_at + 6, 0);
            (nb, Some(no))
        },
        false,
        "not on an element page",
    );
    expect_damage(
        |p| {
            write_u16(&mut p[nb], n_at + 4, 7);
            (nb, Some(no))
        },
        false,
        "not on an element page",
    );
    // A slot count no level gives.
    expect_damage(
        |p| {
            write_u16(&mut p[nb], n_at + 2, 6);
            (nb, Some(no))
        },
        false,
        "6 slots",
    );
    // The element's neighbor TID at another element (cross-check only).
    expect_damage(
        |p| {
            let o = eo;
            write_u16(&mut p[eb], e_at + 70 - 2, o);
            (eb, Some(eo))
        },
        true,
        "is not a neighbor tuple",
    );
}

#[test]
fn cross_check_finds_bad_links() {
    let (pages, _) = fixture("t1");
    let (nb, no) = first(&pages, TupleKind::Neighbor);
    let n_at = item_start(&pages[nb], no);
    // The element whose neighbor tuple this is: the item before it on the same page.
    let (eb, eo) = (nb, no - 1);
    assert_eq!(
        tuple_kind(PageRef::new(&pages[eb]).item(eo).unwrap()),
        TupleKind::Element
    );
    // First slot to the element itself.
    expect_damage(
        |p| {
            write_u16(&mut p[nb], n_at + 4, (eb >> 16) as u16);
            write_u16(&mut p[nb], n_at + 6, eb as u16);
            write_u16(&mut p[nb], n_at + 8, eo);
            (nb, Some(no))
        },
        true,
        "the element itself",
    );
    // First slot to a neighbor tuple.
    expect_damage(
        |p| {
            write_u16(&mut p[nb], n_at + 8, no);
            (nb, Some(no))
        },
        true,
        "is not an element",
    );
}

/// Seeded random damage never panics the check: every case ends in a summary or an error.
#[test]
fn random_damage_never_panics() {
    let (clean, kind) = fixture("t1");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut found, mut cases) = (0, 0);
    for case in 0..1500 {
        let mut pages = clean.clone();
        let block = (rand() as usize) % pages.len();
        match case % 3 {
            0 => {
                // A run of 64 random bytes.
                let at = (rand() as usize) % (BLCKSZ - 64);
                for b in &mut pages[block][at..at + 64] {
                    *b = rand() as u8;
                }
            }
            1 => {
                // A few flipped bytes.
                for _ in 0..4 {
                    let at = (rand() as usize) % BLCKSZ;
                    pages[block][at] ^= (rand() as u8) | 1;
                }
            }
            _ => {
                // A whole page of noise, keeping the header sane half of the time.
                for b in pages[block]
                    .iter_mut()
                    .skip(if rand() % 2 == 0 { 0 } else { 24 })
                {
                    *b = rand() as u8;
                }
            }
        }
        cases += 1;
        for cross in [false, true] {
            if run(pages.clone(), kind, cross).is_err() {
                found += 1;
            }
        }
    }
    assert_eq!(cases, 1500);
    // Most damage lands in bytes the format constrains; not all does (padding, free space).
    assert!(
        found > 2 * cases / 2,
        "found {found} of {} checks",
        2 * cases
    );
}
