//! How a quantized hnsw index compares values: RaBitQ codes instead of vectors.
//!
//! A quantized index stores a code record (`vector_formats::hnsw_codes::CodeRecord`) where
//! pgvector's format stores the vector, so its comparison ([`Coded`](super::Coded)) hands every
//! distance to a [`CodeSpace`]: a query (a value of the column's type) against a record is the
//! estimate of `vector_rabitq`, a record against a record the code-to-code estimate. The exact
//! distances of the final candidates come from the operator class's own function on the full
//! vectors.

use vector_formats::hnsw_codes::{
    vector_hash, CodeMetric, CodeRecord, QuantizerMeta, RecordFactors,
};
use vector_formats::page::ItemPointer;
use vector_formats::varlena::DenseRef;
use vector_rabitq::{Factors, Metric, Quantizer, QueryCode, Residual};

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

/// The quantizer of one index and the column's element type; during a build, also the finer
/// quantizer whose codes follow each stored record in memory (see [`CodeSpace::for_build`]).
#[derive(Debug)]
pub struct CodeSpace {
    quantizer: Quantizer,
    build: Option<Quantizer>,
    dense: Dense,
}

impl CodeSpace {
    /// The space a quantized index's metapage describes.
    pub fn from_meta(meta: &QuantizerMeta, dense: Dense) -> Self {
        let metric = match meta.metric {
            CodeMetric::L2Squared => Metric::L2Squared,
            CodeMetric::NegativeInnerProduct => Metric::NegativeInnerProduct,
        };
        let quantizer = Quantizer::new(
            meta.centroid.len(),
            u32::from(meta.bits),
            metric,
            meta.centroid.clone(),
            meta.seed,
        );
        CodeSpace {
            quantizer,
            build: None,
            dense,
        }
    }

    /// The space of a build of the index `meta` describes: each record is the stored record
    /// followed by a record of the same vector's [`BUILD_BITS`]-bit code (same centroid and
    /// rotation), and every distance compares those. The write-out keeps the stored part
    /// ([`Self::stored_record_size`]).
    pub fn for_build(meta: &QuantizerMeta, dense: Dense) -> Self {
        let mut space = CodeSpace::from_meta(meta, dense);
        if meta.bits < BUILD_BITS {
            // Bytes rather than bit planes: these codes never reach a page, and at 8 bits a
            // byte dot product is a few times faster (the build's hottest kernel).
            let q = &space.quantizer;
            space.build = Some(Quantizer::with_byte_codes(
                q.dims(),
                q.metric(),
                q.centroid().to_vec(),
                meta.seed,
            ));
        }
        space
    }

    pub fn quantizer(&self) -> &Quantizer {
        &self.quantizer
    }

    /// Bytes of a code record of this space (in a build, the stored record and its finer one).
    pub fn record_size(&self) -> usize {
        let finer = self
            .build
            .as_ref()
            .map_or(0, |b| CodeRecord::size(b.code_bytes()));
        Self::stored_record_size(&self.quantizer) + finer
    }

    /// Bytes of the code record the index stores.
    pub fn stored_record_size(quantizer: &Quantizer) -> usize {
        CodeRecord::size(quantizer.code_bytes())
    }

    /// The quantizer the estimates use: the build's finer one, if any.
    fn compared(&self) -> &Quantizer {
        self.build.as_ref().unwrap_or(&self.quantizer)
    }

    /// The values of a `vector` or `halfvec` varlena as `f32`, `None` if it is not one of this
    /// index's dimensions.
    pub fn floats(&self, value: &[u8]) -> Option<Vec<f32>> {
        dense_floats(self.dense, value).filter(|x| x.len() == self.quantizer.dims())
    }

    /// A query prepared for the estimates, from a value of the column's type.
    pub fn prepare(&self, value: &[u8]) -> QueryCode {
        match self.floats(value) {
            Some(x) => self.compared().prepare(&x),
            None => dimension_mismatch(self.quantizer.dims(), value),
        }
    }

    /// The code record of `value` (a value of the column's type, normalized as the index
    /// stores it), its full vector at `vector`, and `value` prepared as a query: what
    /// [`Self::prepare`] returns, from the same rotation.
    pub fn record(&self, value: &[u8], vector: ItemPointer) -> (Vec<u8>, QueryCode) {
        let Some(x) = self.floats(value) else {
            dimension_mismatch(self.quantizer.dims(), value);
        };
        let hash = vector_hash(value);
        let mut out = vec![0u8; self.record_size()];
        let stored = Self::stored_record_size(&self.quantizer);
        // One rotation for both codes and the query: the build's quantizer has the same
        // centroid and seed.
        let residual = self.quantizer.residual(&x);
        encode_record(&self.quantizer, &residual, vector, hash, &mut out[..stored]);
        if let Some(build) = &self.build {
            encode_record(
                build,
                &residual,
                ItemPointer::INVALID,
                hash,
                &mut out[stored..],
            );
        }
        (out, self.compared().prepare_residual(&residual))
    }

    /// The estimated distance from a prepared query to a stored record.
    #[inline]
    pub fn distance(&self, query: &QueryCode, record: &[u8]) -> f64 {
        let (code, factors) = self.parts(record);
        self.compared().distance(query, code, &factors)
    }

    /// The estimated distance from a prepared query to a stored record, and how far below it
    /// the exact distance can be ([`CONFIDENCE`] standard deviations of the estimate).
    #[inline]
    pub fn estimate(&self, query: &QueryCode, record: &[u8]) -> (f64, f64) {
        let (code, factors) = self.parts(record);
        let q = self.compared();
        (
            q.distance(query, code, &factors),
            q.error_bound(query, &factors, CONFIDENCE),
        )
    }

    /// [`estimate`](Self::estimate), and where the record says the element's full vector is:
    /// the record parsed once.
    #[inline]
    pub fn estimate_with_vector(
        &self,
        query: &QueryCode,
        record: &[u8],
    ) -> (f64, f64, ItemPointer) {
        let (code, factors, vector) = self.parts_and_vector(record);
        let q = self.compared();
        (
            q.distance(query, code, &factors),
            q.error_bound(query, &factors, CONFIDENCE),
            vector,
        )
    }

    /// Where a stored record says the element's full vector is (a record of another size is
    /// corruption, as for the estimates).
    pub fn record_vector(&self, record: &[u8]) -> ItemPointer {
        self.parts_and_vector(record).2
    }

    /// The estimated distance between two stored records (`a` plays the query).
    pub fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64 {
        let (ca, fa) = self.parts(a);
        let (cb, fb) = self.parts(b);
        self.compared().pair_distance((ca, &fa), (cb, &fb))
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

    /// A record's code and factors; a record of another size is corruption.
    #[inline]
    fn parts<'a>(&self, record: &'a [u8]) -> (&'a [u8], Factors) {
        let (code, factors, _) = self.parts_and_vector(record);
        (code, factors)
    }

    /// A record's code, factors and the place of its full vector (the stored record's: a
    /// build's finer record names none).
    #[inline]
    fn parts_and_vector<'a>(&self, record: &'a [u8]) -> (&'a [u8], Factors, ItemPointer) {
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
        let f = parsed.factors();
        let factors = Factors {
            norm: f.norm,
            scale: f.scale,
            error: f.error,
            centroid_dot: f.centroid_dot,
            code_sum: f.code_sum,
        };
        (parsed.code(), factors, parsed.vector())
    }
}

/// Writes into `out` the code record of a rotated residual under `quantizer`.
fn encode_record(
    quantizer: &Quantizer,
    residual: &Residual,
    vector: ItemPointer,
    hash: u32,
    out: &mut [u8],
) {
    let mut code = vec![0u8; quantizer.code_bytes()];
    let f = quantizer.encode_residual(residual, &mut code);
    let factors = RecordFactors {
        norm: f.norm,
        scale: f.scale,
        error: f.error,
        centroid_dot: f.centroid_dot,
        code_sum: f.code_sum,
    };
    CodeRecord::write(out, vector, factors, hash, &code);
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
