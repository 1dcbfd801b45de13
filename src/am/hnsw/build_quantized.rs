//! `ambuild` of a quantized index (`WITH (quantization = 'rabitqN')`).
//!
//! 1. One pass over the table: each indexable value (detoasted, checked, normalized for the
//!    cosine operator classes) goes to a temporary file with its heap TID, and is added to a
//!    running sum.
//! 2. The quantizer is fixed: the centroid is the mean, the rotation's seed one draw of the
//!    session's `random()` (after `setseed()` a build is repeatable), the width the option's.
//! 3. The rows are read back in order and inserted into the graph in memory as their code
//!    records: codes and links only, a fraction of what a graph of vectors takes. Past
//!    `maintenance_work_mem` the graph is written out (with pgvector's NOTICE) and the rest go
//!    into the pages one by one, as `aminsert` would put them.
//! 4. The write-out puts the quantizer in the metapage, the graph pages in the order placement
//!    picks, then every element's full vector, read back from the file, on vector pages in
//!    that same order.
//!
//! Only the operator classes whose distance the codes estimate are accepted: l2, inner product
//! and cosine, on `vector` and `halfvec`.

use crate::am::hnsw::build::{flush_graph, report_progress, BuildParams, NoLongerFits, ScanState};
use crate::am::hnsw::build_parallel;
use crate::am::hnsw::insert::{insert_on_disk, Levels};
use crate::am::shared::codes::{dense_floats, CodeSpace, Dense};
use crate::am::shared::typeinfo::{Kernel, Support, Value};
use crate::storage::temp_file::TempFile;
use crate::storage::{ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::build_graph::{BuildGraph, LocalRegion};
use crate::stores::hnsw::build_pages::{write_graph, VectorOutput};
use crate::stores::hnsw::page_graph::PageGraph;
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::pg_sys;
use std::rc::Rc;
use vector_formats::hnsw_codes::{CodeMetric, CodeRecord, QuantizerMeta, NO_VECTOR_PAGE};
use vector_hnsw::storage::NewElement;
use vector_rabitq::code_bytes;

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

/// The rows of pass 1 in a temporary file: heap TID and value, fixed size.
pub struct Rows {
    file: TempFile,
    row: usize,
    count: u64,
}

impl Rows {
    /// An empty file of rows of `size`-byte values.
    pub fn new(file: TempFile, size: usize) -> Self {
        Rows {
            file,
            row: ROW_HEADER + size,
            count: 0,
        }
    }

    /// The `count` rows of `size`-byte values another process wrote to `file`.
    pub fn written(file: TempFile, size: usize, count: u64) -> Self {
        Rows {
            file,
            row: ROW_HEADER + size,
            count,
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of the file.
    pub fn bytes(&self) -> u64 {
        self.file.len()
    }

    /// The file, for a parallel build to export.
    pub fn file_mut(&mut self) -> &mut TempFile {
        &mut self.file
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
        self.file.append(&header);
        self.file.append(value);
        self.count += 1;
    }

    /// Row `n`'s value into `out` (its heap TID returned).
    pub fn read(&mut self, n: u64, out: &mut [u8]) -> ItemPointer {
        let mut header = [0u8; ROW_HEADER];
        self.file.read_at(n * self.row as u64, &mut header);
        self.file.read_next(out);
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

/// What pass 1 leaves: the rows, the heap tuples seen, and the quantizer fixed from them.
pub struct Loaded {
    pub rows: Rows,
    pub reltuples: f64,
    pub quantizer: QuantizerMeta,
    pub dense: Dense,
}

/// The table a build reads: `heap` null for an empty build (an INIT fork).
#[derive(Clone, Copy)]
pub struct Table {
    pub heap: pg_sys::Relation,
    pub index_info: *mut pg_sys::IndexInfo,
}

/// Pass 1: every indexable value of the table into `file`; then the quantizer, with the mean as
/// its centroid and the rotation's seed drawn from `levels`.
///
/// # Safety
///
/// `table` is the build's.
pub unsafe fn load_rows(
    rel: Relation,
    support: &Support,
    checked: &BuildParams,
    bits: u8,
    table: Table,
    file: TempFile,
    levels: &mut Levels,
) -> Loaded {
    let Table { heap, index_info } = table;
    let (dense, metric) = code_kind(support, bits);
    let size = vector_size(dense, checked.dimensions);
    let mut rows = Rows::new(file, size);
    let mut sum = vec![0f64; checked.dimensions as usize];
    let reltuples = if heap.is_null() {
        0.0
    } else {
        let mut keep = |value: Value, tid: ItemPointer| {
            let bytes = value.bytes().expect("indexed values are not NULL");
            rows.push(bytes, tid);
            if let Some(x) = dense_floats(dense, bytes) {
                for (s, v) in sum.iter_mut().zip(x) {
                    *s += f64::from(v);
                }
            }
        };
        let mut scan = ScanState::new(support, &mut keep);
        // SAFETY: per the contract.
        unsafe { scan.scan(heap, rel.raw(), index_info, std::ptr::null_mut(), true) }
    };
    let n = rows.count.max(1) as f64;
    let centroid: Vec<f32> = sum.iter().map(|s| (s / n) as f32).collect();
    let quantizer = QuantizerMeta {
        bits,
        metric,
        seed: levels.draw_seed(),
        vector_insert_page: NO_VECTOR_PAGE,
        vector_size: size as u32,
        centroid: QuantizerMeta::stored_centroid(&centroid),
    };
    Loaded {
        rows,
        reltuples,
        quantizer,
        dense,
    }
}

/// Bytes of the code record the index stores for each element.
pub fn stored_record_size(quantizer: &QuantizerMeta) -> usize {
    CodeRecord::size(code_bytes(
        quantizer.centroid.len(),
        u32::from(quantizer.bits),
    ))
}

/// A build graph's value as the pages store it: its record without the build's finer codes.
pub fn stored_value(value: Value, record_size: usize) -> Value {
    value.with_record_truncated(record_size)
}

/// The value a build inserts for row `n` of the file: the vector, with its code record naming
/// the vector by its row until the write-out places it.
pub fn row_value(codes: &CodeSpace, vector: &[u8], n: u64) -> Value {
    let (record, query) = codes.record(vector, ItemPointer::new(n as u32, 0));
    Value::from_bytes(vector).with_record_and_query(record, query)
}

/// A quantized build of `rel` from `heap` (null for an INIT fork): the heap tuples seen and the
/// tuples indexed. With parallel workers, see [`crate::am::hnsw::build_parallel`].
///
/// # Safety
///
/// `heap`, `index_info` are the build's (`heap` may be null for an empty build).
pub unsafe fn build(
    rel: Relation,
    support: &Support,
    checked: BuildParams,
    bits: u8,
    heap: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> (f64, i64) {
    // SAFETY: per the contract.
    let parallel =
        unsafe { build_parallel::build_quantized(rel, support, checked, bits, heap, index_info) };
    if let Some(counts) = parallel {
        return counts;
    }
    let mut levels = Levels::seeded_by_session_random();
    // SAFETY: per the contract.
    let Loaded {
        mut rows,
        reltuples,
        quantizer,
        dense,
    } = unsafe {
        load_rows(
            rel,
            support,
            &checked,
            bits,
            Table { heap, index_info },
            TempFile::create(),
            &mut levels,
        )
    };
    let size = quantizer.vector_size as usize;
    let codes = Rc::new(CodeSpace::for_build(&quantizer, dense));
    let record_size = stored_record_size(&quantizer);
    let coded = support.clone().with_codes(codes.clone());
    let params = checked.params;
    let memory_limit = crate::am::hnsw::build::maintenance_work_mem();
    let mut graph = BuildGraph::new(&coded, params.m, LocalRegion::default());
    let mut disk: Option<PageGraphWriter> = None;
    let mut vector = vec![0u8; size];
    let mut indtuples = 0i64;
    for n in 0..rows.count() {
        pgrx::check_for_interrupts!();
        let tid = rows.read(n, &mut vector);
        let level = levels.draw(params.m);
        let value = row_value(&codes, &vector, n);
        if disk.is_none() {
            let why = if graph.arena_bytes() >= memory_limit {
                Some(NoLongerFits::MaintenanceWorkMem)
            } else if graph
                .try_reserve_element(codes.record_size(), level)
                .is_err()
            {
                Some(NoLongerFits::Memory)
            } else {
                None
            };
            match why {
                None => {
                    let element = NewElement {
                        value,
                        heap_tid: tid,
                        level,
                    };
                    vector_hnsw::insert(&mut graph, element, &params);
                    indtuples += 1;
                    report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, indtuples);
                    continue;
                }
                Some(why) => {
                    rows.write_out(&quantizer, |output| {
                        flush_graph(rel, &graph, &checked, indtuples, why, Some(output))
                    });
                    let pages = PageGraph::open(rel);
                    disk = Some(PageGraphWriter::new(pages, WriteMode::Build));
                }
            }
        }
        if let Some(writer) = disk.as_mut() {
            insert_on_disk(writer, stored_value(value, record_size), tid, level);
        }
        indtuples += 1;
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, indtuples);
    }
    if disk.is_none() {
        rows.write_out(&quantizer, |output| {
            write_graph(
                rel,
                &graph,
                params,
                checked.dimensions,
                checked.placement,
                Some(output),
            )
        });
    }
    (reltuples, indtuples)
}
