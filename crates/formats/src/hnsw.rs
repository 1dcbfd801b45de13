//! The on-disk format of pgvector 0.8.6's `hnsw` indexes, byte for byte.
//!
//! Plain Rust over byte slices: nothing here calls Postgres, so indexes built by pgvector are
//! read as they are and pages written here are read by pgvector. The generic page frame (header,
//! line pointers, TIDs) is in [`crate::page`]; this module covers what pgvector puts in
//! it.
//!
//! # Layout
//!
//! Every page, the metapage included, is a standard page with an 8-byte special space
//! ([`PageOpaque`]): the next element page in the chain and the page id `0xFF90`.
//!
//! * Block 0 is the metapage: [`MetaPage`] at `PageGetContents`, `pd_lower` just past it, no
//!   items.
//! * Blocks from 1 on form a chain (`next_blkno`) of element pages holding two kinds of items,
//!   told apart by their first byte:
//!   * an element tuple ([`ElementView`]): level, deleted flag, version, up to ten heap TIDs, the
//!     TID of its neighbor tuple, then the indexed value as a plain 4-byte-header varlena;
//!   * a neighbor tuple ([`NeighborView`]): version, count, then `count` index TIDs,
//!     `(level + 2) * m` of them: `m` slots for each layer from the element's top layer down to
//!     layer 1, then `2 * m` for layer 0. Unused slots hold the invalid TID.
//!
//! An element's neighbor tuple is normally the next item on the same page; when both do not fit
//! on one page it is the first item of the next block. Both tuples are `MAXALIGN`ed: their
//! line pointers carry the rounded length.
//!
//! A deleted element keeps its slot: `deleted` is 1, its value bytes (as long as the varlena
//! said) are zero, its heap TIDs and neighbor slots are invalid, and the version of both tuples
//! has moved on ([`next_version`]). Inserts later overwrite such slots in place.

use crate::page::{
    maxalign, read_u16, read_u32, write_u16, write_u32, BlockNumber, ChainOpaque, ItemPointer,
    OffsetNumber, BLCKSZ, INVALID_BLOCK_NUMBER, INVALID_OFFSET_NUMBER, ITEM_ID_SIZE,
    ITEM_POINTER_SIZE, PAGE_HEADER_SIZE,
};
use std::fmt;

/// `HNSW_MAGIC_NUMBER`, the first word of the metapage.
pub const MAGIC_NUMBER: u32 = 0xA953_A953;
/// The first word of a quantized index's metapage (ours alone: [`crate::hnsw_codes`]), which
/// pgvector refuses as not valid.
pub const QUANTIZED_MAGIC_NUMBER: u32 = 0xA953_C0DE;
/// `HNSW_VERSION`, the metapage format version.
pub const VERSION: u32 = 1;
/// `HNSW_PAGE_ID`, in the special space of every page.
pub const PAGE_ID: u16 = 0xFF90;

/// `HNSW_METAPAGE_BLKNO`.
pub const METAPAGE_BLKNO: BlockNumber = 0;
/// `HNSW_HEAD_BLKNO`: the first element page.
pub const HEAD_BLKNO: BlockNumber = 1;
/// `HNSW_UPDATE_LOCK`: block number used as the heavyweight page lock that serializes inserts
/// changing the entry point against vacuum.
pub const UPDATE_LOCK: BlockNumber = 0;
/// `HNSW_SCAN_LOCK`: block number used as the heavyweight page lock between scans and vacuum.
pub const SCAN_LOCK: BlockNumber = 1;

/// `HNSW_ELEMENT_TUPLE_TYPE`.
pub const ELEMENT_TUPLE_TYPE: u8 = 1;
/// `HNSW_NEIGHBOR_TUPLE_TYPE`.
pub const NEIGHBOR_TUPLE_TYPE: u8 = 2;
/// `HNSW_HEAPTIDS`: heap TIDs one element tuple can hold (rows with equal values share it).
pub const HEAPTIDS: usize = 10;

/// `HNSW_MIN_M`.
pub const MIN_M: usize = 2;
/// `HNSW_MAX_M`.
pub const MAX_M: usize = 100;

/// `sizeof(HnswPageOpaqueData)`.
pub const OPAQUE_SIZE: usize = crate::page::CHAIN_OPAQUE_SIZE;
/// `sizeof(HnswMetaPageData)`.
pub const META_SIZE: usize = 28;
/// `pd_lower` of the metapage: the end of [`MetaPage`].
pub const META_PD_LOWER: u16 = (maxalign(PAGE_HEADER_SIZE) + META_SIZE) as u16;
/// `offsetof(HnswElementTupleData, data)`: where the value starts in an element tuple.
pub const ELEMENT_HEADER_SIZE: usize = 72;
/// `offsetof(HnswNeighborTupleData, indextids)`.
pub const NEIGHBOR_HEADER_SIZE: usize = 4;
/// `HNSW_MAX_SIZE`: the largest item one page can take.
pub const MAX_ITEM_SIZE: usize =
    BLCKSZ - maxalign(PAGE_HEADER_SIZE) - maxalign(OPAQUE_SIZE) - ITEM_ID_SIZE;
/// Largest version number a tuple gets; [`next_version`] wraps back to 1 after it.
pub const MAX_TUPLE_VERSION: u8 = 15;

// Field offsets inside the structures.
const META_MAGIC: usize = 0;
const META_VERSION: usize = 4;
const META_DIMENSIONS: usize = 8;
const META_M: usize = 12;
const META_EF_CONSTRUCTION: usize = 14;
const META_ENTRY_BLKNO: usize = 16;
const META_ENTRY_OFFNO: usize = 20;
const META_ENTRY_LEVEL: usize = 22;
const META_INSERT_PAGE: usize = 24;

const ELEMENT_TYPE: usize = 0;
const ELEMENT_LEVEL: usize = 1;
const ELEMENT_DELETED: usize = 2;
const ELEMENT_VERSION: usize = 3;
const ELEMENT_HEAPTIDS: usize = 4;
const ELEMENT_NEIGHBORTID: usize = ELEMENT_HEAPTIDS + HEAPTIDS * ITEM_POINTER_SIZE;
const ELEMENT_UNUSED: usize = ELEMENT_NEIGHBORTID + ITEM_POINTER_SIZE;

const NEIGHBOR_TYPE: usize = 0;
const NEIGHBOR_VERSION: usize = 1;
const NEIGHBOR_COUNT: usize = 2;

const _: () = assert!(ELEMENT_UNUSED + 2 == ELEMENT_HEADER_SIZE);

/// Why bytes could not be read as an HNSW structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// Fewer bytes than the structure needs.
    TooShort {
        what: &'static str,
        len: usize,
        need: usize,
    },
    /// The metapage does not start with [`MAGIC_NUMBER`].
    BadMagic(u32),
    /// The item's first byte is not the expected tuple type.
    WrongTupleType { expected: u8, found: u8 },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::TooShort { what, len, need } => {
                write!(f, "hnsw {what} is {len} bytes, needs {need}")
            }
            FormatError::BadMagic(found) => write!(f, "hnsw metapage magic number is {found:#x}"),
            FormatError::WrongTupleType { expected, found } => {
                write!(f, "hnsw tuple type is {found}, expected {expected}")
            }
        }
    }
}

impl std::error::Error for FormatError {}

fn need(what: &'static str, bytes: &[u8], need: usize) -> Result<(), FormatError> {
    if bytes.len() < need {
        Err(FormatError::TooShort {
            what,
            len: bytes.len(),
            need,
        })
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes and neighbor list shape
// ---------------------------------------------------------------------------------------------

/// `HNSW_ELEMENT_TUPLE_SIZE`: bytes of an element tuple whose value varlena is `value_len` bytes.
pub const fn element_tuple_size(value_len: usize) -> usize {
    maxalign(ELEMENT_HEADER_SIZE + value_len)
}

/// Neighbor slots of an element whose top layer is `level`: `(level + 2) * m`.
pub const fn neighbor_count(level: u8, m: usize) -> usize {
    (level as usize + 2) * m
}

/// `HNSW_NEIGHBOR_TUPLE_SIZE`: bytes of the neighbor tuple of an element at `level`.
pub const fn neighbor_tuple_size(level: u8, m: usize) -> usize {
    maxalign(NEIGHBOR_HEADER_SIZE + ITEM_POINTER_SIZE * neighbor_count(level, m))
}

/// `HnswGetLayerM`: neighbor slots on `layer` (`2 * m` on layer 0, `m` above).
#[inline]
pub const fn layer_m(m: usize, layer: u8) -> usize {
    if layer == 0 {
        2 * m
    } else {
        m
    }
}

/// The slots of `layer` inside the neighbor tuple of an element whose top layer is `level`
/// (layers are stored from the top down). Panics if `layer > level`.
#[inline]
pub fn layer_slots(level: u8, m: usize, layer: u8) -> std::ops::Range<usize> {
    assert!(layer <= level, "layer {layer} above element level {level}");
    let start = usize::from(level - layer) * m;
    start..start + layer_m(m, layer)
}

/// `HnswGetMaxLevel`: the highest level whose neighbor tuple still fits on a page, capped at 63.
pub const fn max_level(m: usize) -> u8 {
    let slots = (BLCKSZ
        - maxalign(PAGE_HEADER_SIZE)
        - maxalign(OPAQUE_SIZE)
        - NEIGHBOR_HEADER_SIZE
        - ITEM_ID_SIZE)
        / ITEM_POINTER_SIZE
        / m;
    let level = slots - 2;
    if level < 63 {
        level as u8
    } else {
        63
    }
}

/// Bytes an element tuple and its neighbor tuple take on one page, line pointers included.
/// pgvector keeps them together when this is at most [`MAX_ITEM_SIZE`].
pub const fn combined_size(element_size: usize, neighbor_size: usize) -> usize {
    element_size + neighbor_size + ITEM_ID_SIZE
}

/// The version vacuum gives a slot when it deletes the element in it: one more, wrapping from
/// [`MAX_TUPLE_VERSION`] back to 1 (0 is never used).
pub const fn next_version(version: u8) -> u8 {
    if version >= MAX_TUPLE_VERSION {
        1
    } else {
        version + 1
    }
}

// ---------------------------------------------------------------------------------------------
// Special space
// ---------------------------------------------------------------------------------------------

/// `HnswPageOpaqueData`, the special space of every page: pgvector's chain special space
/// ([`ChainOpaque`]) with [`PAGE_ID`].
pub type PageOpaque = ChainOpaque;

/// What `HnswInitPage` writes in the special space.
pub const fn new_opaque() -> PageOpaque {
    ChainOpaque::new(PAGE_ID)
}

// ---------------------------------------------------------------------------------------------
// Metapage
// ---------------------------------------------------------------------------------------------

/// Where searches start, as recorded in the metapage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    pub tid: ItemPointer,
    pub level: u8,
}

/// `HnswMetaPageData`, at `PageGetContents` of block 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaPage {
    pub magic_number: u32,
    pub version: u32,
    pub dimensions: u32,
    pub m: u16,
    pub ef_construction: u16,
    /// Block of the entry point's element tuple, [`INVALID_BLOCK_NUMBER`] for an empty graph.
    pub entry_blkno: BlockNumber,
    pub entry_offno: OffsetNumber,
    /// Level of the entry point, -1 for an empty graph.
    pub entry_level: i16,
    /// Element page where inserts start looking for space ([`INVALID_BLOCK_NUMBER`] until the
    /// build has written the graph).
    pub insert_page: BlockNumber,
}

impl MetaPage {
    /// The metapage a build starts with: no entry point, no insert page.
    pub const fn new(dimensions: u32, m: u16, ef_construction: u16) -> Self {
        MetaPage {
            magic_number: MAGIC_NUMBER,
            version: VERSION,
            dimensions,
            m,
            ef_construction,
            entry_blkno: INVALID_BLOCK_NUMBER,
            entry_offno: INVALID_OFFSET_NUMBER,
            entry_level: -1,
            insert_page: INVALID_BLOCK_NUMBER,
        }
    }

    /// Reads the metapage from the page contents, checking the magic number (pgvector's, or a
    /// quantized index's: see [`crate::hnsw_codes`]).
    pub fn decode(contents: &[u8]) -> Result<Self, FormatError> {
        need("metapage", contents, META_SIZE)?;
        let meta = MetaPage {
            magic_number: read_u32(contents, META_MAGIC),
            version: read_u32(contents, META_VERSION),
            dimensions: read_u32(contents, META_DIMENSIONS),
            m: read_u16(contents, META_M),
            ef_construction: read_u16(contents, META_EF_CONSTRUCTION),
            entry_blkno: read_u32(contents, META_ENTRY_BLKNO),
            entry_offno: read_u16(contents, META_ENTRY_OFFNO),
            entry_level: read_u16(contents, META_ENTRY_LEVEL) as i16,
            insert_page: read_u32(contents, META_INSERT_PAGE),
        };
        if meta.magic_number != MAGIC_NUMBER && meta.magic_number != QUANTIZED_MAGIC_NUMBER {
            return Err(FormatError::BadMagic(meta.magic_number));
        }
        Ok(meta)
    }

    /// Whether this is a quantized index's metapage (its quantizer follows, see
    /// [`crate::hnsw_codes::QuantizerMeta`]).
    pub fn is_quantized(&self) -> bool {
        self.magic_number == QUANTIZED_MAGIC_NUMBER
    }

    /// Writes all [`META_SIZE`] bytes at the start of `contents`.
    pub fn encode(&self, contents: &mut [u8]) {
        write_u32(contents, META_MAGIC, self.magic_number);
        write_u32(contents, META_VERSION, self.version);
        write_u32(contents, META_DIMENSIONS, self.dimensions);
        write_u16(contents, META_M, self.m);
        write_u16(contents, META_EF_CONSTRUCTION, self.ef_construction);
        write_u32(contents, META_ENTRY_BLKNO, self.entry_blkno);
        write_u16(contents, META_ENTRY_OFFNO, self.entry_offno);
        write_u16(contents, META_ENTRY_LEVEL, self.entry_level as u16);
        write_u32(contents, META_INSERT_PAGE, self.insert_page);
    }

    /// The entry point, `None` while the graph is empty (invalid block).
    pub fn entry_point(&self) -> Option<EntryPoint> {
        if self.entry_blkno == INVALID_BLOCK_NUMBER {
            None
        } else {
            Some(EntryPoint {
                tid: ItemPointer::new(self.entry_blkno, self.entry_offno),
                level: self.entry_level.clamp(0, i16::from(u8::MAX)) as u8,
            })
        }
    }

    /// Records `entry` (`None` clears it: invalid block and offset, level -1).
    pub fn set_entry_point(&mut self, entry: Option<EntryPoint>) {
        match entry {
            None => {
                self.entry_blkno = INVALID_BLOCK_NUMBER;
                self.entry_offno = INVALID_OFFSET_NUMBER;
                self.entry_level = -1;
            }
            Some(e) => {
                self.entry_blkno = e.tid.block;
                self.entry_offno = e.tid.offset;
                self.entry_level = i16::from(e.level);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tuples
// ---------------------------------------------------------------------------------------------

/// Which tuple an item on an element page holds, from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TupleKind {
    Element,
    Neighbor,
    /// Anything else; a build writes all-zero placeholders for neighbor tuples before it fills
    /// them in, so a finished index has none of these.
    Other(u8),
}

/// The kind of tuple `item` holds.
#[inline]
pub fn tuple_kind(item: &[u8]) -> TupleKind {
    match item.first() {
        Some(&ELEMENT_TUPLE_TYPE) => TupleKind::Element,
        Some(&NEIGHBOR_TUPLE_TYPE) => TupleKind::Neighbor,
        Some(&other) => TupleKind::Other(other),
        None => TupleKind::Other(0),
    }
}

/// The size of a plain 4-byte-header varlena (at least its header), `None` for any other.
#[inline]
fn varlena_size(bytes: &[u8]) -> Option<usize> {
    crate::varlena::varsize_4b(bytes).filter(|&size| size >= 4)
}

/// An element tuple read in place.
#[derive(Clone, Copy)]
pub struct ElementView<'a> {
    bytes: &'a [u8],
}

impl<'a> ElementView<'a> {
    /// Checks the type byte and the fixed part's length.
    #[inline]
    pub fn parse(item: &'a [u8]) -> Result<Self, FormatError> {
        need("element tuple", item, ELEMENT_HEADER_SIZE)?;
        if item[ELEMENT_TYPE] != ELEMENT_TUPLE_TYPE {
            return Err(FormatError::WrongTupleType {
                expected: ELEMENT_TUPLE_TYPE,
                found: item[ELEMENT_TYPE],
            });
        }
        Ok(ElementView { bytes: item })
    }

    /// The whole item.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Top layer of the element.
    #[inline]
    pub fn level(&self) -> u8 {
        self.bytes[ELEMENT_LEVEL]
    }

    /// The raw `deleted` byte (pgvector writes 0 or 1).
    #[inline]
    pub fn deleted_byte(&self) -> u8 {
        self.bytes[ELEMENT_DELETED]
    }

    #[inline]
    pub fn deleted(&self) -> bool {
        self.deleted_byte() != 0
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes[ELEMENT_VERSION]
    }

    /// Heap TID slot `i` (`i < HEAPTIDS`), valid or not.
    #[inline]
    pub fn heap_tid(&self, i: usize) -> ItemPointer {
        assert!(i < HEAPTIDS);
        ItemPointer::decode(&self.bytes[ELEMENT_HEAPTIDS + i * ITEM_POINTER_SIZE..])
    }

    /// The heap TIDs in use: the slots before the first invalid one, as pgvector reads them.
    #[inline]
    pub fn heap_tids(&self) -> impl Iterator<Item = ItemPointer> + 'a {
        let view = *self;
        (0..HEAPTIDS)
            .map(move |i| view.heap_tid(i))
            .take_while(ItemPointer::is_valid)
    }

    /// No heap TID left: vacuum is about to delete the element.
    #[inline]
    pub fn has_no_heap_tids(&self) -> bool {
        !self.heap_tid(0).is_valid()
    }

    /// Where the element's neighbor tuple is.
    #[inline]
    pub fn neighbor_tid(&self) -> ItemPointer {
        ItemPointer::decode(&self.bytes[ELEMENT_NEIGHBORTID..])
    }

    /// The padding field after the neighbor TID (always 0).
    pub fn unused(&self) -> u16 {
        read_u16(self.bytes, ELEMENT_UNUSED)
    }

    /// Everything after the fixed part: the value varlena, then alignment padding.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        &self.bytes[ELEMENT_HEADER_SIZE..]
    }

    /// The value as a varlena (header included), `None` if its header is not a plain 4-byte
    /// one or claims more bytes than the item has (as for a deleted element, whose value is
    /// zeroed).
    #[inline]
    pub fn value(&self) -> Option<&'a [u8]> {
        let data = self.data();
        let size = varlena_size(data)?;
        data.get(..size)
    }
}

impl fmt::Debug for ElementView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElementView")
            .field("level", &self.level())
            .field("deleted", &self.deleted_byte())
            .field("version", &self.version())
            .field("heap_tids", &self.heap_tids().collect::<Vec<_>>())
            .field("neighbor_tid", &self.neighbor_tid())
            .field("value_len", &self.value().map(<[u8]>::len))
            .finish()
    }
}

/// The fields of an element tuple, for writing one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementTuple<'a> {
    pub level: u8,
    /// The raw `deleted` byte: 0, or 1 once vacuum has deleted the element.
    pub deleted: u8,
    pub version: u8,
    /// The heap TIDs in use (at most [`HEAPTIDS`]); the other slots are written invalid.
    pub heap_tids: &'a [ItemPointer],
    pub neighbor_tid: ItemPointer,
    /// The value varlena, header included.
    pub value: &'a [u8],
}

impl ElementTuple<'_> {
    /// Bytes [`encode`](Self::encode) writes: [`element_tuple_size`] of the value.
    pub fn size(&self) -> usize {
        element_tuple_size(self.value.len())
    }

    /// Writes the tuple into `out` and zeroes the rest of it. `out` must be at least
    /// [`size`](Self::size) bytes; pass exactly that many to get the item to add to a page.
    pub fn encode(&self, out: &mut [u8]) {
        assert!(self.heap_tids.len() <= HEAPTIDS, "too many heap TIDs");
        assert!(out.len() >= ELEMENT_HEADER_SIZE + self.value.len());
        out.fill(0);
        out[ELEMENT_TYPE] = ELEMENT_TUPLE_TYPE;
        out[ELEMENT_LEVEL] = self.level;
        out[ELEMENT_DELETED] = self.deleted;
        out[ELEMENT_VERSION] = self.version;
        for i in 0..HEAPTIDS {
            let tid = self
                .heap_tids
                .get(i)
                .copied()
                .unwrap_or(ItemPointer::INVALID);
            tid.encode(&mut out[ELEMENT_HEAPTIDS + i * ITEM_POINTER_SIZE..]);
        }
        self.neighbor_tid
            .encode(&mut out[ELEMENT_NEIGHBORTID..ELEMENT_UNUSED]);
        out[ELEMENT_HEADER_SIZE..ELEMENT_HEADER_SIZE + self.value.len()]
            .copy_from_slice(self.value);
    }

    /// The encoded tuple in a new buffer of [`size`](Self::size) bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0; self.size()];
        self.encode(&mut out);
        out
    }
}

/// In-place changes to an element tuple on a page, as vacuum and inserts make them.
pub struct ElementMut<'a> {
    bytes: &'a mut [u8],
}

impl<'a> ElementMut<'a> {
    #[inline]
    pub fn parse(item: &'a mut [u8]) -> Result<Self, FormatError> {
        ElementView::parse(item)?;
        Ok(ElementMut { bytes: item })
    }

    pub fn view(&self) -> ElementView<'_> {
        ElementView { bytes: self.bytes }
    }

    pub fn set_version(&mut self, version: u8) {
        self.bytes[ELEMENT_VERSION] = version;
    }

    /// Rewrites the heap TID slots: `tids` first, the rest invalid.
    pub fn set_heap_tids(&mut self, tids: &[ItemPointer]) {
        assert!(tids.len() <= HEAPTIDS, "too many heap TIDs");
        for i in 0..HEAPTIDS {
            let tid = tids.get(i).copied().unwrap_or(ItemPointer::INVALID);
            tid.encode(&mut self.bytes[ELEMENT_HEAPTIDS + i * ITEM_POINTER_SIZE..]);
        }
    }

    /// Puts `tid` in the first free heap TID slot; false if all [`HEAPTIDS`] are taken.
    pub fn add_heap_tid(&mut self, tid: ItemPointer) -> bool {
        let used = self.view().heap_tids().count();
        if used == HEAPTIDS {
            return false;
        }
        tid.encode(&mut self.bytes[ELEMENT_HEAPTIDS + used * ITEM_POINTER_SIZE..]);
        true
    }

    /// What vacuum does to an element it deletes: marks it deleted, zeroes its value (as many
    /// bytes as the varlena header said; nothing if the value is already unreadable), and
    /// returns the new version ([`next_version`]), which the neighbor tuple must get too.
    pub fn mark_deleted(&mut self) -> u8 {
        self.bytes[ELEMENT_DELETED] = 1;
        let data = &mut self.bytes[ELEMENT_HEADER_SIZE..];
        if let Some(size) = varlena_size(data) {
            let size = size.min(data.len());
            data[..size].fill(0);
        }
        let version = next_version(self.bytes[ELEMENT_VERSION]);
        self.bytes[ELEMENT_VERSION] = version;
        version
    }
}

/// A neighbor tuple read in place.
#[derive(Clone, Copy)]
pub struct NeighborView<'a> {
    bytes: &'a [u8],
}

impl<'a> NeighborView<'a> {
    /// Checks the type byte and that `count` TIDs fit in the item.
    #[inline]
    pub fn parse(item: &'a [u8]) -> Result<Self, FormatError> {
        need("neighbor tuple", item, NEIGHBOR_HEADER_SIZE)?;
        if item[NEIGHBOR_TYPE] != NEIGHBOR_TUPLE_TYPE {
            return Err(FormatError::WrongTupleType {
                expected: NEIGHBOR_TUPLE_TYPE,
                found: item[NEIGHBOR_TYPE],
            });
        }
        let count = usize::from(read_u16(item, NEIGHBOR_COUNT));
        need(
            "neighbor tuple",
            item,
            NEIGHBOR_HEADER_SIZE + count * ITEM_POINTER_SIZE,
        )?;
        Ok(NeighborView { bytes: item })
    }

    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes[NEIGHBOR_VERSION]
    }

    /// Number of slots, `(level + 2) * m` for a current tuple.
    #[inline]
    pub fn count(&self) -> usize {
        usize::from(read_u16(self.bytes, NEIGHBOR_COUNT))
    }

    /// Slot `i` (`i < count()`), valid or not.
    #[inline]
    pub fn tid(&self, i: usize) -> ItemPointer {
        assert!(i < self.count(), "neighbor slot {i} of {}", self.count());
        ItemPointer::decode(&self.bytes[NEIGHBOR_HEADER_SIZE + i * ITEM_POINTER_SIZE..])
    }

    /// All slots in order (top layer first), valid or not.
    #[inline]
    pub fn tids(&self) -> impl Iterator<Item = ItemPointer> + 'a {
        let view = *self;
        (0..self.count()).map(move |i| view.tid(i))
    }

    /// The check pgvector makes before trusting a neighbor tuple read outside the element's
    /// page lock: same version as the element, and the slot count its level and `m` give.
    #[inline]
    pub fn matches(&self, version: u8, level: u8, m: usize) -> bool {
        self.version() == version && self.count() == neighbor_count(level, m)
    }

    /// The neighbors of one layer: the slots of `layer` up to the first invalid one. Empty if
    /// the tuple is too short for `level` and `m` (check [`matches`](Self::matches) first).
    #[inline]
    pub fn layer(&self, level: u8, m: usize, layer: u8) -> impl Iterator<Item = ItemPointer> + 'a {
        let view = *self;
        let slots = layer_slots(level, m, layer);
        let slots = if slots.end <= self.count() {
            slots
        } else {
            0..0
        };
        slots
            .map(move |i| view.tid(i))
            .take_while(ItemPointer::is_valid)
    }
}

impl fmt::Debug for NeighborView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NeighborView")
            .field("version", &self.version())
            .field("count", &self.count())
            .finish()
    }
}

/// The fields of a neighbor tuple, for writing one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighborTuple<'a> {
    pub version: u8,
    /// Every slot, top layer first, invalid TIDs in unused slots: `(level + 2) * m` of them.
    pub tids: &'a [ItemPointer],
}

impl NeighborTuple<'_> {
    /// Bytes [`encode`](Self::encode) writes, `MAXALIGN`ed.
    pub fn size(&self) -> usize {
        maxalign(NEIGHBOR_HEADER_SIZE + ITEM_POINTER_SIZE * self.tids.len())
    }

    /// Writes the tuple into `out` and zeroes the rest of it; `out` must be at least
    /// [`size`](Self::size) bytes.
    pub fn encode(&self, out: &mut [u8]) {
        let count = u16::try_from(self.tids.len()).expect("neighbor count fits in 16 bits");
        assert!(out.len() >= NEIGHBOR_HEADER_SIZE + ITEM_POINTER_SIZE * self.tids.len());
        out.fill(0);
        out[NEIGHBOR_TYPE] = NEIGHBOR_TUPLE_TYPE;
        out[NEIGHBOR_VERSION] = self.version;
        write_u16(out, NEIGHBOR_COUNT, count);
        for (i, tid) in self.tids.iter().enumerate() {
            tid.encode(&mut out[NEIGHBOR_HEADER_SIZE + i * ITEM_POINTER_SIZE..]);
        }
    }

    /// The encoded tuple in a new buffer of [`size`](Self::size) bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0; self.size()];
        self.encode(&mut out);
        out
    }
}

/// In-place changes to a neighbor tuple on a page.
pub struct NeighborMut<'a> {
    bytes: &'a mut [u8],
}

impl<'a> NeighborMut<'a> {
    #[inline]
    pub fn parse(item: &'a mut [u8]) -> Result<Self, FormatError> {
        NeighborView::parse(item)?;
        Ok(NeighborMut { bytes: item })
    }

    pub fn view(&self) -> NeighborView<'_> {
        NeighborView { bytes: self.bytes }
    }

    pub fn set_version(&mut self, version: u8) {
        self.bytes[NEIGHBOR_VERSION] = version;
    }

    /// Overwrites slot `i` (`i < count`).
    pub fn set_tid(&mut self, i: usize, tid: ItemPointer) {
        let count = self.view().count();
        assert!(i < count, "neighbor slot {i} of {count}");
        tid.encode(&mut self.bytes[NEIGHBOR_HEADER_SIZE + i * ITEM_POINTER_SIZE..]);
    }

    /// Sets every slot invalid (vacuum, deleting the element).
    pub fn clear(&mut self) {
        for i in 0..self.view().count() {
            self.set_tid(i, ItemPointer::INVALID);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{self, PageRef, FIRST_OFFSET_NUMBER};
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn sizes_match_pgvector() {
        assert_eq!(MAX_ITEM_SIZE, 8156);
        assert_eq!(META_PD_LOWER, 52);
        // vector(3): 8-byte header + 12 bytes of floats.
        assert_eq!(element_tuple_size(20), 96);
        assert_eq!(neighbor_tuple_size(0, 4), 56);
        assert_eq!(neighbor_tuple_size(0, 16), 200);
        assert_eq!(neighbor_tuple_size(2, 16), 392);
        assert_eq!(neighbor_count(3, 16), 80);
        // 1358 / m - 2 slots' worth of levels, at most 63.
        assert_eq!(max_level(16), 63);
        assert_eq!(max_level(50), 25);
        assert_eq!(max_level(100), 11);
        assert_eq!(max_level(2), 63);
        // The largest neighbor tuple fits in one item.
        for m in MIN_M..=MAX_M {
            assert!(
                neighbor_tuple_size(max_level(m), m) <= MAX_ITEM_SIZE,
                "m = {m}"
            );
        }
        assert_eq!(layer_slots(2, 16, 2), 0..16);
        assert_eq!(layer_slots(2, 16, 1), 16..32);
        assert_eq!(layer_slots(2, 16, 0), 32..64);
        assert_eq!(layer_slots(0, 16, 0), 0..32);
        assert_eq!(next_version(1), 2);
        assert_eq!(next_version(15), 1);
    }

    #[test]
    fn element_round_trip() {
        let value = [
            0x50u8, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
        ];
        let tids = [ItemPointer::new(3, 4), ItemPointer::new(70000, 1)];
        let e = ElementTuple {
            level: 2,
            deleted: 0,
            version: 1,
            heap_tids: &tids,
            neighbor_tid: ItemPointer::new(5, 6),
            value: &value,
        };
        let bytes = e.to_vec();
        assert_eq!(bytes.len(), 96);
        let v = ElementView::parse(&bytes).unwrap();
        assert_eq!(v.level(), 2);
        assert_eq!(v.heap_tids().collect::<Vec<_>>(), tids);
        assert_eq!(v.heap_tid(2), ItemPointer::INVALID);
        assert_eq!(v.neighbor_tid(), ItemPointer::new(5, 6));
        #[cfg(target_endian = "little")]
        assert_eq!(v.value(), Some(&value[..]));
        assert!(NeighborView::parse(&bytes).is_err());
        assert!(ElementView::parse(&bytes[..40]).is_err());

        let mut bytes = bytes;
        let mut em = ElementMut::parse(&mut bytes).unwrap();
        assert!(em.add_heap_tid(ItemPointer::new(9, 9)));
        assert_eq!(em.view().heap_tids().count(), 3);
        em.set_heap_tids(&[]);
        assert!(em.view().has_no_heap_tids());
        assert_eq!(em.mark_deleted(), 2);
        let v = ElementView::parse(&bytes).unwrap();
        assert!(v.deleted());
        assert!(v.value().is_none());
        assert!(v.data().iter().all(|&b| b == 0));
    }

    #[test]
    fn neighbor_round_trip() {
        let mut tids = vec![ItemPointer::INVALID; neighbor_count(1, 2)];
        tids[0] = ItemPointer::new(1, 3);
        tids[2] = ItemPointer::new(1, 5);
        tids[3] = ItemPointer::new(2, 1);
        let n = NeighborTuple {
            version: 3,
            tids: &tids,
        };
        let mut bytes = n.to_vec();
        assert_eq!(bytes.len(), neighbor_tuple_size(1, 2));
        let v = NeighborView::parse(&bytes).unwrap();
        assert!(v.matches(3, 1, 2));
        assert!(!v.matches(4, 1, 2));
        assert_eq!(
            v.layer(1, 2, 1).collect::<Vec<_>>(),
            [ItemPointer::new(1, 3)]
        );
        assert_eq!(
            v.layer(1, 2, 0).collect::<Vec<_>>(),
            [ItemPointer::new(1, 5), ItemPointer::new(2, 1)]
        );
        let mut nm = NeighborMut::parse(&mut bytes).unwrap();
        nm.clear();
        assert!(nm.view().tids().all(|t| !t.is_valid()));
        // A count larger than the item is rejected.
        let mut short = n.to_vec();
        short[2] = 200;
        assert!(NeighborView::parse(&short).is_err());
    }

    #[test]
    fn meta_round_trip() {
        let mut meta = MetaPage::new(3, 16, 64);
        assert_eq!(meta.entry_point(), None);
        let mut bytes = [0u8; META_SIZE];
        meta.encode(&mut bytes);
        assert_eq!(MetaPage::decode(&bytes), Ok(meta));
        meta.set_entry_point(Some(EntryPoint {
            tid: ItemPointer::new(1, 1),
            level: 3,
        }));
        meta.encode(&mut bytes);
        assert_eq!(
            MetaPage::decode(&bytes)
                .unwrap()
                .entry_point()
                .unwrap()
                .level,
            3
        );
        bytes[0] ^= 1;
        assert!(matches!(
            MetaPage::decode(&bytes),
            Err(FormatError::BadMagic(_))
        ));
    }

    // -----------------------------------------------------------------------------------------
    // Pages of indexes built by pgvector 0.8.6 (tests/fixtures/pgvector-hnsw, see tests/fixtures/generate.sh).
    // -----------------------------------------------------------------------------------------

    /// One decoded element tuple.
    struct Element {
        level: u8,
        version: u8,
        deleted: bool,
        heap_tids: Vec<ItemPointer>,
        neighbor_tid: ItemPointer,
        /// The value varlena (empty for deleted elements).
        value: Vec<u8>,
    }

    /// What one fixture index decodes to.
    struct Decoded {
        meta: MetaPage,
        /// By element TID.
        elements: BTreeMap<ItemPointer, Element>,
        /// Neighbor tuple TID -> (version, slots).
        neighbors: BTreeMap<ItemPointer, (u8, Vec<ItemPointer>)>,
        /// Element pages in chain order.
        chain: Vec<BlockNumber>,
    }

    /// Decodes every page of an index, checks the structure pgvector promises, and rebuilds
    /// each page from the decoded fields: the result must equal the original byte for byte.
    fn decode_and_rebuild(pages: &[Vec<u8>]) -> Decoded {
        assert!(pages.len() >= 2, "metapage and at least one element page");
        let meta_page = PageRef::new(&pages[0]);
        let meta = MetaPage::decode(meta_page.contents()).unwrap();
        assert_eq!(meta.version, VERSION);
        assert_eq!(meta_page.header().lower, META_PD_LOWER);
        let m = usize::from(meta.m);

        // Rebuild the metapage.
        let mut rebuilt = vec![0u8; BLCKSZ];
        page::init(&mut rebuilt, OPAQUE_SIZE);
        new_opaque().encode(page::special_mut(&mut rebuilt));
        meta.encode(page::contents_mut(&mut rebuilt));
        page::set_lower(&mut rebuilt, META_PD_LOWER);
        copy_lsn_and_checksum(&pages[0], &mut rebuilt);
        assert_eq!(rebuilt, pages[0], "metapage");

        let mut elements = BTreeMap::new();
        let mut neighbors = BTreeMap::new();
        for (blkno, bytes) in pages.iter().enumerate().skip(1) {
            let blkno = blkno as BlockNumber;
            let page = PageRef::new(bytes);
            let opaque = PageOpaque::decode(page.special()).unwrap();
            assert_eq!(page.special().len(), OPAQUE_SIZE);
            assert_eq!(opaque.page_id, PAGE_ID);
            assert_eq!(opaque.unused, 0);

            let mut rebuilt = vec![0u8; BLCKSZ];
            page::init(&mut rebuilt, OPAQUE_SIZE);
            PageOpaque {
                next_blkno: opaque.next_blkno,
                ..new_opaque()
            }
            .encode(page::special_mut(&mut rebuilt));

            for offset in FIRST_OFFSET_NUMBER..=page.max_offset() {
                let item = page.item(offset).expect("every line pointer has an item");
                assert_eq!(item.len(), maxalign(item.len()), "items are MAXALIGNed");
                let tid = ItemPointer::new(blkno, offset);
                let encoded = match tuple_kind(item) {
                    TupleKind::Element => {
                        let e = ElementView::parse(item).unwrap();
                        assert_eq!(e.unused(), 0);
                        assert!(e.deleted_byte() <= 1);
                        assert!((1..=MAX_TUPLE_VERSION).contains(&e.version()));
                        let heap_tids: Vec<_> = e.heap_tids().collect();
                        // Slots after the first invalid one are invalid too.
                        for i in heap_tids.len()..HEAPTIDS {
                            assert_eq!(e.heap_tid(i), ItemPointer::INVALID);
                        }
                        let value = if e.deleted() {
                            assert!(heap_tids.is_empty());
                            assert!(e.value().is_none());
                            assert!(e.data().iter().all(|&b| b == 0));
                            Vec::new()
                        } else {
                            let value = e.value().expect("live element has a value");
                            assert_eq!(item.len(), element_tuple_size(value.len()));
                            value.to_vec()
                        };
                        let mut out = vec![0u8; item.len()];
                        ElementTuple {
                            level: e.level(),
                            deleted: e.deleted_byte(),
                            version: e.version(),
                            heap_tids: &heap_tids,
                            neighbor_tid: e.neighbor_tid(),
                            value: &value,
                        }
                        .encode(&mut out);
                        elements.insert(
                            tid,
                            Element {
                                level: e.level(),
                                version: e.version(),
                                deleted: e.deleted(),
                                heap_tids,
                                neighbor_tid: e.neighbor_tid(),
                                value,
                            },
                        );
                        out
                    }
                    TupleKind::Neighbor => {
                        let n = NeighborView::parse(item).unwrap();
                        let tids: Vec<_> = n.tids().collect();
                        assert_eq!(item.len(), maxalign(NEIGHBOR_HEADER_SIZE + 6 * tids.len()));
                        assert_eq!(n.count() % m, 0);
                        neighbors.insert(tid, (n.version(), tids.clone()));
                        NeighborTuple {
                            version: n.version(),
                            tids: &tids,
                        }
                        .to_vec()
                    }
                    TupleKind::Other(t) => panic!("unexpected tuple type {t} at {tid:?}"),
                };
                assert_eq!(encoded, item, "item {tid:?}");
                assert_eq!(page::add_item(&mut rebuilt, &encoded), Some(offset));
            }
            copy_lsn_and_checksum(bytes, &mut rebuilt);
            assert_eq!(&rebuilt, bytes, "page {blkno}");
        }

        // The chain starts at HEAD_BLKNO and visits every element page once.
        let mut chain = Vec::new();
        let mut blkno = HEAD_BLKNO;
        while blkno != INVALID_BLOCK_NUMBER {
            assert!(!chain.contains(&blkno));
            chain.push(blkno);
            let page = PageRef::new(&pages[blkno as usize]);
            blkno = PageOpaque::decode(page.special()).unwrap().next_blkno;
        }
        assert_eq!(chain.len(), pages.len() - 1);
        assert!(chain.contains(&meta.insert_page));

        // Element <-> neighbor tuple links and neighbor slots.
        let mut max_level_seen = 0;
        for (tid, e) in &elements {
            let (level, version, deleted, ntid) =
                (&e.level, &e.version, &e.deleted, &e.neighbor_tid);
            max_level_seen = max_level_seen.max(*level);
            assert!(*level <= max_level(m));
            let (nversion, slots) = neighbors.get(ntid).expect("neighbor tuple exists");
            assert_eq!(nversion, version, "versions agree for {tid:?}");
            assert_eq!(slots.len(), neighbor_count(*level, m));
            // Same page, next item; or first item of the next block.
            assert!(
                (ntid.block == tid.block && ntid.offset == tid.offset + 1)
                    || (ntid.block == tid.block + 1 && ntid.offset == FIRST_OFFSET_NUMBER),
                "{tid:?} -> {ntid:?}"
            );
            for layer in 0..=*level {
                let range = layer_slots(*level, m, layer);
                let layer_tids = &slots[range];
                let used = layer_tids.iter().take_while(|t| t.is_valid()).count();
                assert!(layer_tids[used..].iter().all(|t| !t.is_valid()));
                if *deleted {
                    assert_eq!(used, 0);
                }
                for n in &layer_tids[..used] {
                    let nlevel = &elements.get(n).expect("neighbor is an element").level;
                    assert!(*nlevel >= layer, "{n:?} is linked on layer {layer}");
                }
            }
        }
        assert_eq!(neighbors.len(), elements.len());
        match meta.entry_point() {
            None => assert!(elements.is_empty()),
            Some(entry) => {
                let Element { level, deleted, .. } = &elements[&entry.tid];
                assert_eq!(*level, entry.level);
                assert_eq!(entry.level, max_level_seen);
                assert!(!deleted);
            }
        }
        Decoded {
            meta,
            elements,
            neighbors,
            chain,
        }
    }

    /// The LSN and checksum are set by the server when pages are written, not by the format.
    fn copy_lsn_and_checksum(from: &[u8], to: &mut [u8]) {
        to[..10].copy_from_slice(&from[..10]);
    }

    fn fixture(name: &str) -> Vec<Vec<u8>> {
        let text = match name {
            "t1_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t1_idx.pages"),
            "t2_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t2_idx.pages"),
            "t3_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t3_idx.pages"),
            "t4_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t4_idx.pages"),
            "t5_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t5_idx.pages"),
            "t6_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t6_idx.pages"),
            "t7_idx" => include_str!("../../../tests/fixtures/pgvector-hnsw/t7_idx.pages"),
            _ => unreachable!(),
        };
        page::fixture_pages(text)
    }

    fn all_heap_tids(d: &Decoded) -> BTreeSet<ItemPointer> {
        let mut all = BTreeSet::new();
        for e in d.elements.values() {
            for t in &e.heap_tids {
                assert!(all.insert(*t), "heap TID {t:?} indexed twice");
            }
        }
        all
    }

    fn vector_value(dims: &[f32]) -> Vec<u8> {
        let mut v = Vec::new();
        let size = (8 + 4 * dims.len()) as u32;
        #[cfg(target_endian = "little")]
        v.extend_from_slice(&(size << 2).to_ne_bytes());
        #[cfg(target_endian = "big")]
        v.extend_from_slice(&size.to_ne_bytes());
        v.extend_from_slice(&(dims.len() as u16).to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        for d in dims {
            v.extend_from_slice(&d.to_ne_bytes());
        }
        v
    }

    #[test]
    fn pgvector_vector_index_with_vacuum_and_reuse() {
        // 250 rows, m = 4, ef_construction = 10; rows with id % 7 = 0 deleted and vacuumed,
        // then 30 rows inserted, partly into the freed slots.
        let d = decode_and_rebuild(&fixture("t1_idx"));
        assert_eq!(
            (d.meta.dimensions, d.meta.m, d.meta.ef_construction),
            (3, 4, 10)
        );
        let live: Vec<_> = d.elements.values().filter(|e| !e.deleted).collect();
        let deleted = d.elements.len() - live.len();
        assert_eq!(all_heap_tids(&d).len(), 250 - 250 / 7 + 30);
        assert!(deleted > 0, "some slots stay deleted");
        assert!(d.elements.len() < 280, "freed slots were reused");
        assert!(
            d.elements.values().any(|e| e.version > 1),
            "reused slots have newer versions"
        );
        assert!(d.elements.values().any(|e| e.level >= 2), "several layers");
        for e in live {
            assert_eq!(e.value.len(), 8 + 3 * 4);
        }
        assert!(d.chain.len() >= 3);
    }

    #[test]
    fn pgvector_halfvec_bit_sparsevec_values() {
        let d = decode_and_rebuild(&fixture("t2_idx"));
        assert_eq!(
            (d.meta.dimensions, d.meta.m, d.meta.ef_construction),
            (5, 16, 64)
        );
        // halfvec(5): 8-byte header + 5 halves.
        assert!(d.elements.values().all(|e| e.value.len() == 8 + 2 * 5));
        assert_eq!(all_heap_tids(&d).len(), 50);

        let d = decode_and_rebuild(&fixture("t3_idx"));
        assert_eq!((d.meta.dimensions, d.meta.m), (70, 8));
        // bit(70): varlena header, bit length, 9 bytes.
        assert!(d.elements.values().all(|e| e.value.len() == 4 + 4 + 9));
        assert_eq!(all_heap_tids(&d).len(), 50);

        let d = decode_and_rebuild(&fixture("t4_idx"));
        assert_eq!(d.meta.dimensions, 1000);
        // sparsevec with 2 non-zeros: header, dim, nnz, unused, 2 indices, 2 values.
        assert!(d
            .elements
            .values()
            .all(|e| e.value.len() == 16 + 2 * 4 + 2 * 4));
        assert_eq!(all_heap_tids(&d).len(), 50);
    }

    #[test]
    fn pgvector_neighbors_on_next_page() {
        // vector(1900), m = 100: element and neighbor tuples do not fit on one page.
        let d = decode_and_rebuild(&fixture("t5_idx"));
        assert_eq!(
            (d.meta.dimensions, d.meta.m, d.meta.ef_construction),
            (1900, 100, 200)
        );
        assert_eq!(d.elements.len(), 3);
        for (tid, e) in &d.elements {
            assert_eq!(
                e.neighbor_tid,
                ItemPointer::new(tid.block + 1, FIRST_OFFSET_NUMBER)
            );
            assert!(
                combined_size(
                    element_tuple_size(e.value.len()),
                    neighbor_tuple_size(e.level, 100)
                ) > MAX_ITEM_SIZE
            );
        }
        let values: BTreeSet<_> = d.elements.values().map(|e| e.value.clone()).collect();
        for i in 1..=3 {
            assert!(values.contains(&vector_value(&[i as f32; 1900])));
        }
    }

    #[test]
    fn pgvector_empty_index() {
        let pages = fixture("t6_idx");
        let d = decode_and_rebuild(&pages);
        assert_eq!(d.meta, {
            let mut meta = MetaPage::new(2, 16, 64);
            meta.insert_page = HEAD_BLKNO;
            meta
        });
        assert!(d.elements.is_empty() && d.neighbors.is_empty());
        assert_eq!(d.chain, [HEAD_BLKNO]);
    }

    #[test]
    fn pgvector_duplicates_share_an_element() {
        // 12 rows of [1,1] and 8 distinct rows at build, then one more [1,1] and a new [2,0].
        let d = decode_and_rebuild(&fixture("t7_idx"));
        let heap: BTreeSet<_> = all_heap_tids(&d);
        let expected: BTreeSet<_> = (1..=22).map(|o| ItemPointer::new(0, o)).collect();
        assert_eq!(heap, expected);
        let ones = vector_value(&[1.0, 1.0]);
        let mut counts: Vec<_> = d
            .elements
            .values()
            .filter(|e| e.value == ones)
            .map(|e| e.heap_tids.len())
            .collect();
        counts.sort();
        // The build fills one element to HEAPTIDS and puts the rest in another; the later
        // insert adds its TID to an element that still has room.
        assert_eq!(counts.iter().sum::<usize>(), 13);
        assert!(counts.contains(&HEAPTIDS));
        let twos = vector_value(&[2.0, 0.0]);
        assert_eq!(
            d.elements
                .values()
                .filter(|e| e.value == twos)
                .map(|e| e.heap_tids.len())
                .sum::<usize>(),
            1
        );
    }
}
