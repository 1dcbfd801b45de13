//! How a quantized hnsw index compares values: RaBitQ codes instead of vectors.
//!
//! A quantized index stores a code record (`vector_formats::hnsw_codes::CodeRecord`) where
//! pgvector's format stores the vector, so its comparison ([`Coded`](super::Coded)) hands every
//! distance to a [`CodeSpace`]: a query (a value of the column's type) against a record is the
//! estimate of `vector_rabitq`, a record against a record the code-to-code estimate, each code
//! in the region its record names (`vector_rabitq::Regions`). The exact distances of the final
//! candidates come from the operator class's own function on the full vectors.

use std::cell::RefCell;
use std::rc::Rc;
use vector_formats::hnsw_codes::{
    vector_hash, CodeMetric, CodeRecord, QuantizerMeta, RecordFactors,
};
use vector_formats::page::ItemPointer;
use vector_formats::varlena::DenseRef;
use vector_rabitq::{Factors, Layout, Metric, RegionQuery, Regions, Residual};

/// Standard deviations of an estimate's error taken as its bound: a reranked row is returned
/// once no candidate's estimate less this could still be nearer (about 6 in 100,000 exceed it
/// for a normal deviate).
pub const CONFIDENCE: f64 = 4.0;

/// The element type of the indexed column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dense {
    F32,
    F16,
}

/// Bits of the codes a build compares while it links the graph (as bytes, not bit planes),
/// whatever the index stores:
/// links chosen on coarse code-to-code estimates lose recall that no search gets back
/// (100k real 384-d rows, `ef_search` 40: the exact walk of a 4-bit-built graph 0.971 against
/// 0.979 for the exact graph, of a 1-bit-built one 0.921).
pub const BUILD_BITS: u8 = 8;

/// A query prepared for a [`CodeSpace`]: rotated once, and prepared for each region the
/// estimates meet (a cache the estimates fill, hence the cell; a search owns its query).
pub type Prepared = RefCell<RegionQuery>;

/// The regions (centroids, rotation, width) of one index and the column's element type;
/// during a build, also the finer codes that follow each stored record in memory (see
/// [`CodeSpace::for_build`]).
#[derive(Debug)]
pub struct CodeSpace {
    regions: Rc<Regions>,
    build: Option<Regions>,
    dense: Dense,
}

/// The metric a quantized index's metapage names.
fn metric_of(meta: &QuantizerMeta) -> Metric {
    match meta.metric {
        CodeMetric::L2Squared => Metric::L2Squared,
        CodeMetric::NegativeInnerProduct => Metric::NegativeInnerProduct,
    }
}

/// The regions a quantized index's metapage describes, with the centroids read
/// ([`QuantizerMeta::region_centroids`]): format 1's one centroid, or format 2's `K`.
pub fn regions_of(meta: &QuantizerMeta) -> Regions {
    Regions::new(
        meta.dims(),
        u32::from(meta.bits),
        metric_of(meta),
        Layout::BitPlanes,
        meta.seed,
        meta.region_centroids().to_vec(),
    )
}

impl CodeSpace {
    /// The space of an index whose regions are `regions`.
    pub fn new(regions: Rc<Regions>, dense: Dense) -> Self {
        CodeSpace {
            regions,
            build: None,
            dense,
        }
    }

    /// The space a quantized index's metapage describes (its centroids read).
    pub fn from_meta(meta: &QuantizerMeta, dense: Dense) -> Self {
        CodeSpace::new(Rc::new(regions_of(meta)), dense)
    }

    /// The space of a build of the index `meta` describes: each record is the stored record
    /// followed by a record of the same vector's [`BUILD_BITS`]-bit code (same centroids and
    /// rotation), and every distance compares those. The write-out keeps the stored part
    /// ([`Self::stored_record_size`]).
    pub fn for_build(meta: &QuantizerMeta, dense: Dense) -> Self {
        let mut space = CodeSpace::from_meta(meta, dense);
        if meta.bits < BUILD_BITS {
            // Bytes rather than bit planes: these codes never reach a page, and at 8 bits a
            // byte dot product is a few times faster (the build's hottest kernel).
            let r = &space.regions;
            space.build = Some(Regions::new(
                r.dims(),
                u32::from(BUILD_BITS),
                r.metric(),
                Layout::Bytes,
                r.seed(),
                meta.region_centroids().to_vec(),
            ));
        }
        space
    }

    /// The stored codes' regions.
    pub fn regions(&self) -> &Regions {
        &self.regions
    }

    /// Bytes of a code record of this space (in a build, the stored record and its finer one).
    pub fn record_size(&self) -> usize {
        let finer = self
            .build
            .as_ref()
            .map_or(0, |b| CodeRecord::size(b.code_bytes()));
        Self::stored_record_size(&self.regions) + finer
    }

    /// Bytes of the code record the index stores.
    pub fn stored_record_size(regions: &Regions) -> usize {
        CodeRecord::size(regions.code_bytes())
    }

    /// The regions the estimates use: the build's finer ones, if any.
    fn compared(&self) -> &Regions {
        self.build.as_ref().unwrap_or(&self.regions)
    }

    /// The values of a `vector` or `halfvec` varlena as `f32`, `None` if it is not one of this
    /// index's dimensions.
    pub fn floats(&self, value: &[u8]) -> Option<Vec<f32>> {
        dense_floats(self.dense, value).filter(|x| x.len() == self.regions.dims())
    }

    /// A query prepared for the estimates, from a value of the column's type.
    pub fn prepare(&self, value: &[u8]) -> Prepared {
        match self.floats(value) {
            Some(x) => RefCell::new(self.compared().prepare(&x)),
            None => dimension_mismatch(self.regions.dims(), value),
        }
    }

    /// The code record of `value` (a value of the column's type, normalized as the index
    /// stores it) in its nearest region, its full vector at `vector`, and `value` prepared as
    /// a query: what [`Self::prepare`] returns.
    pub fn record(&self, value: &[u8], vector: ItemPointer) -> (Vec<u8>, Prepared) {
        let Some(x) = self.floats(value) else {
            dimension_mismatch(self.regions.dims(), value);
        };
        let hash = vector_hash(value);
        let mut out = vec![0u8; self.record_size()];
        let stored = Self::stored_record_size(&self.regions);
        let region = self.regions.nearest_region(&x);
        // One residual for both codes: the build's regions have the same centroids and seed.
        let residual = self.regions.residual(region, &x);
        encode_record(
            &self.regions,
            &residual,
            vector,
            hash,
            region,
            &mut out[..stored],
        );
        if let Some(build) = &self.build {
            encode_record(
                build,
                &residual,
                ItemPointer::INVALID,
                hash,
                region,
                &mut out[stored..],
            );
        }
        (out, RefCell::new(self.compared().prepare(&x)))
    }

    /// The estimated distance from a prepared query to a stored record.
    #[inline]
    pub fn distance(&self, query: &Prepared, record: &[u8]) -> f64 {
        let (region, code, factors, _) = self.parts(record);
        self.compared()
            .distance(&mut query.borrow_mut(), region, code, &factors)
    }

    /// The estimated distance from a prepared query to a stored record, how far below it the
    /// exact distance can be ([`CONFIDENCE`] standard deviations of the estimate), and where
    /// the record says the element's full vector is: the record parsed once.
    #[inline]
    pub fn estimate_with_vector(&self, query: &Prepared, record: &[u8]) -> (f64, f64, ItemPointer) {
        let (region, code, factors, vector) = self.parts(record);
        let r = self.compared();
        let mut q = query.borrow_mut();
        (
            r.distance(&mut q, region, code, &factors),
            r.error_bound(&mut q, region, &factors, CONFIDENCE),
            vector,
        )
    }

    /// Where a stored record says the element's full vector is (a record of another size is
    /// corruption, as for the estimates).
    pub fn record_vector(&self, record: &[u8]) -> ItemPointer {
        self.parts(record).3
    }

    /// The estimated distance between two stored records (`a` plays the query).
    pub fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64 {
        let (ka, ca, fa, _) = self.parts(a);
        let (kb, cb, fb, _) = self.parts(b);
        self.compared().pair_distance((ka, ca, &fa), (kb, cb, &fb))
    }

    /// The bytes of a record of `len` bytes that the estimates read: in a build, the finer
    /// record that follows the stored one.
    pub fn compared_range(&self, len: usize) -> std::ops::Range<usize> {
        match &self.build {
            Some(build) if len == self.record_size() => {
                len - CodeRecord::size(build.code_bytes())..len
            }
            _ => 0..len,
        }
    }

    /// A record's region, code, factors and the place of its full vector (the stored
    /// record's: a build's finer record names none); a record of another size or of a region
    /// the index does not have is corruption.
    #[inline]
    fn parts<'a>(&self, record: &'a [u8]) -> (u32, &'a [u8], Factors, ItemPointer) {
        // In a build the finer record follows the stored one; it is the one compared.
        let compared = if record.len() == self.record_size() {
            &record[record.len() - CodeRecord::size(self.compared().code_bytes())..]
        } else {
            &[]
        };
        let parsed = match CodeRecord::parse(compared) {
            Ok(r) if r.code().len() == self.compared().code_bytes() => r,
            _ => pgrx::error!(
                "hnsw index is corrupted: a code record of {} bytes, expected {}",
                record.len(),
                self.record_size()
            ),
        };
        let region = parsed.region();
        if region as usize >= self.regions.count() {
            pgrx::error!(
                "hnsw index is corrupted: a code record of region {region}, the index has {}",
                self.regions.count()
            );
        }
        let f = parsed.factors();
        let factors = Factors {
            norm: f.norm,
            scale: f.scale,
            error: f.error,
            centroid_dot: f.centroid_dot,
            code_sum: f.code_sum,
        };
        (region, parsed.code(), factors, parsed.vector())
    }
}

/// Writes into `out` the code record of a rotated residual around `region`'s centroid.
fn encode_record(
    regions: &Regions,
    residual: &Residual,
    vector: ItemPointer,
    hash: u32,
    region: u32,
    out: &mut [u8],
) {
    let mut code = vec![0u8; regions.code_bytes()];
    let f = regions.encode_residual(residual, &mut code);
    let factors = RecordFactors {
        norm: f.norm,
        scale: f.scale,
        error: f.error,
        centroid_dot: f.centroid_dot,
        code_sum: f.code_sum,
    };
    CodeRecord::write(out, vector, factors, hash, region, &code);
}

/// The values of a `vector` (`F32`) or `halfvec` (`F16`) varlena as `f32`.
pub fn dense_floats(dense: Dense, value: &[u8]) -> Option<Vec<f32>> {
    Some(match dense {
        Dense::F32 => DenseRef::<f32>::read(value).ok()?.x.to_vec(),
        Dense::F16 => DenseRef::<half::f16>::read(value)
            .ok()?
            .x
            .iter()
            .map(|v| v.to_f32())
            .collect(),
    })
}

/// pgvector's error for a value whose dimensions differ from the index's.
fn dimension_mismatch(expected: usize, value: &[u8]) -> ! {
    let found = DenseRef::<f32>::read(value)
        .map(|v| v.x.len())
        .or_else(|_| DenseRef::<half::f16>::read(value).map(|v| v.x.len()))
        .unwrap_or(0);
    // The query's first, as the distance functions order them.
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
        format!("different vector dimensions {found} and {expected}")
    );
}
