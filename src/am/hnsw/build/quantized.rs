//! What a quantized build (`WITH (quantization = 'rabitqN')`) adds to a build.
//!
//! 1. One pass over the table: each indexable value (detoasted, checked, normalized for the
//!    cosine operator classes) goes to a temporary file with its heap TID ([`Rows`]), and is
//!    added to a running sum. In a parallel build each participant reads a share into a file of
//!    its own.
//! 2. The quantizer is fixed ([`fix_quantizer`]): the rotation's seed is one draw of the
//!    session's `random()` (after `setseed()` a build is repeatable), the width the option's,
//!    and the region centroids come from k-means on a sample of the rows
//!    ([`vector_rabitq::fit`]); the metapage keeps the mean too.
//! 3. The rows are read back in order and inserted as their code records ([`row_value`]): codes
//!    and links only, a fraction of what a graph of vectors takes. Past `maintenance_work_mem`
//!    the rest go into the pages ([`super::sink`]), as `aminsert` would put them.
//! 4. The write-out puts the quantizer in the metapage, the graph pages in the order placement
//!    picks, then every element's full vector, read back from the file, on vector pages in
//!    that same order.
//!
//! Only the operator classes whose distance the codes estimate are accepted: l2, inner product
//! and cosine, on `vector` and `halfvec`.

use crate::am::hnsw::build::params::BuildParams;
use crate::am::hnsw::build::table::Table;
use crate::am::hnsw::insert::Levels;
use crate::opclass::codes::{dense_floats, Dense};
use crate::opclass::{Coded, CodedValue, Kernel, Support, Value};
use crate::storage::temp_file::TempFile;
use crate::storage::{ItemPointer, Relation};
use crate::stores::hnsw::build_pages::VectorOutput;
use pgrx::pg_sys;
use vector_formats::hnsw_codes::{
    CodeMetric, CodeRecord, QuantizerMeta, RegionsMeta, NO_VECTOR_PAGE,
};
use vector_formats::page::INVALID_BLOCK_NUMBER;
use vector_rabitq::code_bytes;
use vector_rabitq::fit::{
    error_share, fit_centroids, region_count, sample_rows, FitError, SplitMix, MAX_KEPT_ERROR_SHARE,
};

/// Mixed into the rotation's seed for the region sample's generator.
const REGION_SEED: u64 = 0x5245_4749_4f4e_5321;
/// The most bytes of sampled rows k-means learns the regions from.
const MAX_SAMPLE_BYTES: usize = 64 << 20;

/// Bytes before the vector in a row of the temporary file: the heap TID, padded.
const ROW_HEADER: usize = 8;

/// The element type and metric a quantized index of this operator class has; raises the
/// error for the classes the codes cannot serve.
pub fn code_kind(support: &Support, bits: u8) -> (Dense, CodeMetric) {
    match support.kernel() {
        Some(Kernel::VectorL2Squared) => (Dense::F32, CodeMetric::L2Squared),
        Some(Kernel::VectorNegativeInnerProduct) => (Dense::F32, CodeMetric::NegativeInnerProduct),
        Some(Kernel::HalfvecL2Squared) => (Dense::F16, CodeMetric::L2Squared),
        Some(Kernel::HalfvecNegativeInnerProduct) => (Dense::F16, CodeMetric::NegativeInnerProduct),
        _ => {
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("quantization \"rabitq{bits}\" is not supported for this operator class"),
                "Quantized hnsw indexes support the l2, inner product and cosine operator classes of vector and halfvec."
            );
        }
    }
}

/// Bytes of a stored value of `dims` dimensions (a varlena with a 4-byte header).
pub fn vector_size(dense: Dense, dims: u32) -> usize {
    let element = match dense {
        Dense::F32 => 4,
        Dense::F16 => 2,
    };
    8 + element * dims as usize
}

/// The rows of pass 1: heap TID and value, fixed size, in one temporary file, or in a parallel
/// build in one file per participant, numbered in the order of the files.
pub struct Rows {
    parts: Vec<RowFile>,
    row: usize,
}

struct RowFile {
    file: TempFile,
    count: u64,
}

impl Rows {
    /// An empty file of rows of `size`-byte values.
    pub fn new(file: TempFile, size: usize) -> Self {
        Rows {
            parts: vec![RowFile { file, count: 0 }],
            row: ROW_HEADER + size,
        }
    }

    /// The rows of `size`-byte values other processes wrote: each file with its row count.
    pub fn written(files: Vec<(TempFile, u64)>, size: usize) -> Self {
        Rows {
            parts: files
                .into_iter()
                .map(|(file, count)| RowFile { file, count })
                .collect(),
            row: ROW_HEADER + size,
        }
    }

    pub fn count(&self) -> u64 {
        self.parts.iter().map(|p| p.count).sum()
    }

    /// Bytes written to the last file.
    pub fn bytes(&self) -> u64 {
        self.parts.last().map_or(0, |p| p.file.len())
    }

    /// The file being written, for a parallel build to export.
    pub fn file_mut(&mut self) -> &mut TempFile {
        &mut self.parts.last_mut().expect("one file at least").file
    }

    fn push(&mut self, value: &[u8], tid: ItemPointer) {
        if value.len() + ROW_HEADER != self.row {
            pgrx::error!(
                "hnsw build: a value of {} bytes in a column of {}-byte values",
                value.len(),
                self.row - ROW_HEADER
            );
        }
        let mut header = [0u8; ROW_HEADER];
        header[..4].copy_from_slice(&tid.block.to_ne_bytes());
        header[4..6].copy_from_slice(&tid.offset.to_ne_bytes());
        let last = self.parts.last_mut().expect("one file at least");
        last.file.append(&header);
        last.file.append(value);
        last.count += 1;
    }

    /// Row `n`'s value into `out` (its heap TID returned).
    pub fn read(&mut self, n: u64, out: &mut [u8]) -> ItemPointer {
        let mut header = [0u8; ROW_HEADER];
        let mut first = 0;
        let part = self
            .parts
            .iter_mut()
            .find(|p| {
                first += p.count;
                n < first
            })
            .unwrap_or_else(|| pgrx::error!("hnsw build: row {n} is past the rows of the build"));
        let n = n - (first - part.count);
        part.file.read_at(n * self.row as u64, &mut header);
        part.file.read_next(out);
        ItemPointer::new(
            u32::from_ne_bytes(header[..4].try_into().unwrap()),
            u16::from_ne_bytes(header[4..6].try_into().unwrap()),
        )
    }

    /// Runs `write` (a write-out of the build graph) with the output that reads each
    /// element's full vector back from this file.
    pub fn write_out<T>(
        &mut self,
        quantizer: &QuantizerMeta,
        write: impl FnOnce(&mut VectorOutput<'_>) -> T,
    ) -> T {
        let mut read = |slot: u32, out: &mut [u8]| {
            self.read(u64::from(slot), out);
        };
        let mut output = VectorOutput {
            quantizer: quantizer.clone(),
            record_size: stored_record_size(quantizer),
            vector: &mut read,
        };
        write(&mut output)
    }
}

/// What one participant's share of pass 1 leaves: its rows, their per-dimension sum (for the
/// centroid) and the heap tuples it saw.
pub struct Scanned {
    pub rows: Rows,
    pub sum: Vec<f64>,
    pub reltuples: f64,
}

/// Pass 1 over the table, or over a parallel scan's share of it (`scan` not null): every
/// indexable value into `file`, and their sum.
///
/// # Safety
///
/// `table` is the build's; `scan` is null or a parallel scan of its heap.
pub unsafe fn scan_rows(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    bits: u8,
    table: Table,
    file: TempFile,
    scan: pg_sys::TableScanDesc,
) -> Scanned {
    let (dense, _) = code_kind(support, bits);
    let mut rows = Rows::new(file, vector_size(dense, checked.dimensions));
    let mut sum = vec![0f64; checked.dimensions as usize];
    let mut keep = |value: Value, tid: ItemPointer| {
        let bytes = value.bytes().expect("indexed values are not NULL");
        rows.push(bytes, tid);
        if let Some(x) = dense_floats(dense, bytes) {
            for (s, v) in sum.iter_mut().zip(x) {
                *s += f64::from(v);
            }
        }
    };
    // The leader's scan reports the blocks done, a parallel worker's does not.
    // SAFETY: a plain int of this process, read by value.
    let progress = unsafe { pg_sys::ParallelWorkerNumber } < 0;
    // SAFETY: per the contract.
    let (reltuples, _) = unsafe { table.scan_values(rel, support, scan, progress, &mut keep) };
    Scanned {
        rows,
        sum,
        reltuples,
    }
}

/// The quantizer of the `count` rows of `rows`, whose values sum to `sum`: the rotation's seed
/// drawn from `levels`, the regions fitted to a sample of the rows, the mean kept too.
pub fn fix_quantizer(
    support: &Support,
    checked: &BuildParams,
    bits: u8,
    sum: &[f64],
    rows: &mut Rows,
    levels: &mut Levels,
) -> QuantizerMeta {
    let (dense, metric) = code_kind(support, bits);
    let count = rows.count();
    let n = count.max(1) as f64;
    let centroid: Vec<f32> = sum.iter().map(|s| (s / n) as f32).collect();
    let seed = levels.draw_seed();
    let vector_size = vector_size(dense, checked.dimensions);
    let centroids = fit_regions(rows, dense, &centroid, vector_size, seed, checked.regions);
    QuantizerMeta {
        bits,
        metric,
        seed,
        vector_insert_page: NO_VECTOR_PAGE,
        vector_size: vector_size as u32,
        centroid: QuantizerMeta::stored_centroid(&centroid),
        regions: Some(RegionsMeta {
            count: (centroids.len() / centroid.len().max(1)) as u32,
            first_page: INVALID_BLOCK_NUMBER,
            centroids: QuantizerMeta::stored_centroid(&centroids),
        }),
    }
}

/// The region centroids of a build: k-means on a uniform sample of the rows, `regions` of them
/// (never more than the rows), by default one per [`vector_rabitq::fit::ROWS_PER_REGION`] rows
/// and only if they cut the rows' squared distance to their centroid to
/// [`MAX_KEPT_ERROR_SHARE`] of the distance to the mean; `mean` alone otherwise.
fn fit_regions(
    rows: &mut Rows,
    dense: Dense,
    mean: &[f32],
    vector_size: usize,
    seed: u64,
    regions: Option<usize>,
) -> Vec<f32> {
    let dims = mean.len();
    let k = regions
        .unwrap_or_else(|| region_count(rows.count()))
        .min(rows.count() as usize)
        .max(1);
    if k == 1 || dims == 0 {
        return mean.to_vec();
    }
    let mut random = SplitMix::new(seed ^ REGION_SEED);
    let want = (k * vector_rabitq::fit::SAMPLES_PER_REGION)
        .min(MAX_SAMPLE_BYTES / (4 * dims))
        .max(k);
    let picks = sample_rows(rows.count(), want, &mut random);
    let mut value = vec![0u8; vector_size];
    let samples: Vec<Vec<f32>> = picks
        .iter()
        .map(|&row| {
            rows.read(row, &mut value);
            dense_floats(dense, &value)
                .unwrap_or_else(|| pgrx::error!("hnsw build: row {row} is not a vector"))
        })
        .collect();
    let interrupt = || {
        pgrx::check_for_interrupts!();
    };
    let centroids = match fit_centroids(&samples, dims, k, &mut random, interrupt) {
        Ok(centroids) => centroids,
        Err(FitError::OutOfMemory(bytes)) => {
            crate::out_of_memory::raise(bytes, "the hnsw build's regions")
        }
        Err(FitError::NotFinite) => pgrx::error!("hnsw build: a region centroid is not finite"),
    };
    // Left to choose, keep the regions only where they pay for the queries' preparations.
    let share = error_share(&samples, &centroids, mean);
    pgrx::debug1!("hnsw build: {k} regions leave {share:.3} of the squared distance to the mean");
    if regions.is_none() && share > MAX_KEPT_ERROR_SHARE {
        return mean.to_vec();
    }
    centroids
}

/// Bytes of the code record the index stores for each element.
pub fn stored_record_size(quantizer: &QuantizerMeta) -> usize {
    CodeRecord::size(code_bytes(quantizer.dims(), u32::from(quantizer.bits)))
}

/// The value a build inserts for row `n` of the file: the vector, with its code record naming
/// the vector by its row until the write-out places it.
pub fn row_value(coded: &Coded, vector: &[u8], n: u64) -> CodedValue {
    coded.new_element(Value::from_bytes(vector), ItemPointer::new(n as u32, 0))
}
