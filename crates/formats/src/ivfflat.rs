//! The on-disk format of pgvector 0.8.6's `ivfflat` indexes, byte for byte.
//!
//! Plain Rust over byte slices, like the HNSW format. Every page is a standard page whose
//! special space is pgvector's chain special space ([`ChainOpaque`]) with the page id `0xFF84`.
//!
//! * Block 0, the metapage: [`MetaPage`] (magic, version, dimensions, lists) at
//!   `PageGetContents`, `pd_lower` just past it.
//! * Blocks 1.. (a chain): the list pages. Each item is a list tuple ([`ListTuple`]): the first
//!   entry page of the list, the entry page inserts start from, and the list's center as a
//!   4-byte-header varlena, zero-padded to a fixed size. A list keeps its place (block,
//!   offset) for the life of the index; only its two block numbers change.
//! * The entry pages: one chain per list, from its start page. Each item is a standard index
//!   tuple (`index_form_tuple`: the heap TID, then the value, with a short varlena header when
//!   it fits one), formed and read through Postgres.

use crate::page::{
    maxalign, read_u16, read_u32, write_u16, write_u32, BlockNumber, ChainOpaque, ItemPointer,
    BLCKSZ, CHAIN_OPAQUE_SIZE, ITEM_ID_SIZE, PAGE_HEADER_SIZE,
};

/// `IVFFLAT_MAGIC_NUMBER`.
pub const MAGIC_NUMBER: u32 = 0x014F_F1A7;
/// `IVFFLAT_VERSION`.
pub const VERSION: u32 = 1;
/// `IVFFLAT_PAGE_ID`.
pub const PAGE_ID: u16 = 0xFF84;
/// `IVFFLAT_METAPAGE_BLKNO`.
pub const METAPAGE_BLKNO: BlockNumber = 0;
/// `IVFFLAT_HEAD_BLKNO`: the first list page.
pub const HEAD_BLKNO: BlockNumber = 1;
/// Size of the special space.
pub const OPAQUE_SIZE: usize = CHAIN_OPAQUE_SIZE;

/// `IVFFLAT_DEFAULT_LISTS`, `IVFFLAT_MIN_LISTS`, `IVFFLAT_MAX_LISTS`.
pub const DEFAULT_LISTS: i32 = 100;
pub const MIN_LISTS: i32 = 1;
pub const MAX_LISTS: i32 = 32768;

/// What `IvfflatInitPage` writes in the special space.
pub const fn new_opaque() -> ChainOpaque {
    ChainOpaque::new(PAGE_ID)
}

/// Bytes of the metapage's contents.
pub const META_SIZE: usize = 12;
/// `pd_lower` of the metapage.
pub const META_PD_LOWER: usize = maxalign(PAGE_HEADER_SIZE) + META_SIZE;

/// `IvfflatMetaPageData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaPage {
    pub magic: u32,
    pub version: u32,
    /// The column's dimensions (bits for `bit`).
    pub dimensions: u16,
    pub lists: u16,
}

impl MetaPage {
    pub fn new(dimensions: u16, lists: u16) -> Self {
        MetaPage {
            magic: MAGIC_NUMBER,
            version: VERSION,
            dimensions,
            lists,
        }
    }

    /// Reads the metapage's contents; `None` unless it is an ivfflat metapage (pgvector
    /// checks the magic number only).
    pub fn decode(contents: &[u8]) -> Option<Self> {
        if contents.len() < META_SIZE {
            return None;
        }
        let meta = MetaPage {
            magic: read_u32(contents, 0),
            version: read_u32(contents, 4),
            dimensions: read_u16(contents, 8),
            lists: read_u16(contents, 10),
        };
        (meta.magic == MAGIC_NUMBER).then_some(meta)
    }

    pub fn encode(&self, contents: &mut [u8]) {
        write_u32(contents, 0, self.magic);
        write_u32(contents, 4, self.version);
        write_u16(contents, 8, self.dimensions);
        write_u16(contents, 10, self.lists);
    }
}

/// Offset of the center in a list tuple.
pub const LIST_CENTER: usize = 8;

/// The size of a list tuple whose center varlena is `center_size` bytes at most:
/// `MAXALIGN(8 + MAXALIGN(center_size))`.
pub const fn list_tuple_size(center_size: usize) -> usize {
    maxalign(LIST_CENTER + maxalign(center_size))
}

/// List tuples that fit on one page (`PageGetFreeSpace` leaves room for a line pointer).
pub const fn lists_per_page(tuple_size: usize) -> usize {
    (BLCKSZ - PAGE_HEADER_SIZE - maxalign(OPAQUE_SIZE)) / (tuple_size + ITEM_ID_SIZE)
}

/// A list tuple (`IvfflatListData`), borrowed from a page.
#[derive(Clone, Copy, Debug)]
pub struct ListTuple<'a> {
    bytes: &'a [u8],
}

/// A list tuple whose center does not fit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadListTuple;

impl<'a> ListTuple<'a> {
    /// Checks that the item holds both block numbers and a 4-byte-header center within it.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BadListTuple> {
        if bytes.len() < LIST_CENTER + 4 {
            return Err(BadListTuple);
        }
        let header = read_u32(bytes, LIST_CENTER);
        // A 4-byte uncompressed varlena header (little-endian: the low two bits are 0).
        if header & 0x3 != 0 {
            return Err(BadListTuple);
        }
        let size = (header >> 2) as usize;
        if size < 4 || LIST_CENTER + size > bytes.len() {
            return Err(BadListTuple);
        }
        Ok(ListTuple { bytes })
    }

    pub fn start_page(&self) -> BlockNumber {
        read_u32(self.bytes, 0)
    }

    pub fn insert_page(&self) -> BlockNumber {
        read_u32(self.bytes, 4)
    }

    /// The center, a varlena with its 4-byte header.
    pub fn center(&self) -> &'a [u8] {
        let size = (read_u32(self.bytes, LIST_CENTER) >> 2) as usize;
        &self.bytes[LIST_CENTER..LIST_CENTER + size]
    }
}

/// A list tuple to write: `size` bytes ([`list_tuple_size`]), zero past the center.
pub fn encode_list_tuple(
    start_page: BlockNumber,
    insert_page: BlockNumber,
    center: &[u8],
    size: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; size];
    write_u32(&mut out, 0, start_page);
    write_u32(&mut out, 4, insert_page);
    out[LIST_CENTER..LIST_CENTER + center.len()].copy_from_slice(center);
    out
}

/// Sets the start page of an encoded list tuple.
pub fn set_start_page(tuple: &mut [u8], block: BlockNumber) {
    write_u32(tuple, 0, block);
}

/// Sets the insert page of an encoded list tuple.
pub fn set_insert_page(tuple: &mut [u8], block: BlockNumber) {
    write_u32(tuple, 4, block);
}

/// Where an entry tuple's value is (an `IndexTuple` of one varlena column, never NULL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryValue {
    /// A plain varlena with a 4-byte header: `item[at..at + len]`.
    Plain { at: usize, len: usize },
    /// A short (1-byte header) varlena: its data after the header byte is
    /// `item[at..at + len]`.
    Short { at: usize, len: usize },
    /// Compressed (or otherwise not plain): only Postgres can detoast it.
    Packed { at: usize },
}

/// An entry tuple that does not hold what its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadEntry;

/// `IndexTupleData`'s header: the heap TID, then `t_info` (size in the low 13 bits).
const INDEX_TUPLE_HEADER: usize = 8;
const INDEX_NULL_MASK: u16 = 0x8000;
const INDEX_SIZE_MASK: u16 = 0x1FFF;

/// The heap TID and the value of an entry tuple (pgvector stores no NULLs, so the value is at
/// `MAXALIGN(8)`). Varlena headers are read as little-endian Postgres lays them out.
#[cfg(target_endian = "little")]
pub fn parse_entry(item: &[u8]) -> Result<(ItemPointer, EntryValue), BadEntry> {
    if item.len() < INDEX_TUPLE_HEADER + 1 {
        return Err(BadEntry);
    }
    let info = read_u16(item, 6);
    let size = usize::from(info & INDEX_SIZE_MASK);
    if info & INDEX_NULL_MASK != 0 || size > item.len() || size < INDEX_TUPLE_HEADER + 1 {
        return Err(BadEntry);
    }
    let tid = ItemPointer::decode(item);
    let at = INDEX_TUPLE_HEADER;
    let first = item[at];
    let value = if first & 0x01 == 0x01 {
        // 1-byte header: length (header included) in the upper seven bits; 0x01 alone is an
        // external pointer, which an index never holds.
        let len = usize::from(first >> 1);
        if first == 0x01 || len < 1 || at + len > size {
            return Err(BadEntry);
        }
        EntryValue::Short {
            at: at + 1,
            len: len - 1,
        }
    } else {
        if at + 4 > size {
            return Err(BadEntry);
        }
        let header = read_u32(item, at);
        let len = (header >> 2) as usize;
        if len < 4 || at + len > size {
            return Err(BadEntry);
        }
        if header & 0x3 == 0 {
            EntryValue::Plain { at, len }
        } else {
            EntryValue::Packed { at }
        }
    };
    Ok((tid, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_pgvector() {
        // vector(3): center 8 + 12 = 20 -> 8 + 24 = 32 bytes, 226 per page.
        assert_eq!(list_tuple_size(20), 32);
        assert_eq!(lists_per_page(32), 226);
        assert_eq!(lists_per_page(list_tuple_size(8 + 4 * 128)), 15);
        assert_eq!(lists_per_page(list_tuple_size(8 + 4 * 768)), 2);
        assert_eq!(lists_per_page(list_tuple_size(8 + 4 * 1024)), 1);
        assert_eq!(META_PD_LOWER, 36);
    }

    #[test]
    fn list_tuple_round_trip() {
        let mut center = vec![0u8; 20];
        write_u32(&mut center, 0, 20 << 2);
        write_u16(&mut center, 4, 3);
        let bytes = encode_list_tuple(7, 9, &center, 32);
        let t = ListTuple::parse(&bytes).unwrap();
        assert_eq!((t.start_page(), t.insert_page()), (7, 9));
        assert_eq!(t.center(), &center[..]);
        assert!(ListTuple::parse(&bytes[..20]).is_err());
        let mut short = bytes.clone();
        write_u32(&mut short, LIST_CENTER, 200 << 2);
        assert!(ListTuple::parse(&short).is_err());
    }

    #[test]
    fn entries() {
        // A vector(3) entry as index_form_tuple writes it: TID (0,5), size 32, 4-byte header.
        let mut item = vec![0u8; 32];
        ItemPointer::new(0, 5).encode(&mut item);
        write_u16(&mut item, 6, 32 | 0x4000);
        write_u32(&mut item, 8, 20 << 2);
        let (tid, value) = parse_entry(&item).unwrap();
        assert_eq!(tid, ItemPointer::new(0, 5));
        assert_eq!(value, EntryValue::Plain { at: 8, len: 20 });
        // A short header: 1 + 16 bytes.
        item[8] = (17 << 1) | 1;
        assert_eq!(
            parse_entry(&item).unwrap().1,
            EntryValue::Short { at: 9, len: 16 }
        );
        // Lengths past the tuple, external pointers, NULLs.
        item[8] = (60 << 1) | 1;
        assert_eq!(parse_entry(&item), Err(BadEntry));
        item[8] = 1;
        assert_eq!(parse_entry(&item), Err(BadEntry));
        write_u32(&mut item, 8, 20 << 2);
        write_u16(&mut item, 6, 32 | 0x8000);
        assert_eq!(parse_entry(&item), Err(BadEntry));
        assert_eq!(parse_entry(&item[..4]), Err(BadEntry));
    }

    #[test]
    fn metapage_round_trip() {
        let mut contents = [0u8; META_SIZE];
        MetaPage::new(3, 100).encode(&mut contents);
        assert_eq!(contents[..4], [0xA7, 0xF1, 0x4F, 0x01]);
        assert_eq!(MetaPage::decode(&contents), Some(MetaPage::new(3, 100)));
        contents[0] = 0;
        assert_eq!(MetaPage::decode(&contents), None);
    }
}
