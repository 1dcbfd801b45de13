//! The standard Postgres page layout (`bufpage.h`, `itemid.h`, `itemptr.h`) as plain Rust over
//! byte slices.
//!
//! Nothing here calls Postgres: this module reads pages that the guards in
//! the extension's storage module hands out, and it can be used (and tested) outside a backend. Integers are
//! in the machine's byte order, as Postgres writes them.
//!
//! [`init`] and [`add_item`] re-implement `PageInit` and an appending `PageAddItem` for code that
//! builds pages off-line (tests, tools). Inside the backend, change pages through the guards,
//! which call Postgres's own functions.

use std::fmt;

/// Page size (`BLCKSZ`). The storage module checks it against the server's at compile time.
pub const BLCKSZ: usize = 8192;
/// `SizeOfPageHeaderData`: the header before the line pointer array.
pub const PAGE_HEADER_SIZE: usize = 24;
/// `sizeof(ItemIdData)`: one line pointer.
pub const ITEM_ID_SIZE: usize = 4;
/// `sizeof(ItemPointerData)`: a TID as stored on disk.
pub const ITEM_POINTER_SIZE: usize = 6;
/// `MAXIMUM_ALIGNOF` on every platform Postgres supports for this extension.
pub const MAXIMUM_ALIGNOF: usize = 8;
/// `PG_PAGE_LAYOUT_VERSION`, kept in the low byte of `pd_pagesize_version`.
pub const PAGE_LAYOUT_VERSION: u16 = 4;

/// `BlockNumber`.
pub type BlockNumber = u32;
/// `OffsetNumber` (line pointer number, 1-based).
pub type OffsetNumber = u16;

/// `InvalidBlockNumber`.
pub const INVALID_BLOCK_NUMBER: BlockNumber = u32::MAX;
/// `InvalidOffsetNumber`.
pub const INVALID_OFFSET_NUMBER: OffsetNumber = 0;
/// `FirstOffsetNumber`.
pub const FIRST_OFFSET_NUMBER: OffsetNumber = 1;

/// `MAXALIGN`.
pub const fn maxalign(len: usize) -> usize {
    (len + MAXIMUM_ALIGNOF - 1) & !(MAXIMUM_ALIGNOF - 1)
}

/// A native-endian `uint16` at `at` (page bytes are in the server's byte order).
#[inline]
pub fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([bytes[at], bytes[at + 1]])
}

/// A native-endian `uint32` at `at`.
#[inline]
pub fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[inline]
pub fn write_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_ne_bytes());
}

#[inline]
pub fn write_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

/// The special space pgvector gives every page of both its indexes (`HnswPageOpaqueData`,
/// `IvfflatPageOpaqueData`): the next page of the page's chain, an unused half-word, and the
/// access method's page id in the last two bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainOpaque {
    /// Next page of the chain, or [`INVALID_BLOCK_NUMBER`] at its end (and on metapages).
    pub next_blkno: BlockNumber,
    /// Always 0.
    pub unused: u16,
    pub page_id: u16,
}

/// Size of [`ChainOpaque`].
pub const CHAIN_OPAQUE_SIZE: usize = 8;

impl ChainOpaque {
    /// A fresh page's: no next page.
    #[inline]
    pub const fn new(page_id: u16) -> Self {
        ChainOpaque {
            next_blkno: INVALID_BLOCK_NUMBER,
            unused: 0,
            page_id,
        }
    }

    /// Reads a page's special space; `None` if it is too short.
    #[inline]
    pub fn decode(special: &[u8]) -> Option<Self> {
        (special.len() >= CHAIN_OPAQUE_SIZE).then(|| ChainOpaque {
            next_blkno: read_u32(special, 0),
            unused: read_u16(special, 4),
            page_id: read_u16(special, 6),
        })
    }

    /// Writes a special space of at least [`CHAIN_OPAQUE_SIZE`] bytes.
    pub fn encode(&self, special: &mut [u8]) {
        write_u32(special, 0, self.next_blkno);
        write_u16(special, 4, self.unused);
        write_u16(special, 6, self.page_id);
    }

    /// Changes only the next-page link of an encoded special space.
    pub fn set_next_blkno(special: &mut [u8], next: BlockNumber) {
        write_u32(special, 0, next);
    }

    /// The next page of the chain, [`INVALID_BLOCK_NUMBER`] if the space is too short.
    #[inline]
    pub fn next_of(special: &[u8]) -> BlockNumber {
        Self::decode(special).map_or(INVALID_BLOCK_NUMBER, |o| o.next_blkno)
    }
}

/// A heap or index TID (`ItemPointerData`): block split into two 16-bit halves, then the
/// offset, six bytes with 2-byte alignment.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemPointer {
    pub block: BlockNumber,
    pub offset: OffsetNumber,
}

impl ItemPointer {
    /// What `ItemPointerSetInvalid` stores.
    pub const INVALID: ItemPointer = ItemPointer {
        block: INVALID_BLOCK_NUMBER,
        offset: INVALID_OFFSET_NUMBER,
    };

    #[inline]
    pub const fn new(block: BlockNumber, offset: OffsetNumber) -> Self {
        ItemPointer { block, offset }
    }

    /// `ItemPointerIsValid`: only the offset is looked at.
    pub const fn is_valid(&self) -> bool {
        self.offset != INVALID_OFFSET_NUMBER
    }

    /// Reads the six bytes at the start of `bytes`.
    #[inline]
    pub fn decode(bytes: &[u8]) -> Self {
        let hi = read_u16(bytes, 0) as u32;
        let lo = read_u16(bytes, 2) as u32;
        ItemPointer {
            block: (hi << 16) | lo,
            offset: read_u16(bytes, 4),
        }
    }

    /// Writes the six bytes at the start of `out`.
    pub fn encode(&self, out: &mut [u8]) {
        write_u16(out, 0, (self.block >> 16) as u16);
        write_u16(out, 2, self.block as u16);
        write_u16(out, 4, self.offset);
    }
}

impl fmt::Debug for ItemPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.block, self.offset)
    }
}

/// Line pointer state (`lp_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemFlags {
    Unused,
    Normal,
    Redirect,
    Dead,
}

/// A decoded line pointer (`ItemIdData`, a 32-bit word of bit fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId {
    /// Byte offset of the item from the start of the page.
    pub offset: u16,
    pub flags: ItemFlags,
    /// Item length in bytes, as passed to `PageAddItem` (not rounded up).
    pub len: u16,
}

impl ItemId {
    fn flag_bits(flags: ItemFlags) -> u32 {
        match flags {
            ItemFlags::Unused => 0,
            ItemFlags::Normal => 1,
            ItemFlags::Redirect => 2,
            ItemFlags::Dead => 3,
        }
    }

    /// Decodes the word as the C compiler lays the bit fields out
    /// (`lp_off:15, lp_flags:2, lp_len:15`, first field in the low bits on little-endian).
    #[inline]
    pub fn from_word(word: u32) -> Self {
        #[cfg(target_endian = "little")]
        let (offset, flags, len) = (word & 0x7fff, (word >> 15) & 3, word >> 17);
        #[cfg(target_endian = "big")]
        let (offset, flags, len) = (word >> 17, (word >> 15) & 3, word & 0x7fff);
        let flags = match flags {
            0 => ItemFlags::Unused,
            1 => ItemFlags::Normal,
            2 => ItemFlags::Redirect,
            _ => ItemFlags::Dead,
        };
        ItemId {
            offset: offset as u16,
            flags,
            len: len as u16,
        }
    }

    pub fn to_word(&self) -> u32 {
        let offset = u32::from(self.offset) & 0x7fff;
        let len = u32::from(self.len) & 0x7fff;
        let flags = Self::flag_bits(self.flags);
        #[cfg(target_endian = "little")]
        let word = offset | (flags << 15) | (len << 17);
        #[cfg(target_endian = "big")]
        let word = (offset << 17) | (flags << 15) | len;
        word
    }

    /// `ItemIdHasStorage`: the line pointer points at bytes on the page.
    #[inline]
    pub fn has_storage(&self) -> bool {
        self.len != 0
    }
}

/// The fields of `PageHeaderData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// `pd_lsn` as one 64-bit LSN.
    pub lsn: u64,
    pub checksum: u16,
    pub flags: u16,
    pub lower: u16,
    pub upper: u16,
    pub special: u16,
    pub pagesize_version: u16,
    pub prune_xid: u32,
}

impl PageHeader {
    #[inline]
    pub fn decode(page: &[u8]) -> Self {
        let xlogid = u64::from(read_u32(page, 0));
        let xrecoff = u64::from(read_u32(page, 4));
        PageHeader {
            lsn: (xlogid << 32) | xrecoff,
            checksum: read_u16(page, 8),
            flags: read_u16(page, 10),
            lower: read_u16(page, 12),
            upper: read_u16(page, 14),
            special: read_u16(page, 16),
            pagesize_version: read_u16(page, 18),
            prune_xid: read_u32(page, 20),
        }
    }

    pub fn encode(&self, page: &mut [u8]) {
        write_u32(page, 0, (self.lsn >> 32) as u32);
        write_u32(page, 4, self.lsn as u32);
        write_u16(page, 8, self.checksum);
        write_u16(page, 10, self.flags);
        write_u16(page, 12, self.lower);
        write_u16(page, 14, self.upper);
        write_u16(page, 16, self.special);
        write_u16(page, 18, self.pagesize_version);
        write_u32(page, 20, self.prune_xid);
    }

    /// The page was never initialized (`PageIsNew`).
    #[inline]
    pub fn is_new(&self) -> bool {
        self.upper == 0
    }

    /// `pd_lower <= pd_upper <= pd_special <= BLCKSZ`, with the special area aligned: what every
    /// reader below relies on. `PageIsNew` pages are not consistent.
    #[inline]
    pub fn is_consistent(&self, page_len: usize) -> bool {
        let (lower, upper, special) = (
            usize::from(self.lower),
            usize::from(self.upper),
            usize::from(self.special),
        );
        lower >= PAGE_HEADER_SIZE
            && lower <= upper
            && upper <= special
            && special <= page_len
            && special == maxalign(special)
    }
}

/// Read access to one page: header, line pointers, items, special space.
///
/// Every accessor checks bounds, so a damaged page yields `None` or empty slices, never a panic
/// or an out-of-page read.
#[derive(Clone, Copy)]
pub struct PageRef<'a> {
    bytes: &'a [u8],
}

impl<'a> PageRef<'a> {
    /// Panics unless `bytes` is exactly one page.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        assert_eq!(bytes.len(), BLCKSZ, "a page is {BLCKSZ} bytes");
        PageRef { bytes }
    }

    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub fn header(&self) -> PageHeader {
        PageHeader::decode(self.bytes)
    }

    /// `PageIsNew`.
    #[inline]
    pub fn is_new(&self) -> bool {
        self.header().is_new()
    }

    /// `PageGetMaxOffsetNumber`.
    #[inline]
    pub fn max_offset(&self) -> OffsetNumber {
        max_offset(self.bytes)
    }

    /// The line pointer for `offset` (1-based), if the page has one.
    #[inline]
    pub fn item_id(&self, offset: OffsetNumber) -> Option<ItemId> {
        item_id(self.bytes, offset)
    }

    /// The bytes of item `offset` (`PageGetItem`), `lp_len` long; `None` if there is no such
    /// line pointer, it has no storage, or it points outside the item area.
    #[inline]
    pub fn item(&self, offset: OffsetNumber) -> Option<&'a [u8]> {
        item_range(self.bytes, offset).map(|r| &self.bytes[r])
    }

    /// Items `1..=max_offset()` with their offsets (only those with storage).
    pub fn items(&self) -> impl Iterator<Item = (OffsetNumber, &'a [u8])> + 'a {
        let page = *self;
        (FIRST_OFFSET_NUMBER..=self.max_offset()).filter_map(move |o| page.item(o).map(|b| (o, b)))
    }

    /// The special space (`PageGetSpecialPointer` up to the end of the page).
    #[inline]
    pub fn special(&self) -> &'a [u8] {
        &self.bytes[special_range(self.bytes)]
    }

    /// `PageGetContents` up to the special space: where a metapage keeps its data.
    #[inline]
    pub fn contents(&self) -> &'a [u8] {
        &self.bytes[contents_range(self.bytes)]
    }

    /// `PageGetExactFreeSpace`: the gap between the line pointers and the items.
    #[inline]
    pub fn exact_free_space(&self) -> usize {
        exact_free_space(self.bytes)
    }

    /// `PageGetFreeSpace`: the gap less one line pointer (what one new item can use).
    #[inline]
    pub fn free_space(&self) -> usize {
        self.exact_free_space().saturating_sub(ITEM_ID_SIZE)
    }
}

/// `PageGetMaxOffsetNumber` on raw page bytes.
#[inline]
pub fn max_offset(page: &[u8]) -> OffsetNumber {
    let lower = usize::from(read_u16(page, 12));
    if lower <= PAGE_HEADER_SIZE {
        0
    } else {
        ((lower - PAGE_HEADER_SIZE) / ITEM_ID_SIZE) as OffsetNumber
    }
}

/// The line pointer for `offset` on raw page bytes.
#[inline]
pub fn item_id(page: &[u8], offset: OffsetNumber) -> Option<ItemId> {
    if offset == INVALID_OFFSET_NUMBER || offset > max_offset(page) {
        return None;
    }
    let at = PAGE_HEADER_SIZE + (usize::from(offset) - 1) * ITEM_ID_SIZE;
    if at + ITEM_ID_SIZE > page.len() {
        return None;
    }
    Some(ItemId::from_word(read_u32(page, at)))
}

/// The byte range of item `offset`, checked to lie between `pd_upper` and `pd_special`.
#[inline]
pub fn item_range(page: &[u8], offset: OffsetNumber) -> Option<std::ops::Range<usize>> {
    let id = item_id(page, offset)?;
    if !id.has_storage() {
        return None;
    }
    let header = PageHeader::decode(page);
    let start = usize::from(id.offset);
    let end = start + usize::from(id.len);
    if start < usize::from(header.upper).max(PAGE_HEADER_SIZE)
        || end > usize::from(header.special).min(page.len())
    {
        return None;
    }
    Some(start..end)
}

/// The byte range of the special space, empty if `pd_special` is out of bounds.
#[inline]
pub fn special_range(page: &[u8]) -> std::ops::Range<usize> {
    let special = usize::from(read_u16(page, 16));
    if special < PAGE_HEADER_SIZE || special > page.len() {
        page.len()..page.len()
    } else {
        special..page.len()
    }
}

/// The byte range from `PageGetContents` to the special space.
#[inline]
pub fn contents_range(page: &[u8]) -> std::ops::Range<usize> {
    let start = maxalign(PAGE_HEADER_SIZE);
    let end = special_range(page).start.max(start);
    start..end
}

/// `PageGetExactFreeSpace` on raw page bytes.
#[inline]
pub fn exact_free_space(page: &[u8]) -> usize {
    let header = PageHeader::decode(page);
    usize::from(header.upper).saturating_sub(usize::from(header.lower))
}

/// Mutable access to item `offset`, with the same checks as [`PageRef::item`].
#[inline]
pub fn item_mut(page: &mut [u8], offset: OffsetNumber) -> Option<&mut [u8]> {
    let range = item_range(page, offset)?;
    Some(&mut page[range])
}

/// Mutable access to the special space.
#[inline]
pub fn special_mut(page: &mut [u8]) -> &mut [u8] {
    let range = special_range(page);
    &mut page[range]
}

/// Mutable access to the page contents (`PageGetContents` up to the special space).
#[inline]
pub fn contents_mut(page: &mut [u8]) -> &mut [u8] {
    let range = contents_range(page);
    &mut page[range]
}

/// Sets `pd_lower` (a metapage marks the end of its data this way).
pub fn set_lower(page: &mut [u8], lower: u16) {
    write_u16(page, 12, lower);
}

/// Off-line `PageInit`: zeroes the page and reserves `MAXALIGN(special_size)` bytes at its end.
pub fn init(page: &mut [u8], special_size: usize) {
    assert_eq!(page.len(), BLCKSZ, "a page is {BLCKSZ} bytes");
    let special = BLCKSZ - maxalign(special_size);
    page.fill(0);
    PageHeader {
        lsn: 0,
        checksum: 0,
        flags: 0,
        lower: PAGE_HEADER_SIZE as u16,
        upper: special as u16,
        special: special as u16,
        pagesize_version: BLCKSZ as u16 | PAGE_LAYOUT_VERSION,
        prune_xid: 0,
    }
    .encode(page);
}

/// Off-line `PageAddItem(page, item, size, InvalidOffsetNumber, false, false)` on a page without
/// unused line pointers: appends a line pointer and places the item, `MAXALIGN`ed, below the
/// others. Returns the new offset, or `None` if it does not fit.
pub fn add_item(page: &mut [u8], item: &[u8]) -> Option<OffsetNumber> {
    let mut header = PageHeader::decode(page);
    if !header.is_consistent(page.len()) || item.len() > 0x7fff {
        return None;
    }
    let aligned = maxalign(item.len());
    let lower = usize::from(header.lower) + ITEM_ID_SIZE;
    let upper = usize::from(header.upper).checked_sub(aligned)?;
    if lower > upper {
        return None;
    }
    let offset = max_offset(page) + 1;
    let id = ItemId {
        offset: upper as u16,
        flags: ItemFlags::Normal,
        len: item.len() as u16,
    };
    write_u32(page, usize::from(header.lower), id.to_word());
    page[upper..upper + item.len()].copy_from_slice(item);
    header.lower = lower as u16;
    header.upper = upper as u16;
    header.encode(page);
    Some(offset)
}

/// Reads the pages of a `.pages` test fixture (`tests/fixtures/pgvector-hnsw`): a "page N"
/// line starts each page, other lines are "OFFSET HEX" rows, and bytes not listed are zero.
pub fn fixture_pages(text: &str) -> Vec<Vec<u8>> {
    let mut pages: Vec<Vec<u8>> = Vec::new();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("page ") {
            assert_eq!(n.parse::<usize>().unwrap(), pages.len());
            pages.push(vec![0; BLCKSZ]);
            continue;
        }
        let (offset, hex) = line.split_once(' ').expect("OFFSET HEX");
        let offset: usize = offset.parse().unwrap();
        let page = pages.last_mut().expect("a page line comes first");
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            let pair = std::str::from_utf8(pair).unwrap();
            page[offset + i] = u8::from_str_radix(pair, 16).unwrap();
        }
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_pointer_round_trip() {
        let tid = ItemPointer::new(0x0001_0002, 7);
        let mut buf = [0u8; 6];
        tid.encode(&mut buf);
        assert_eq!(ItemPointer::decode(&buf), tid);
        #[cfg(target_endian = "little")]
        assert_eq!(buf, [1, 0, 2, 0, 7, 0]);
        ItemPointer::INVALID.encode(&mut buf);
        assert_eq!(buf, [0xff, 0xff, 0xff, 0xff, 0, 0]);
        assert!(!ItemPointer::decode(&buf).is_valid());
    }

    #[test]
    fn item_id_round_trip() {
        let id = ItemId {
            offset: 8088,
            flags: ItemFlags::Normal,
            len: 96,
        };
        assert_eq!(ItemId::from_word(id.to_word()), id);
    }

    #[test]
    fn init_and_add() {
        let mut page = vec![0u8; BLCKSZ];
        init(&mut page, 8);
        let p = PageRef::new(&page);
        assert_eq!(p.header().special, 8184);
        assert_eq!(p.header().pagesize_version, 0x2004);
        assert_eq!(p.max_offset(), 0);
        assert_eq!(p.free_space(), 8184 - 24 - 4);
        assert_eq!(add_item(&mut page, &[1, 2, 3]), Some(1));
        assert_eq!(add_item(&mut page, &[4; 16]), Some(2));
        let p = PageRef::new(&page);
        assert_eq!(p.item(1), Some(&[1u8, 2, 3][..]));
        assert_eq!(p.item_id(1).unwrap().offset, 8176);
        assert_eq!(p.item(2), Some(&[4u8; 16][..]));
        assert_eq!(p.item(3), None);
        assert_eq!(p.item(0), None);
        assert_eq!(p.exact_free_space(), 8160 - 32);
        // Fill it up.
        while add_item(&mut page, &[9; 1000]).is_some() {}
        assert!(PageRef::new(&page).free_space() < 1000);
    }

    #[test]
    fn damaged_pages_do_not_panic() {
        let mut page = vec![0xffu8; BLCKSZ];
        let p = PageRef::new(&page);
        assert!(p.item(1).is_none());
        assert!(p.special().is_empty());
        let _ = p.items().count();
        page.fill(0);
        let p = PageRef::new(&page);
        assert!(p.is_new());
        assert_eq!(p.max_offset(), 0);
        assert_eq!(p.free_space(), 0);
    }
}
