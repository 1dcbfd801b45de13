//! Where a build's rows go: into the graph in memory while it has room, then, once it is full,
//! into the pages, as pgvector does.
//!
//! 1. Every row is inserted into the graph held in memory ([`BuildGraph`]) while its [`Room`]
//!    admits it: what pgvector would have allocated stays below `maintenance_work_mem` (a
//!    quantized build measures the codes it really holds), and the server can give the memory.
//! 2. When it does not, the build says so with pgvector's NOTICE, writes the graph to pages in
//!    pgvector's layout ([`crate::stores::hnsw::build_pages`]), and inserts this and every later
//!    row into the pages one by one, as `aminsert` does but without WAL.
//! 3. At the end, a graph still in memory is written out.
//!
//! A parallel build's participants share one graph and one room ([`super::parallel`]): the
//! first that finds it full writes it out for all.

use crate::am::hnsw::build::params::BuildParams;
use crate::am::hnsw::build::quantized::Rows;
use crate::am::hnsw::insert::insert_on_disk;
use crate::am::shared::build::report_progress;
use crate::opclass::Compare;
use crate::storage::lwlock::LockGuard;
use crate::storage::{ItemPointer, Relation, WriteMode};
use crate::stores::hnsw::build_graph::BuildGraph;
use crate::stores::hnsw::build_pages::{write_graph, VectorOutput};
use crate::stores::hnsw::build_region::{LocalRegion, Region};
use crate::stores::hnsw::page_graph::{IndexCompare, PageGraph};
use crate::stores::hnsw::page_graph_write::PageGraphWriter;
use pgrx::pg_sys;
use std::cell::Cell;
use vector_formats::hnsw_codes::QuantizerMeta;
use vector_hnsw::storage::NewElement;

/// Why the graph in memory takes no more rows.
#[derive(Clone, Copy)]
pub enum NoLongerFits {
    /// What pgvector would have allocated reached `maintenance_work_mem`.
    MaintenanceWorkMem,
    /// The server could not give the memory.
    Memory,
}

/// How much the graph in memory may hold, who writes it out, and who counts the rows: one
/// build process ([`Alone`]), or all the participants of a parallel build.
pub trait Room<R: Region> {
    /// Whether a row of `bytes` at `level` may go into `graph`; what must be held while it
    /// does (a parallel build's share of its flush lock), or why not.
    fn admit<C: Compare>(
        &self,
        graph: &mut BuildGraph<'_, R, C>,
        bytes: usize,
        level: u8,
    ) -> Result<Option<LockGuard<'_>>, NoLongerFits>;

    /// Writes the graph out, unless another participant did: `write` gets the rows indexed so
    /// far (for the NOTICE).
    fn flush_once(&self, write: impl FnOnce(i64));

    /// Whether the graph was written out, by this process or another.
    fn flushed(&self) -> bool;

    /// One more row indexed.
    fn counted(&self);

    /// Rows indexed so far, by every participant.
    fn rows(&self) -> i64;
}

/// The room of a build that runs in one process: `maintenance_work_mem`, measured as pgvector
/// allocates its graph, or for a quantized build as the codes and links really take.
pub struct Alone {
    limit: usize,
    quantized: bool,
    rows: Cell<i64>,
    flushed: Cell<bool>,
}

impl Alone {
    pub fn new(checked: &BuildParams) -> Self {
        Alone {
            limit: checked.memory,
            quantized: checked.quantization.is_some(),
            rows: Cell::new(0),
            flushed: Cell::new(false),
        }
    }
}

impl Room<LocalRegion> for Alone {
    fn admit<C: Compare>(
        &self,
        graph: &mut BuildGraph<'_, LocalRegion, C>,
        bytes: usize,
        level: u8,
    ) -> Result<Option<LockGuard<'_>>, NoLongerFits> {
        let used = if self.quantized {
            graph.arena_bytes()
        } else {
            graph.pgvector_memory()
        };
        if used >= self.limit {
            return Err(NoLongerFits::MaintenanceWorkMem);
        }
        graph
            .try_reserve_element(bytes, level)
            .map_err(|_| NoLongerFits::Memory)?;
        Ok(None)
    }

    fn flush_once(&self, write: impl FnOnce(i64)) {
        if !self.flushed.replace(true) {
            write(self.rows.get());
        }
    }

    fn flushed(&self) -> bool {
        self.flushed.get()
    }

    fn counted(&self) {
        self.rows.set(self.rows.get() + 1);
        report_progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, self.rows.get());
    }

    fn rows(&self) -> i64 {
        self.rows.get()
    }
}

/// The rows of one build process: the graph in memory, then the pages.
pub struct GraphSink<'s, R: Region, M: Room<R>, C: IndexCompare> {
    rel: Relation,
    checked: BuildParams,
    graph: BuildGraph<'s, R, C>,
    room: M,
    /// The pages, once the graph was written out.
    disk: Option<Box<PageGraphWriter<C>>>,
    /// A quantized build's quantizer and rows: the write-out reads each element's full vector
    /// back from them.
    vectors: Option<(QuantizerMeta, Rows)>,
}

impl<'s, R: Region, M: Room<R>, C: IndexCompare> GraphSink<'s, R, M, C> {
    pub fn new(rel: Relation, checked: BuildParams, graph: BuildGraph<'s, R, C>, room: M) -> Self {
        GraphSink {
            rel,
            checked,
            graph,
            room,
            disk: None,
            vectors: None,
        }
    }

    /// A quantized build's sink: its rows hold the vectors until the write-out.
    pub fn with_vectors(mut self, quantizer: QuantizerMeta, rows: Rows) -> Self {
        self.vectors = Some((quantizer, rows));
        self
    }

    pub fn room(&self) -> &M {
        &self.room
    }

    /// A quantized build's quantizer and rows.
    pub fn vectors_mut(&mut self) -> Option<&mut (QuantizerMeta, Rows)> {
        self.vectors.as_mut()
    }

    /// Inserts one row at `level`: into memory while the room admits it, else (after the graph
    /// was written out, once) into the pages.
    pub fn insert(&mut self, value: C::Value, tid: ItemPointer, level: u8) {
        if self.disk.is_none() && !self.room.flushed() {
            let bytes = C::stored(&value).map_or(0, <[u8]>::len);
            let why = match self.room.admit(&mut self.graph, bytes, level) {
                Ok(held) => {
                    let element = NewElement {
                        value,
                        heap_tid: tid,
                        level,
                    };
                    vector_hnsw::insert(&mut self.graph, element, &self.checked.params);
                    drop(held);
                    self.room.counted();
                    return;
                }
                Err(why) => why,
            };
            self.flush(why);
        }
        let (rel, settings) = (self.rel, self.checked.graph);
        let writer = self.disk.get_or_insert_with(|| {
            let graph = PageGraph::open_index(rel, settings);
            Box::new(PageGraphWriter::new(graph, WriteMode::Build))
        });
        insert_on_disk(writer, C::into_plain(value), tid, level);
        self.room.counted();
    }

    /// Writes the graph out (unless another participant did) after pgvector's NOTICE.
    fn flush(&mut self, why: NoLongerFits) {
        let (rel, checked, graph) = (self.rel, &self.checked, &self.graph);
        let vectors = &mut self.vectors;
        self.room.flush_once(|rows| {
            notice_no_longer_fits(why, rows);
            write_out(rel, checked, graph, vectors);
        });
    }

    /// The end of the build in this process: the graph goes to the pages unless it is there.
    pub fn finish(mut self) {
        if !self.room.flushed() {
            write_out(self.rel, &self.checked, &self.graph, &mut self.vectors);
        }
    }
}

/// The graph to the pages, with a quantized build's vectors read back from its rows.
fn write_out<R: Region, C: Compare>(
    rel: Relation,
    checked: &BuildParams,
    graph: &BuildGraph<'_, R, C>,
    vectors: &mut Option<(QuantizerMeta, Rows)>,
) {
    let write = |output: Option<&mut VectorOutput<'_>>| {
        write_graph(
            rel,
            graph,
            checked.params,
            checked.dimensions,
            checked.placement,
            output,
        )
    };
    match vectors {
        Some((quantizer, rows)) => rows.write_out(quantizer, |output| write(Some(output))),
        None => write(None),
    }
}

/// pgvector's NOTICE that the graph no longer fits, after `rows` rows.
fn notice_no_longer_fits(why: NoLongerFits, rows: i64) {
    let (what, detail, hint) = match why {
        NoLongerFits::MaintenanceWorkMem => (
            "maintenance_work_mem",
            "Building will take significantly more time.",
            "Increase maintenance_work_mem to speed up builds.",
        ),
        NoLongerFits::Memory => (
            "memory",
            "The server could not allocate more memory for it; building will take significantly more time.",
            "Give the server more memory, or lower maintenance_work_mem, to speed up builds.",
        ),
    };
    pg_sys::panic::ErrorReport::new(
        pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        format!("hnsw graph no longer fits into {what} after {rows} tuples"),
        "build",
    )
    .set_detail(detail)
    .set_hint(hint)
    .report(pgrx::PgLogLevel::NOTICE);
}
