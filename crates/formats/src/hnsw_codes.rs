//! The quantized format of hnsw indexes (`WITH (quantization = 'rabitqN')`), ours alone.
//!
//! It is pgvector's layout ([`crate::hnsw`]) with three differences:
//!
//! * The metapage starts with [`QUANTIZED_MAGIC_NUMBER`] instead of pgvector's, so pgvector
//!   0.8.6 stops at its magic check ("hnsw index is not valid") in every path that opens the
//!   index. After pgvector's fields comes the quantizer ([`QuantizerMeta`]): code width,
//!   metric, rotation seed, the vector chain's insert page, the size of a stored vector and the
//!   centroid (half precision). `pd_lower` covers all of it, so full-page images keep it.
//! * An element tuple's value is a code record ([`CodeRecord`]), a varlena holding where the
//!   element's full vector is, the code's factors and the sum of its levels, a hash of the
//!   vector (rows with equal vectors share an element: equal codes and hashes stand for equal
//!   vectors) and the code's bit planes.
//! * Since format 2 ([`QUANTIZER_REGIONS_FORMAT`]) codes are taken around one of `K` region
//!   centroids: the metapage names the count and the first of the centroid pages
//!   ([`CENTROID_PAGE`], their own chain after the vector pages, holding the centroids in half
//!   precision, row after row, as one byte stream), and a record names its region. A format-1
//!   index has one region, the metapage's centroid, and records whose region bytes are zero.
//! * The full vectors are in vector pages, a chain of their own marked [`VECTOR_PAGE`] in the
//!   special space's spare half-word (graph pages keep 0 there, as pgvector's). Each item is a
//!   vector tuple ([`VectorView`]): a type byte, a free flag (set when vacuum deleted its element,
//!   so an insert can take the slot) and the vector varlena. Vector pages are never on the graph
//!   chain, so every pass over the graph's pages sees pgvector's layout.

use crate::hnsw::{FormatError, META_SIZE};
use crate::page::{
    maxalign, read_u16, read_u32, write_u16, write_u32, BlockNumber, ItemPointer,
    INVALID_BLOCK_NUMBER, PAGE_HEADER_SIZE,
};
use half::f16;

pub use crate::hnsw::QUANTIZED_MAGIC_NUMBER;
/// Version of the quantizer section: codes around the metapage's one centroid.
pub const QUANTIZER_FORMAT: u16 = 1;
/// Version of the quantizer section with region centroids on centroid pages.
pub const QUANTIZER_REGIONS_FORMAT: u16 = 2;
/// The special space's spare half-word of a vector page.
pub const VECTOR_PAGE: u16 = 1;
/// The special space's spare half-word of a centroid page.
pub const CENTROID_PAGE: u16 = 2;
/// The largest finite half-precision value.
const HALF_MAX: f32 = 65504.0;
/// The most regions an index may have.
pub const MAX_REGIONS: u32 = 4096;
/// First byte of a vector tuple (pgvector's tuple types are 1 and 2).
pub const VECTOR_TUPLE_TYPE: u8 = 3;
/// Bytes before the vector in a vector tuple.
pub const VECTOR_HEADER_SIZE: usize = 8;
/// Bytes before the code in a code record (varlena header included).
pub const RECORD_HEADER_SIZE: usize = 40;

/// Where the quantizer section starts in the metapage's contents.
const QMETA: usize = maxalign(META_SIZE);
const QMETA_FORMAT: usize = QMETA;
const QMETA_BITS: usize = QMETA + 2;
const QMETA_METRIC: usize = QMETA + 3;
const QMETA_SEED: usize = QMETA + 4;
const QMETA_VECTOR_INSERT_PAGE: usize = QMETA + 12;
const QMETA_VECTOR_SIZE: usize = QMETA + 16;
const QMETA_DIMS: usize = QMETA + 20;
const QMETA_CENTROID: usize = QMETA + 24;

const RECORD_VECTOR_BLOCK: usize = 4;
const RECORD_VECTOR_OFFSET: usize = 8;
const RECORD_NORM: usize = 12;
const RECORD_SCALE: usize = 16;
const RECORD_ERROR: usize = 20;
const RECORD_CENTROID_DOT: usize = 24;
const RECORD_HASH: usize = 28;
const RECORD_CODE_SUM: usize = 32;
const RECORD_REGION: usize = 36;

const VECTOR_FLAGS: usize = 1;
const VECTOR_FREE: u8 = 1;

/// The distance a quantized index estimates (from its operator class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeMetric {
    /// `vector_l2_ops`, `halfvec_l2_ops`.
    L2Squared = 1,
    /// The inner product and cosine operator classes.
    NegativeInnerProduct = 2,
}

/// The quantizer section of a quantized index's metapage.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizerMeta {
    /// Bits per coordinate of the codes (1, 2, 4 or 8).
    pub bits: u8,
    pub metric: CodeMetric,
    /// The rotation's seed.
    pub seed: u64,
    /// Vector page where inserts start looking for a free vector slot.
    pub vector_insert_page: BlockNumber,
    /// Bytes of a stored vector (its varlena, header included).
    pub vector_size: u32,
    /// The centroid codes are taken relative to (as many values as the index has dimensions):
    /// in format 2, the table's mean, kept for tools; codes use the region centroids.
    pub centroid: Vec<f32>,
    /// Format 2's regions; `None` in format 1 (one region, [`Self::centroid`]).
    pub regions: Option<RegionsMeta>,
}

/// Where a format-2 index keeps its region centroids.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionsMeta {
    /// `K`, at least 1.
    pub count: u32,
    /// The first centroid page.
    pub first_page: BlockNumber,
    /// The centroids (`K · dims` values, row-major, as stored in half precision), once read
    /// from the centroid pages (empty as decoded from the metapage alone).
    pub centroids: Vec<f32>,
}

impl QuantizerMeta {
    /// Bytes the metapage's contents take with this section (in either format; format 1 ends
    /// 8 bytes earlier): `pd_lower` goes just past them.
    pub fn contents_len(dims: usize) -> usize {
        Self::regions_at(dims) + 8
    }

    /// Where format 2's region count and first centroid page are, after the centroid.
    fn regions_at(dims: usize) -> usize {
        (QMETA_CENTROID + 2 * dims).next_multiple_of(4)
    }

    /// `pd_lower` of a quantized metapage.
    pub fn pd_lower(dims: usize) -> u16 {
        (maxalign(PAGE_HEADER_SIZE) + Self::contents_len(dims)) as u16
    }

    /// Reads the section from a metapage's contents (after pgvector's fields were read).
    pub fn decode(contents: &[u8]) -> Result<Self, FormatError> {
        let too_short = |need| FormatError::TooShort {
            what: "quantized metapage",
            len: contents.len(),
            need,
        };
        if contents.len() < QMETA_CENTROID {
            return Err(too_short(QMETA_CENTROID));
        }
        let metric = match contents[QMETA_METRIC] {
            1 => CodeMetric::L2Squared,
            2 => CodeMetric::NegativeInnerProduct,
            found => return Err(FormatError::WrongTupleType { expected: 1, found }),
        };
        let bits = contents[QMETA_BITS];
        let format = read_u16(contents, QMETA_FORMAT);
        if !matches!(format, QUANTIZER_FORMAT | QUANTIZER_REGIONS_FORMAT)
            || !matches!(bits, 1 | 2 | 4 | 8)
        {
            return Err(FormatError::WrongTupleType {
                expected: QUANTIZER_FORMAT as u8,
                found: bits,
            });
        }
        let dims = read_u32(contents, QMETA_DIMS) as usize;
        let end = match format {
            QUANTIZER_FORMAT => QMETA_CENTROID.saturating_add(dims.saturating_mul(2)),
            _ => Self::contents_len(dims.min(usize::MAX / 4)),
        };
        if contents.len() < end {
            return Err(too_short(end));
        }
        let regions = if format == QUANTIZER_REGIONS_FORMAT {
            let at = Self::regions_at(dims);
            let count = read_u32(contents, at);
            if count == 0 || count > MAX_REGIONS {
                return Err(FormatError::WrongTupleType {
                    expected: QUANTIZER_REGIONS_FORMAT as u8,
                    found: count.min(255) as u8,
                });
            }
            Some(RegionsMeta {
                count,
                first_page: read_u32(contents, at + 4),
                centroids: Vec::new(),
            })
        } else {
            None
        };
        let centroid = contents[QMETA_CENTROID..QMETA_CENTROID + 2 * dims]
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_ne_bytes([b[0], b[1]])).to_f32())
            .collect();
        Ok(QuantizerMeta {
            bits,
            metric,
            seed: u64::from_ne_bytes(contents[QMETA_SEED..QMETA_SEED + 8].try_into().unwrap()),
            vector_insert_page: read_u32(contents, QMETA_VECTOR_INSERT_PAGE),
            vector_size: read_u32(contents, QMETA_VECTOR_SIZE),
            centroid,
            regions,
        })
    }

    /// Writes the section into a metapage's contents ([`Self::contents_len`] bytes at least).
    pub fn encode(&self, contents: &mut [u8]) {
        let format = match self.regions {
            None => QUANTIZER_FORMAT,
            Some(_) => QUANTIZER_REGIONS_FORMAT,
        };
        write_u16(contents, QMETA_FORMAT, format);
        contents[QMETA_BITS] = self.bits;
        contents[QMETA_METRIC] = self.metric as u8;
        contents[QMETA_SEED..QMETA_SEED + 8].copy_from_slice(&self.seed.to_ne_bytes());
        write_u32(contents, QMETA_VECTOR_INSERT_PAGE, self.vector_insert_page);
        write_u32(contents, QMETA_VECTOR_SIZE, self.vector_size);
        write_u32(contents, QMETA_DIMS, self.centroid.len() as u32);
        for (i, &v) in self.centroid.iter().enumerate() {
            let at = QMETA_CENTROID + 2 * i;
            contents[at..at + 2].copy_from_slice(&f16::from_f32(v).to_bits().to_ne_bytes());
        }
        if let Some(regions) = &self.regions {
            let at = Self::regions_at(self.centroid.len());
            write_u32(contents, at, regions.count);
            write_u32(contents, at + 4, regions.first_page);
        }
    }

    /// `pd_lower` for this section's format.
    pub fn encoded_pd_lower(&self) -> u16 {
        let dims = self.centroid.len();
        match self.regions {
            None => (maxalign(PAGE_HEADER_SIZE) + QMETA_CENTROID + 2 * dims) as u16,
            Some(_) => Self::pd_lower(dims),
        }
    }

    /// The dimensions of the codes.
    pub fn dims(&self) -> usize {
        self.centroid.len()
    }

    /// The centroids codes are taken around, `K · dims` values: format 1's one centroid, or
    /// format 2's regions once read.
    pub fn region_centroids(&self) -> &[f32] {
        match &self.regions {
            Some(r) => &r.centroids,
            None => &self.centroid,
        }
    }

    /// The centroid as it is stored (rounded to half precision, and held within its range so
    /// that it stays finite): what codes and queries use. Codes are exact around any centroid;
    /// one far from the rows only makes them coarser.
    pub fn stored_centroid(centroid: &[f32]) -> Vec<f32> {
        centroid
            .iter()
            .map(|&v| f16::from_f32(v.clamp(-HALF_MAX, HALF_MAX)).to_f32())
            .collect()
    }

    /// Changes only the vector insert page of an encoded section.
    pub fn set_vector_insert_page(contents: &mut [u8], block: BlockNumber) {
        write_u32(contents, QMETA_VECTOR_INSERT_PAGE, block);
    }
}

/// The factors of a code (see `vector_rabitq::Factors`), as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecordFactors {
    pub norm: f32,
    pub scale: f32,
    pub error: f32,
    pub centroid_dot: f32,
    /// The sum of the code's levels.
    pub code_sum: u32,
}

/// A code record: an element tuple's value in a quantized index.
#[derive(Clone, Copy, Debug)]
pub struct CodeRecord<'a> {
    bytes: &'a [u8],
}

impl<'a> CodeRecord<'a> {
    /// Bytes of a record whose code is `code_bytes` long.
    pub const fn size(code_bytes: usize) -> usize {
        RECORD_HEADER_SIZE + code_bytes
    }

    /// Reads a record (the element's value varlena, header included).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        if bytes.len() < RECORD_HEADER_SIZE {
            return Err(FormatError::TooShort {
                what: "code record",
                len: bytes.len(),
                need: RECORD_HEADER_SIZE,
            });
        }
        Ok(CodeRecord { bytes })
    }

    /// Where the element's full vector is.
    #[inline]
    pub fn vector(&self) -> ItemPointer {
        ItemPointer::new(
            read_u32(self.bytes, RECORD_VECTOR_BLOCK),
            read_u16(self.bytes, RECORD_VECTOR_OFFSET),
        )
    }

    #[inline]
    pub fn factors(&self) -> RecordFactors {
        let f = |at| f32::from_ne_bytes(self.bytes[at..at + 4].try_into().unwrap());
        RecordFactors {
            norm: f(RECORD_NORM),
            scale: f(RECORD_SCALE),
            error: f(RECORD_ERROR),
            centroid_dot: f(RECORD_CENTROID_DOT),
            code_sum: read_u32(self.bytes, RECORD_CODE_SUM),
        }
    }

    /// The region the code is taken in (0 in a format-1 index).
    #[inline]
    pub fn region(&self) -> u32 {
        read_u32(self.bytes, RECORD_REGION)
    }

    /// The hash of the full vector ([`vector_hash`]).
    pub fn hash(&self) -> u32 {
        read_u32(self.bytes, RECORD_HASH)
    }

    /// The code's bit planes.
    #[inline]
    pub fn code(&self) -> &'a [u8] {
        &self.bytes[RECORD_HEADER_SIZE..]
    }

    /// The record's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether two records stand for the same vector: equal codes, factors and hashes.
    pub fn same_vector(&self, other: &CodeRecord<'_>) -> bool {
        self.bytes[RECORD_NORM..] == other.bytes[RECORD_NORM..]
    }

    /// Writes a record: varlena header, `vector`'s place, factors, hash, region and code.
    pub fn write(
        out: &mut [u8],
        vector: ItemPointer,
        factors: RecordFactors,
        hash: u32,
        region: u32,
        code: &[u8],
    ) {
        let size = Self::size(code.len());
        assert!(out.len() >= size, "code record buffer too short");
        out[..size].fill(0);
        // A 4-byte varlena header: the length shifted left by two (little-endian layout).
        write_u32(out, 0, (size as u32) << 2);
        Self::set_vector(out, vector);
        let mut put = |at: usize, v: f32| out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        put(RECORD_NORM, factors.norm);
        put(RECORD_SCALE, factors.scale);
        put(RECORD_ERROR, factors.error);
        put(RECORD_CENTROID_DOT, factors.centroid_dot);
        write_u32(out, RECORD_HASH, hash);
        write_u32(out, RECORD_CODE_SUM, factors.code_sum);
        write_u32(out, RECORD_REGION, region);
        out[RECORD_HEADER_SIZE..size].copy_from_slice(code);
    }

    /// Changes only the vector's place in an encoded record.
    pub fn set_vector(record: &mut [u8], vector: ItemPointer) {
        write_u32(record, RECORD_VECTOR_BLOCK, vector.block);
        write_u16(record, RECORD_VECTOR_OFFSET, vector.offset);
    }
}

/// The hash of a vector's varlena bytes stored in its code record (FNV-1a, 32 bits; part of the
/// format).
pub fn vector_hash(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A vector tuple on a vector page.
#[derive(Clone, Copy, Debug)]
pub struct VectorView<'a> {
    bytes: &'a [u8],
}

impl<'a> VectorView<'a> {
    /// Bytes of a vector tuple holding a varlena of `value_len` bytes.
    pub const fn size(value_len: usize) -> usize {
        maxalign(VECTOR_HEADER_SIZE + value_len)
    }

    pub fn parse(item: &'a [u8]) -> Result<Self, FormatError> {
        if item.len() < VECTOR_HEADER_SIZE + 4 {
            return Err(FormatError::TooShort {
                what: "vector tuple",
                len: item.len(),
                need: VECTOR_HEADER_SIZE + 4,
            });
        }
        if item[0] != VECTOR_TUPLE_TYPE {
            return Err(FormatError::WrongTupleType {
                expected: VECTOR_TUPLE_TYPE,
                found: item[0],
            });
        }
        Ok(VectorView { bytes: item })
    }

    /// Whether the slot is free (its element was deleted).
    pub fn is_free(&self) -> bool {
        self.bytes[VECTOR_FLAGS] & VECTOR_FREE != 0
    }

    /// The vector varlena (its length from its 4-byte header), `None` if the header claims more
    /// bytes than the tuple has.
    pub fn value(&self) -> Option<&'a [u8]> {
        let data = &self.bytes[VECTOR_HEADER_SIZE..];
        let len = (read_u32(data, 0) >> 2) as usize;
        (len >= 4 && len <= data.len()).then(|| &data[..len])
    }

    /// Writes a vector tuple holding `value` into `out` ([`Self::size`] bytes).
    pub fn write(out: &mut [u8], value: &[u8]) {
        let size = Self::size(value.len());
        out[..size].fill(0);
        out[0] = VECTOR_TUPLE_TYPE;
        out[VECTOR_HEADER_SIZE..VECTOR_HEADER_SIZE + value.len()].copy_from_slice(value);
    }

    /// Marks an encoded vector tuple free or taken.
    pub fn set_free(item: &mut [u8], free: bool) {
        if free {
            item[VECTOR_FLAGS] |= VECTOR_FREE;
        } else {
            item[VECTOR_FLAGS] &= !VECTOR_FREE;
        }
    }
}

/// What a quantized index's pages hold, per element of layer 0, for the planner: the bytes of
/// its graph tuples (element tuple with a `record_size`-byte code record, neighbor tuple with
/// `2m` links) and of its vector tuple (`vector_size` bytes), each with its line pointer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantizedSizes {
    pub graph: usize,
    pub vector: usize,
}

impl QuantizedSizes {
    pub fn new(record_size: usize, vector_size: usize, m: usize) -> Self {
        let item = |len: usize| maxalign(len) + crate::page::ITEM_ID_SIZE;
        QuantizedSizes {
            graph: item(crate::hnsw::ELEMENT_HEADER_SIZE + record_size)
                + item(crate::hnsw::NEIGHBOR_HEADER_SIZE + 2 * m * crate::page::ITEM_POINTER_SIZE),
            vector: item(VECTOR_HEADER_SIZE + vector_size),
        }
    }

    /// The graph's share of the index's bytes.
    pub fn graph_share(&self) -> f64 {
        self.graph as f64 / (self.graph + self.vector) as f64
    }

    /// Vectors on one vector page (at least 1).
    pub fn vectors_per_page(&self) -> usize {
        let usable =
            crate::page::BLCKSZ - PAGE_HEADER_SIZE - maxalign(crate::page::CHAIN_OPAQUE_SIZE);
        (usable / self.vector).max(1)
    }
}

/// Whether a page's special space marks a vector page.
pub fn is_vector_page(unused: u16) -> bool {
    unused == VECTOR_PAGE
}

/// Whether a page's special space marks a centroid page.
pub fn is_centroid_page(unused: u16) -> bool {
    unused == CENTROID_PAGE
}

/// Bytes of `count` centroids of `dims` values, as centroid pages hold them.
pub fn centroid_bytes(count: usize, dims: usize) -> usize {
    2 * count * dims
}

/// Centroids in the byte stream of centroid pages (half precision, native byte order).
pub fn encode_centroids(centroids: &[f32]) -> Vec<u8> {
    centroids
        .iter()
        .flat_map(|&v| f16::from_f32(v).to_bits().to_ne_bytes())
        .collect()
}

/// The centroids of a byte stream [`encode_centroids`] wrote.
pub fn decode_centroids(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f16::from_bits(u16::from_ne_bytes([b[0], b[1]])).to_f32())
        .collect()
}

/// [`INVALID_BLOCK_NUMBER`], for a quantized index without vector pages yet.
pub const NO_VECTOR_PAGE: BlockNumber = INVALID_BLOCK_NUMBER;

#[cfg(test)]
mod tests {

    #[test]
    fn quantized_sizes_follow_the_tuples() {
        // 384-d rabitq4: a 232-byte code record, a 1,544-byte vector varlena, m 16.
        let sizes = QuantizedSizes::new(232, 1544, 16);
        assert_eq!(sizes.graph, (72 + 232 + 4) + (200 + 4));
        assert_eq!(sizes.vector, 1552 + 4);
        assert_eq!(sizes.vectors_per_page(), 5);
        let share = sizes.graph_share();
        assert!((share - 512.0 / 2068.0).abs() < 1e-12, "{share}");
        // Wider vectors or smaller codes make the graph a smaller share.
        assert!(QuantizedSizes::new(424, 3080, 16).graph_share() < share);
        assert!(QuantizedSizes::new(88, 1544, 16).graph_share() < share);
        assert_eq!(QuantizedSizes::new(100, 8000, 16).vectors_per_page(), 1);
    }
    use super::*;
    use crate::hnsw::MetaPage;

    #[test]
    fn metapage_round_trip_fits_the_largest_index() {
        // halfvec(4000) is the widest indexable value: its centroid still fits one page.
        let dims = 4000;
        let meta = QuantizerMeta {
            bits: 4,
            metric: CodeMetric::NegativeInnerProduct,
            seed: 0x1234_5678_9abc_def0,
            vector_insert_page: 77,
            vector_size: 8 + 2 * 4000,
            centroid: QuantizerMeta::stored_centroid(
                &(0..dims)
                    .map(|i| i as f32 / 1000.0 - 2.0)
                    .collect::<Vec<_>>(),
            ),
            regions: Some(RegionsMeta {
                count: MAX_REGIONS,
                first_page: 12,
                centroids: Vec::new(),
            }),
        };
        let contents_room = crate::page::BLCKSZ - maxalign(PAGE_HEADER_SIZE) - 8;
        assert!(QuantizerMeta::contents_len(dims) <= contents_room);
        let mut contents = vec![0u8; contents_room];
        let mut pg = MetaPage::new(dims as u32, 16, 64);
        pg.magic_number = QUANTIZED_MAGIC_NUMBER;
        pg.encode(&mut contents);
        meta.encode(&mut contents);
        assert_eq!(QuantizerMeta::decode(&contents).unwrap(), meta);
        QuantizerMeta::set_vector_insert_page(&mut contents, 9);
        assert_eq!(
            QuantizerMeta::decode(&contents).unwrap().vector_insert_page,
            9
        );
        // Not pgvector's magic number (pgvector refuses it); ours reads it as quantized.
        let read = MetaPage::decode(&contents).unwrap();
        assert_ne!(read.magic_number, crate::hnsw::MAGIC_NUMBER);
        assert!(read.is_quantized());
    }

    #[test]
    fn damaged_sections_are_errors() {
        let meta = QuantizerMeta {
            bits: 1,
            metric: CodeMetric::L2Squared,
            seed: 1,
            vector_insert_page: 2,
            vector_size: 16,
            centroid: vec![0.5; 3],
            regions: Some(RegionsMeta {
                count: 2,
                first_page: 5,
                centroids: Vec::new(),
            }),
        };
        let mut contents = vec![0u8; 200];
        meta.encode(&mut contents);
        assert!(QuantizerMeta::decode(&contents[..QMETA_CENTROID + 5]).is_err());
        let mut bad = contents.clone();
        bad[QMETA_BITS] = 3;
        assert!(QuantizerMeta::decode(&bad).is_err());
        let mut bad = contents.clone();
        bad[QMETA_METRIC] = 0;
        assert!(QuantizerMeta::decode(&bad).is_err());
        let mut bad = contents.clone();
        write_u32(&mut bad, QMETA_DIMS, u32::MAX);
        assert!(QuantizerMeta::decode(&bad).is_err());
        // No regions, or more than an index may have.
        for count in [0, MAX_REGIONS + 1] {
            let mut bad = contents.clone();
            write_u32(&mut bad, QuantizerMeta::regions_at(3), count);
            assert!(QuantizerMeta::decode(&bad).is_err());
        }
        assert_eq!(QuantizerMeta::decode(&contents).unwrap(), meta);
    }

    #[test]
    fn format_one_reads_as_one_region() {
        // A section written before regions: format 1, pd_lower just past the centroid, and
        // records whose region bytes are zero.
        let mut meta = QuantizerMeta {
            bits: 2,
            metric: CodeMetric::L2Squared,
            seed: 9,
            vector_insert_page: 3,
            vector_size: 20,
            centroid: vec![0.25, -1.0, 2.0],
            regions: None,
        };
        let mut contents = vec![0u8; 200];
        meta.encode(&mut contents);
        assert_eq!(read_u16(&contents, QMETA_FORMAT), QUANTIZER_FORMAT);
        let end = QMETA_CENTROID + 6;
        assert_eq!(
            usize::from(meta.encoded_pd_lower()),
            maxalign(PAGE_HEADER_SIZE) + end
        );
        // Format 1 needs no bytes past its centroid.
        let read = QuantizerMeta::decode(&contents[..end]).unwrap();
        assert_eq!(read, meta);
        assert_eq!(read.region_centroids(), &meta.centroid[..]);
        meta.regions = Some(RegionsMeta {
            count: 1,
            first_page: 4,
            centroids: vec![1.0, 2.0, 3.0],
        });
        assert_eq!(meta.region_centroids(), &[1.0, 2.0, 3.0]);
        assert!(usize::from(meta.encoded_pd_lower()) > maxalign(PAGE_HEADER_SIZE) + end);
    }

    #[test]
    fn stored_centroids_stay_finite() {
        let stored = QuantizerMeta::stored_centroid(&[1.0e6, -3.0e38, 2.5]);
        assert_eq!(stored, vec![65504.0, -65504.0, 2.5]);
        let back = decode_centroids(&encode_centroids(&stored));
        assert!(back.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn centroids_round_trip_in_half_precision() {
        let values = [0.5f32, -2.25, 1.0e-3, 65504.0];
        let bytes = encode_centroids(&values);
        assert_eq!(bytes.len(), centroid_bytes(1, values.len()));
        let back = decode_centroids(&bytes);
        assert_eq!(back, QuantizerMeta::stored_centroid(&values));
        assert!(is_centroid_page(CENTROID_PAGE) && !is_vector_page(CENTROID_PAGE));
    }

    #[test]
    fn records_and_vector_tuples_round_trip() {
        let code = [0xa5u8; 48];
        let factors = RecordFactors {
            norm: 1.5,
            scale: 2.5,
            error: 0.25,
            centroid_dot: -3.0,
            code_sum: 77,
        };
        let mut out = vec![0u8; CodeRecord::size(code.len())];
        let place = ItemPointer::new(12, 3);
        CodeRecord::write(&mut out, place, factors, 99, 7, &code);
        let record = CodeRecord::parse(&out).unwrap();
        assert_eq!(record.vector(), place);
        assert_eq!(record.region(), 7);
        assert_eq!(record.factors(), factors);
        assert_eq!(record.hash(), 99);
        assert_eq!(record.code(), &code);
        assert_eq!(read_u32(&out, 0) >> 2, out.len() as u32);
        let mut other = out.clone();
        CodeRecord::set_vector(&mut other, ItemPointer::new(1, 1));
        assert!(record.same_vector(&CodeRecord::parse(&other).unwrap()));
        other[RECORD_HASH] ^= 1;
        assert!(!record.same_vector(&CodeRecord::parse(&other).unwrap()));
        assert!(CodeRecord::parse(&out[..20]).is_err());

        let value = [16u8 << 2, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut item = vec![0u8; VectorView::size(value.len())];
        VectorView::write(&mut item, &value);
        let view = VectorView::parse(&item).unwrap();
        assert_eq!(view.value(), Some(&value[..]));
        assert!(!view.is_free());
        VectorView::set_free(&mut item, true);
        assert!(VectorView::parse(&item).unwrap().is_free());
        item[0] = 1;
        assert!(VectorView::parse(&item).is_err());
        // A length past the tuple is no value.
        let mut long = vec![0u8; VectorView::size(value.len())];
        VectorView::write(&mut long, &value);
        write_u32(&mut long, VECTOR_HEADER_SIZE, 400 << 2);
        assert_eq!(VectorView::parse(&long).unwrap().value(), None);
    }

    #[test]
    fn the_hash_is_fixed() {
        assert_eq!(vector_hash(b""), 0x811c_9dc5);
        assert_eq!(vector_hash(b"a"), 0xe40c_292c);
    }
}
