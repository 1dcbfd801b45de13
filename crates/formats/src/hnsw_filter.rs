//! What a composite hnsw index (a vector column and a filter attribute) adds to the tuples of
//! its format (pgvector's or the quantized one), so that a filtered walk tests a neighbor
//! without reading it (docs/filtered-search-notes.md, section 5):
//!
//! * every element tuple ends with its attribute, exactly ([`AttributeTail`]), after its value
//!   at the next 8-byte boundary;
//! * every neighbor tuple carries, after its `count` TIDs, one 16-bit [`fingerprint`] per slot:
//!   the fingerprint of the attribute of the element that slot names (0 in an unused slot).
//!   A slot whose fingerprint differs from every fingerprint the filter accepts names an element
//!   that fails; one that matches names an element that may pass, which its element's exact
//!   attribute then settles (one false match in 65,535 values, and only for rows the walk
//!   loads anyway).
//!
//! Indexes without the attribute keep their format byte for byte.

use crate::hnsw::{
    ElementMut, ElementTuple, FormatError, ELEMENT_HEADER_SIZE, NEIGHBOR_HEADER_SIZE,
};
use crate::page::{
    maxalign, read_u16, write_u16, ItemPointer, BLCKSZ, ITEM_ID_SIZE, ITEM_POINTER_SIZE,
    PAGE_HEADER_SIZE,
};

/// The first word of a composite index's metapage in pgvector's format, and in the quantized
/// one: neither pgvector's library nor a reader of the plain formats opens such an index as
/// one of its own ("hnsw index is not valid"), since it would write tuples without the
/// attribute and fingerprints. Not accepted by [`crate::hnsw::MetaPage::decode`] until the
/// library reads composite indexes.
pub const COMPOSITE_MAGIC_NUMBER: u32 = 0xA953_F17E;
pub const QUANTIZED_COMPOSITE_MAGIC_NUMBER: u32 = 0xA953_CF17;

/// Bytes of a fingerprint beside each neighbor slot.
pub const FINGERPRINT_SIZE: usize = 2;
/// Bytes of the attribute at the end of an element tuple.
pub const ATTRIBUTE_TAIL_SIZE: usize = 16;

/// A filter attribute's value as an index keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Attribute {
    Null,
    Int4(i32),
    Int8(i64),
}

const KIND_NULL: u8 = 0;
const KIND_INT4: u8 = 1;
const KIND_INT8: u8 = 2;

/// The fingerprint of an attribute: never 0 for a value (0 marks an unused slot and NULL).
/// Equal integers give equal fingerprints whether stored as `int4` or `int8`, so a key of either
/// width finds them.
pub fn fingerprint(attribute: &Attribute) -> u16 {
    let value = match *attribute {
        Attribute::Null => return 0,
        Attribute::Int4(v) => i64::from(v),
        Attribute::Int8(v) => v,
    };
    // A 64-bit mix (SplitMix64's finalizer), folded to 16 bits.
    let mut z = value as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let folded = (z ^ (z >> 16) ^ (z >> 32) ^ (z >> 48)) as u16;
    folded.max(1)
}

/// The attribute an element tuple ends with: the value's 8 bytes (an `int4` widened, in the
/// server's byte order like every page field), then its kind (0 NULL, 1 `int4`, 2 `int8`),
/// then 7 zero bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttributeTail;

impl AttributeTail {
    /// Where the tail starts in an element's data, after a value of `value_len` bytes.
    pub fn offset(value_len: usize) -> usize {
        value_len.next_multiple_of(8)
    }

    /// Bytes of an element's data holding a value of `value_len` bytes and its attribute.
    pub fn data_len(value_len: usize) -> usize {
        Self::offset(value_len) + ATTRIBUTE_TAIL_SIZE
    }

    /// Writes `attribute` into `out` (at least [`ATTRIBUTE_TAIL_SIZE`] bytes).
    pub fn encode(attribute: &Attribute, out: &mut [u8]) {
        let (value, kind) = match *attribute {
            Attribute::Null => (0, KIND_NULL),
            Attribute::Int4(v) => (i64::from(v), KIND_INT4),
            Attribute::Int8(v) => (v, KIND_INT8),
        };
        let out = &mut out[..ATTRIBUTE_TAIL_SIZE];
        out.fill(0);
        out[..8].copy_from_slice(&value.to_ne_bytes());
        out[8] = kind;
    }

    /// The attribute in `tail`; `None` if it is too short, names an unknown kind, or an
    /// `int4` out of its range (a damaged tuple).
    pub fn decode(tail: &[u8]) -> Option<Attribute> {
        let tail = tail.get(..ATTRIBUTE_TAIL_SIZE)?;
        let value = i64::from_ne_bytes(tail[..8].try_into().ok()?);
        if tail[9..].iter().any(|&b| b != 0) {
            return None;
        }
        match tail[8] {
            KIND_NULL if value == 0 => Some(Attribute::Null),
            KIND_INT4 => i32::try_from(value).ok().map(Attribute::Int4),
            KIND_INT8 => Some(Attribute::Int8(value)),
            _ => None,
        }
    }

    /// The attribute after a value of `value_len` bytes in an element's `data`.
    pub fn read(data: &[u8], value_len: usize) -> Option<Attribute> {
        Self::decode(data.get(Self::offset(value_len)..)?)
    }
}

/// Bytes of a composite element tuple whose value is `value_len` bytes: pgvector's element tuple
/// and the tail (the value's padding to 8 bytes is the same in both).
pub const fn element_tuple_size(value_len: usize) -> usize {
    crate::hnsw::element_tuple_size(value_len) + ATTRIBUTE_TAIL_SIZE
}

/// A composite element tuple: `tuple` as pgvector's format encodes it, then `attribute`'s tail.
pub fn encode_element(tuple: &ElementTuple<'_>, attribute: &Attribute) -> Vec<u8> {
    let mut out = vec![0; element_tuple_size(tuple.value.len())];
    tuple.encode(&mut out[..tuple.size()]);
    let at = ELEMENT_HEADER_SIZE + AttributeTail::offset(tuple.value.len());
    AttributeTail::encode(attribute, &mut out[at..]);
    out
}

/// The attribute of a composite element tuple (`None`: no readable value or tail).
pub fn element_attribute(item: &[u8]) -> Option<Attribute> {
    let view = crate::hnsw::ElementView::parse(item).ok()?;
    AttributeTail::read(view.data(), view.value()?.len())
}

/// What vacuum does to a composite element it deletes: as to pgvector's
/// ([`ElementMut::mark_deleted`]), and the whole data part zeroed, the attribute with it.
/// Returns the new version.
pub fn mark_element_deleted(item: &mut [u8]) -> Result<u8, FormatError> {
    let version = ElementMut::parse(item)?.mark_deleted();
    item[ELEMENT_HEADER_SIZE..].fill(0);
    Ok(version)
}

/// The highest level whose composite neighbor tuple (8 bytes a slot) still fits on a page,
/// capped at 63 as pgvector's: 61 at `m` 16 (63 for pgvector's 6-byte slots), 8 at `m` 100.
pub const fn max_level(m: usize) -> u8 {
    let slots = (BLCKSZ
        - maxalign(PAGE_HEADER_SIZE)
        - maxalign(crate::hnsw::OPAQUE_SIZE)
        - NEIGHBOR_HEADER_SIZE
        - ITEM_ID_SIZE)
        / (ITEM_POINTER_SIZE + FINGERPRINT_SIZE)
        / if m == 0 { 1 } else { m };
    let level = slots.saturating_sub(2);
    if level < 63 {
        level as u8
    } else {
        63
    }
}

/// Zeroes every fingerprint of a composite neighbor tuple of `count` slots (vacuum clears the
/// TIDs of a deleted element's tuple with [`crate::hnsw::NeighborMut::clear`]).
pub fn clear_fingerprints(item: &mut [u8], count: usize) -> Result<(), FormatError> {
    for i in 0..count {
        set_slot_fingerprint(item, count, i, 0)?;
    }
    Ok(())
}

/// Bytes of a composite neighbor tuple of `count` slots, `MAXALIGN`ed: pgvector's header and
/// TIDs, then the fingerprints.
pub fn neighbor_tuple_size(count: usize) -> usize {
    maxalign(fingerprints_at(count) + FINGERPRINT_SIZE * count)
}

/// Where the fingerprints of a neighbor tuple of `count` slots start.
pub fn fingerprints_at(count: usize) -> usize {
    NEIGHBOR_HEADER_SIZE + ITEM_POINTER_SIZE * count
}

/// The fingerprint of slot `i` of a composite neighbor tuple of `count` slots; `None` if the
/// item is too short for it.
pub fn slot_fingerprint(item: &[u8], count: usize, i: usize) -> Option<u16> {
    let at = fingerprints_at(count) + FINGERPRINT_SIZE * i;
    (i < count && item.len() >= at + FINGERPRINT_SIZE).then(|| read_u16(item, at))
}

/// Writes the fingerprint of slot `i` of a composite neighbor tuple of `count` slots; an error
/// if the item is too short for `count` slots or `i` is not one of them.
pub fn set_slot_fingerprint(
    item: &mut [u8],
    count: usize,
    i: usize,
    fingerprint: u16,
) -> Result<(), FormatError> {
    if i >= count {
        return Err(FormatError::TooShort {
            what: "composite neighbor tuple slot",
            len: count,
            need: i + 1,
        });
    }
    let need = fingerprints_at(count) + FINGERPRINT_SIZE * count;
    if item.len() < need {
        return Err(FormatError::TooShort {
            what: "composite neighbor tuple",
            len: item.len(),
            need,
        });
    }
    write_u16(
        item,
        fingerprints_at(count) + FINGERPRINT_SIZE * i,
        fingerprint,
    );
    Ok(())
}

/// A composite neighbor tuple: pgvector's (`version`, every slot's TID) and each slot's
/// fingerprint, encoded into `out` (at least [`neighbor_tuple_size`] bytes, zeroed past the
/// tuple).
pub fn encode_neighbor_tuple(
    version: u8,
    tids: &[ItemPointer],
    fingerprints: &[u16],
    out: &mut [u8],
) {
    assert_eq!(tids.len(), fingerprints.len(), "one fingerprint per slot");
    crate::hnsw::NeighborTuple { version, tids }.encode(out);
    for (i, &fp) in fingerprints.iter().enumerate() {
        set_slot_fingerprint(out, tids.len(), i, fp).expect("the caller's buffer holds the tuple");
    }
}

/// The keys a filtered scan tests with: the fingerprints a passing element can have, and the
/// exact check on its attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeFilter {
    /// The accepted values, sorted, without duplicates.
    values: Vec<i64>,
    fingerprints: Vec<u16>,
}

impl AttributeFilter {
    /// Passes elements whose attribute equals one of `values` (a key `attr = c` gives one,
    /// `attr = ANY(array)` the array's values without its NULLs; none passes nothing).
    pub fn any_of(values: impl IntoIterator<Item = i64>) -> Self {
        let mut values: Vec<i64> = values.into_iter().collect();
        values.sort_unstable();
        values.dedup();
        let mut fingerprints: Vec<u16> = values
            .iter()
            .map(|&v| fingerprint(&Attribute::Int8(v)))
            .collect();
        fingerprints.sort_unstable();
        fingerprints.dedup();
        AttributeFilter {
            values,
            fingerprints,
        }
    }

    /// Keeps only what both filters pass (two keys on the attribute).
    pub fn and(&self, other: &AttributeFilter) -> Self {
        AttributeFilter::any_of(
            self.values
                .iter()
                .copied()
                .filter(|v| other.values.binary_search(v).is_ok()),
        )
    }

    /// Whether no element can pass.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether an element whose slot shows `fingerprint` may pass.
    pub fn may_pass(&self, fingerprint: u16) -> bool {
        fingerprint != 0 && self.fingerprints.binary_search(&fingerprint).is_ok()
    }

    /// Whether an element with `attribute` passes.
    pub fn passes(&self, attribute: &Attribute) -> bool {
        let value = match *attribute {
            Attribute::Null => return false,
            Attribute::Int4(v) => i64::from(v),
            Attribute::Int8(v) => v,
        };
        self.values.binary_search(&value).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hnsw::NeighborView;

    #[test]
    fn tails_round_trip_and_refuse_damage() {
        for attribute in [
            Attribute::Null,
            Attribute::Int4(0),
            Attribute::Int4(i32::MIN),
            Attribute::Int4(i32::MAX),
            Attribute::Int8(i64::MIN),
            Attribute::Int8(-1),
        ] {
            let mut data = vec![0xAAu8; AttributeTail::data_len(13)];
            AttributeTail::encode(&attribute, &mut data[AttributeTail::offset(13)..]);
            assert_eq!(AttributeTail::offset(13), 16);
            assert_eq!(AttributeTail::read(&data, 13), Some(attribute));
        }
        let mut tail = [0u8; ATTRIBUTE_TAIL_SIZE];
        AttributeTail::encode(&Attribute::Int8(i64::from(i32::MAX) + 1), &mut tail);
        tail[8] = KIND_INT4;
        assert_eq!(AttributeTail::decode(&tail), None, "int4 out of range");
        tail[8] = 7;
        assert_eq!(AttributeTail::decode(&tail), None, "unknown kind");
        tail[8] = KIND_INT8;
        tail[15] = 1;
        assert_eq!(AttributeTail::decode(&tail), None, "padding not zero");
        assert_eq!(AttributeTail::decode(&tail[..15]), None, "short");
        let mut null = [0u8; ATTRIBUTE_TAIL_SIZE];
        null[0] = 5;
        assert_eq!(AttributeTail::decode(&null), None, "a NULL with a value");
    }

    #[test]
    fn fingerprints_are_never_zero_for_values_and_spread() {
        assert_eq!(fingerprint(&Attribute::Null), 0);
        let mut seen = std::collections::HashSet::new();
        for v in -50_000i64..50_000 {
            let fp = fingerprint(&Attribute::Int8(v));
            assert_ne!(fp, 0);
            assert_eq!(
                i32::try_from(v).map(|v| fingerprint(&Attribute::Int4(v))),
                Ok(fp),
                "int4 and int8 agree"
            );
            seen.insert(fp);
        }
        // 100,000 values over 65,535 fingerprints: a uniform spread leaves about 51,000 used.
        assert!(seen.len() > 48_000, "{} fingerprints used", seen.len());
    }

    #[test]
    fn neighbor_tuples_keep_pgvectors_part_and_add_fingerprints() {
        let tids: Vec<ItemPointer> = (0..48)
            .map(|i| {
                if i < 40 {
                    ItemPointer::new(1 + i / 4, 1 + (i % 4) as u16)
                } else {
                    ItemPointer::INVALID
                }
            })
            .collect();
        let fps: Vec<u16> = (0..48)
            .map(|i| {
                if i < 40 {
                    fingerprint(&Attribute::Int4(i))
                } else {
                    0
                }
            })
            .collect();
        let size = neighbor_tuple_size(tids.len());
        assert_eq!(size, maxalign(4 + 6 * 48 + 2 * 48));
        let mut item = vec![0xFFu8; size];
        encode_neighbor_tuple(3, &tids, &fps, &mut item);
        let view = NeighborView::parse(&item).unwrap();
        assert_eq!(view.version(), 3);
        assert_eq!(view.tids().collect::<Vec<_>>(), tids);
        for (i, &fp) in fps.iter().enumerate() {
            assert_eq!(slot_fingerprint(&item, tids.len(), i), Some(fp));
        }
        assert_eq!(slot_fingerprint(&item, tids.len(), 48), None);
        assert_eq!(slot_fingerprint(&item[..100], tids.len(), 47), None);
        set_slot_fingerprint(&mut item, tids.len(), 5, 77).unwrap();
        assert!(set_slot_fingerprint(&mut item, tids.len(), 48, 1).is_err());
        assert!(set_slot_fingerprint(&mut item[..300], tids.len(), 0, 1).is_err());
        assert!(clear_fingerprints(&mut item[..300], tids.len()).is_err());
        assert_eq!(slot_fingerprint(&item, tids.len(), 5), Some(77));
        let view = NeighborView::parse(&item).unwrap();
        assert_eq!(
            view.tids().collect::<Vec<_>>(),
            tids,
            "the TIDs are left alone"
        );
    }

    #[test]
    fn elements_keep_pgvectors_part_and_end_with_the_attribute() {
        let tids = [ItemPointer::new(7, 3), ItemPointer::new(9, 1)];
        for value_len in [12usize, 16, 21] {
            let mut value = vec![0u8; value_len];
            value[..4].copy_from_slice(&((value_len as u32) << 2).to_le_bytes());
            value[4..]
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = i as u8 + 1);
            let tuple = ElementTuple {
                level: 2,
                deleted: 0,
                version: 5,
                heap_tids: &tids,
                neighbor_tid: ItemPointer::new(7, 4),
                value: &value,
            };
            let attribute = Attribute::Int4(-77);
            let mut item = encode_element(&tuple, &attribute);
            assert_eq!(item.len(), element_tuple_size(value_len));
            assert_eq!(item.len(), maxalign(ELEMENT_HEADER_SIZE + value_len) + 16);
            assert_eq!(
                &item[..tuple.size()],
                &tuple.to_vec()[..],
                "pgvector's part"
            );
            let view = crate::hnsw::ElementView::parse(&item).unwrap();
            assert_eq!(view.value(), Some(&value[..]));
            assert_eq!(view.heap_tids().collect::<Vec<_>>(), tids);
            assert_eq!(element_attribute(&item), Some(attribute));
            let version = mark_element_deleted(&mut item).unwrap();
            assert_eq!(version, 6);
            let view = crate::hnsw::ElementView::parse(&item).unwrap();
            assert!(view.deleted());
            assert!(view.data().iter().all(|&b| b == 0), "value and tail zeroed");
            assert_eq!(element_attribute(&item), None);
        }
    }

    #[test]
    fn composite_levels_leave_room_for_fingerprints() {
        assert_eq!(max_level(16), 61);
        assert_eq!(max_level(100), 8);
        assert_eq!(max_level(2), 63);
        assert_eq!(max_level(1000), 0, "no underflow past the widest m");
        for m in [2usize, 5, 16, 48, 100] {
            let count = crate::hnsw::neighbor_count(max_level(m), m);
            let room =
                BLCKSZ - maxalign(PAGE_HEADER_SIZE) - crate::hnsw::OPAQUE_SIZE - ITEM_ID_SIZE;
            assert!(
                neighbor_tuple_size(count) <= room,
                "m {m}: the top level's tuple fits"
            );
            assert!(max_level(m) <= crate::hnsw::max_level(m));
        }
        let mut item = vec![0u8; neighbor_tuple_size(4)];
        encode_neighbor_tuple(1, &[ItemPointer::new(1, 1); 4], &[9, 8, 7, 6], &mut item);
        clear_fingerprints(&mut item, 4).unwrap();
        assert!((0..4).all(|i| slot_fingerprint(&item, 4, i) == Some(0)));
    }

    #[test]
    fn filters_match_fingerprints_then_values() {
        let filter = AttributeFilter::any_of([3, 9, 3, -4]);
        for v in [3, 9, -4] {
            assert!(filter.may_pass(fingerprint(&Attribute::Int4(v))));
            assert!(filter.passes(&Attribute::Int4(v)));
            assert!(filter.passes(&Attribute::Int8(i64::from(v))));
        }
        assert!(!filter.passes(&Attribute::Int4(4)));
        assert!(!filter.passes(&Attribute::Null));
        assert!(!filter.may_pass(0), "unused slots and NULLs never pass");
        let false_matches = (10..100_000)
            .filter(|&v| filter.may_pass(fingerprint(&Attribute::Int8(v))))
            .count();
        assert!(false_matches < 20, "{false_matches} false matches");
        let both = filter.and(&AttributeFilter::any_of([9, 10]));
        assert!(both.passes(&Attribute::Int4(9)) && !both.passes(&Attribute::Int4(3)));
        assert!(AttributeFilter::any_of([1])
            .and(&AttributeFilter::any_of([2]))
            .is_empty());
        assert!(AttributeFilter::any_of(std::iter::empty()).is_empty());
    }
}
