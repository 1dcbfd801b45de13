//! Index options (`WITH (m = ..., ef_construction = ...)`) and the `hnsw.*` settings, with
//! pgvector 0.8.6's names, descriptions, ranges, defaults and errors.
//!
//! Both are registered once per backend by [`init`], called from `_PG_init`. The reloptions are
//! parsed by Postgres (`build_reloptions`) into [`HnswOptions`], a struct laid out as pgvector's
//! so `rd_options` reads the same; the range errors ("value 1 out of bounds for option "m"")
//! are Postgres's own. The settings live in cells Postgres writes through pointers.

use crate::am::shared::settings::{
    enum_entry, enum_option, int_option, PgCell, StaticTable, ENUM_END,
};
use crate::storage::io::{IoMethod, Settings};
use crate::storage::Relation;
use crate::stores::hnsw::build_pages::Placement;
use crate::stores::hnsw::format;
use crate::stores::hnsw::page_graph::GraphSettings;
use pgrx::pg_sys;
use std::ffi::c_int;

/// `HNSW_DEFAULT_M`.
pub const DEFAULT_M: i32 = 16;
/// `HNSW_MIN_M`.
pub const MIN_M: i32 = format::MIN_M as i32;
/// `HNSW_MAX_M`.
pub const MAX_M: i32 = format::MAX_M as i32;
/// `HNSW_DEFAULT_EF_CONSTRUCTION`.
pub const DEFAULT_EF_CONSTRUCTION: i32 = 64;
/// `HNSW_MIN_EF_CONSTRUCTION`.
pub const MIN_EF_CONSTRUCTION: i32 = 4;
/// `HNSW_MAX_EF_CONSTRUCTION`.
pub const MAX_EF_CONSTRUCTION: i32 = 1000;
/// `HNSW_DEFAULT_EF_SEARCH`.
pub const DEFAULT_EF_SEARCH: i32 = 40;
/// `HNSW_MIN_EF_SEARCH`.
pub const MIN_EF_SEARCH: i32 = 1;
/// `HNSW_MAX_EF_SEARCH`.
pub const MAX_EF_SEARCH: i32 = 1000;

static EF_SEARCH: PgCell<c_int> = PgCell::new(DEFAULT_EF_SEARCH);
static ITERATIVE_SCAN: PgCell<c_int> = PgCell::new(0);
static MAX_SCAN_TUPLES: PgCell<c_int> = PgCell::new(20000);
static SCAN_MEM_MULTIPLIER: PgCell<f64> = PgCell::new(1.0);
static RELOPT_KIND: PgCell<pg_sys::relopt_kind::Type> = PgCell::new(0);
static IO_METHOD: PgCell<c_int> = PgCell::new(IO_PREFETCH);
static PREFETCH_LOOKAHEAD: PgCell<c_int> = PgCell::new(DEFAULT_PREFETCH_LOOKAHEAD);
static HEAP_PREFETCH: PgCell<bool> = PgCell::new(true);
static BUILD_PLACEMENT: PgCell<c_int> = PgCell::new(PLACE_NEIGHBORS);
static BUILD_REGIONS: PgCell<c_int> = PgCell::new(0);
static BEAM_WIDTH: PgCell<c_int> = PgCell::new(1);
static DESCENT_EF: PgCell<c_int> = PgCell::new(-1);
static VACUUM_REPAIR: PgCell<c_int> = PgCell::new(REPAIR_LOCAL);
static RERANK_CANDIDATES: PgCell<c_int> = PgCell::new(DEFAULT_RERANK_CANDIDATES);

/// `hnsw.rerank_candidates` default: 16 reads 6 to 11% fewer blocks than 0 (every candidate) for
/// `LIMIT 10` at `ef_search` 40 and 80, at the same recall (docs/benchmarks.md).
pub const DEFAULT_RERANK_CANDIDATES: c_int = 16;
/// `hnsw.rerank_candidates` upper bound (that of `hnsw.ef_search`).
const MAX_RERANK_CANDIDATES: c_int = MAX_EF_SEARCH;

/// `hnsw.beam_width` upper bound: wider beams read more blocks than they save round trips on
/// every simulated disk (`crates/io/examples/beam.rs`).
const MAX_BEAM_WIDTH: c_int = 16;

/// `hnsw.io_method` values.
const IO_OFF: c_int = 0;
const IO_PREFETCH: c_int = 1;
const IO_READ_STREAM: c_int = 2;
/// `hnsw.prefetch_lookahead` default ([`vector_io::settings::DEFAULT_LOOKAHEAD`]).
pub const DEFAULT_PREFETCH_LOOKAHEAD: c_int = vector_io::settings::DEFAULT_LOOKAHEAD as c_int;
/// `hnsw.prefetch_lookahead` upper bound.
const MAX_PREFETCH_LOOKAHEAD: c_int = vector_io::settings::MAX_LOOKAHEAD as c_int;

static IO_METHOD_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 4]> = StaticTable([
    enum_entry(c"off", IO_OFF),
    enum_entry(c"prefetch", IO_PREFETCH),
    enum_entry(c"read_stream", IO_READ_STREAM),
    ENUM_END,
]);

/// `hnsw.build_placement` values.
const PLACE_NEIGHBORS: c_int = 0;
const PLACE_INSERTION: c_int = 1;

static BUILD_PLACEMENT_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 3]> = StaticTable([
    enum_entry(c"neighbors", PLACE_NEIGHBORS),
    enum_entry(c"insertion", PLACE_INSERTION),
    ENUM_END,
]);

/// `hnsw.vacuum_repair` values.
const REPAIR_SEARCH: c_int = 0;
const REPAIR_LOCAL: c_int = 1;

static VACUUM_REPAIR_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 3]> = StaticTable([
    enum_entry(c"search", REPAIR_SEARCH),
    enum_entry(c"local", REPAIR_LOCAL),
    ENUM_END,
]);

/// `hnsw.iterative_scan` values, as pgvector numbers them.
const ITERATIVE_OFF: c_int = 0;
const ITERATIVE_RELAXED: c_int = 1;
const ITERATIVE_STRICT: c_int = 2;

static ITERATIVE_SCAN_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 4]> = StaticTable([
    enum_entry(c"off", ITERATIVE_OFF),
    enum_entry(c"relaxed_order", ITERATIVE_RELAXED),
    enum_entry(c"strict_order", ITERATIVE_STRICT),
    ENUM_END,
]);

/// The `quantization` option's values: bits per coordinate of the codes, 0 for none.
static QUANTIZATION_VALUES: StaticTable<[pg_sys::relopt_enum_elt_def; 6]> = StaticTable([
    quantization_value(c"none", 0),
    quantization_value(c"rabitq1", 1),
    quantization_value(c"rabitq2", 2),
    quantization_value(c"rabitq4", 4),
    quantization_value(c"rabitq8", 8),
    pg_sys::relopt_enum_elt_def {
        string_val: std::ptr::null(),
        symbol_val: 0,
    },
]);

const fn quantization_value(
    name: &'static std::ffi::CStr,
    bits: c_int,
) -> pg_sys::relopt_enum_elt_def {
    pg_sys::relopt_enum_elt_def {
        string_val: name.as_ptr(),
        symbol_val: bits,
    }
}

/// The parsed reloptions (`rd_options`), laid out as pgvector's `HnswOptions` followed by ours.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HnswOptions {
    vl_len_: i32,
    pub m: c_int,
    pub ef_construction: c_int,
    /// Bits per coordinate of the codes of a quantized index, 0 for pgvector's format.
    pub quantization: c_int,
}

static RELOPT_TABLE: StaticTable<[pg_sys::relopt_parse_elt; 3]> = StaticTable([
    int_option(c"m", std::mem::offset_of!(HnswOptions, m)),
    int_option(
        c"ef_construction",
        std::mem::offset_of!(HnswOptions, ef_construction),
    ),
    enum_option(
        c"quantization",
        std::mem::offset_of!(HnswOptions, quantization),
    ),
]);

/// Registers the reloptions and settings (pgvector's `HnswInit`, less the build's lock
/// tranche). Call once per backend, from `_PG_init`.
pub fn init() {
    // SAFETY: called once from _PG_init, in the postmaster or a backend, where defining
    // reloptions and custom settings is allowed. Every string is 'static, every variable a
    // static that outlives the backend, and the enum table is NULL-terminated.
    unsafe {
        let kind = pg_sys::add_reloption_kind();
        RELOPT_KIND.set(kind);
        let lock = pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE;
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"m".as_ptr(),
            c"Max number of connections".as_ptr(),
            DEFAULT_M,
            MIN_M,
            MAX_M,
            lock,
        );
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"ef_construction".as_ptr(),
            c"Size of the dynamic candidate list for construction".as_ptr(),
            DEFAULT_EF_CONSTRUCTION,
            MIN_EF_CONSTRUCTION,
            MAX_EF_CONSTRUCTION,
            lock,
        );
        pg_sys::add_enum_reloption(
            kind as pg_sys::bits32,
            c"quantization".as_ptr(),
            c"Codes the graph walks on instead of the vectors".as_ptr(),
            QUANTIZATION_VALUES.0.as_ptr().cast_mut(),
            0,
            c"Valid values are \"none\", \"rabitq1\", \"rabitq2\", \"rabitq4\" and \"rabitq8\"."
                .as_ptr(),
            lock,
        );

        pg_sys::DefineCustomIntVariable(
            c"hnsw.ef_search".as_ptr(),
            c"Sets the size of the dynamic candidate list for search".as_ptr(),
            c"Valid range is 1..1000.".as_ptr(),
            EF_SEARCH.as_ptr(),
            DEFAULT_EF_SEARCH,
            MIN_EF_SEARCH,
            MAX_EF_SEARCH,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"hnsw.iterative_scan".as_ptr(),
            c"Sets the mode for iterative scans".as_ptr(),
            std::ptr::null(),
            ITERATIVE_SCAN.as_ptr(),
            ITERATIVE_OFF,
            ITERATIVE_SCAN_OPTIONS.0.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        // Approximate, and not applied to the first search of a scan.
        pg_sys::DefineCustomIntVariable(
            c"hnsw.max_scan_tuples".as_ptr(),
            c"Sets the max number of tuples to visit for iterative scans".as_ptr(),
            std::ptr::null(),
            MAX_SCAN_TUPLES.as_ptr(),
            20000,
            1,
            c_int::MAX,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        // The range of hash_mem_multiplier.
        pg_sys::DefineCustomRealVariable(
            c"hnsw.scan_mem_multiplier".as_ptr(),
            c"Sets the multiple of work_mem to use for iterative scans".as_ptr(),
            std::ptr::null(),
            SCAN_MEM_MULTIPLIER.as_ptr(),
            1.0,
            1.0,
            1000.0,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"hnsw.io_method".as_ptr(),
            c"Sets how HNSW graph walks overlap their page reads".as_ptr(),
            c"read_stream (PostgreSQL 17+) or prefetch overlap the reads of each hop within effective_io_concurrency; off reads one page at a time.".as_ptr(),
            IO_METHOD.as_ptr(),
            default_io_method(),
            IO_METHOD_OPTIONS.0.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomIntVariable(
            c"hnsw.prefetch_lookahead".as_ptr(),
            c"Sets how many upcoming candidates of a graph walk have their neighbors prefetched"
                .as_ptr(),
            c"0 turns look-ahead off. With prefetch, look-ahead runs only while it does not make the walk's hops slower.".as_ptr(),
            PREFETCH_LOOKAHEAD.as_ptr(),
            DEFAULT_PREFETCH_LOOKAHEAD,
            0,
            MAX_PREFETCH_LOOKAHEAD,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomIntVariable(
            c"hnsw.beam_width".as_ptr(),
            c"Sets how many candidates each round of a graph search expands together".as_ptr(),
            c"1 is pgvector's search. Wider beams read the neighbors of several candidates at once: fewer waits on slow storage, more pages read, and results that can differ from pgvector's.".as_ptr(),
            BEAM_WIDTH.as_ptr(),
            1,
            1,
            MAX_BEAM_WIDTH,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomIntVariable(
            c"hnsw.descent_ef".as_ptr(),
            c"Sets the size of the dynamic candidate list on the layers above the bottom one"
                .as_ptr(),
            c"-1 uses a quarter of hnsw.ef_search on quantized indexes and 1 on pgvector's format, whose results then stay pgvector's. 1 (or 0) is pgvector's greedy descent, which on clustered data can end in the wrong cluster and miss a query's neighbors altogether.".as_ptr(),
            DESCENT_EF.as_ptr(),
            -1,
            -1,
            MAX_EF_SEARCH,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomIntVariable(
            c"hnsw.build_regions".as_ptr(),
            c"Sets how many centroids a quantized index build takes its codes around".as_ptr(),
            c"0 takes one per 2000 rows, at most 256; each row is coded around its nearest centroid. Valid range is 0..256.".as_ptr(),
            BUILD_REGIONS.as_ptr(),
            0,
            0,
            vector_rabitq::fit::MAX_BUILD_REGIONS as c_int,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"hnsw.build_placement".as_ptr(),
            c"Sets which elements share index pages when an index is built".as_ptr(),
            c"neighbors puts graph neighbors on the same pages, so that cold searches read fewer blocks; insertion keeps pgvector's order. Results are the same either way.".as_ptr(),
            BUILD_PLACEMENT.as_ptr(),
            PLACE_NEIGHBORS,
            BUILD_PLACEMENT_OPTIONS.0.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"hnsw.vacuum_repair".as_ptr(),
            c"Sets how VACUUM reconnects elements that linked to deleted ones".as_ptr(),
            c"search runs a new neighbor search for each, as pgvector does; local chooses among their other neighbors and the deleted neighbors' neighbors, which costs a fraction of the reads and distances.".as_ptr(),
            VACUUM_REPAIR.as_ptr(),
            REPAIR_LOCAL,
            VACUUM_REPAIR_OPTIONS.0.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomIntVariable(
            c"hnsw.rerank_candidates".as_ptr(),
            c"Sets how many candidates of a quantized index are reranked by exact distance at a time".as_ptr(),
            c"Candidates are reranked in order of their lowest possible distance, a batch at a time, until no candidate left can be nearer; 0 reranks all of a search's candidates at once (the walk's queue: hnsw.ef_search, widened for coarse codes). Rows always come back in exact distance order.".as_ptr(),
            RERANK_CANDIDATES.as_ptr(),
            DEFAULT_RERANK_CANDIDATES,
            0,
            MAX_RERANK_CANDIDATES,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        // For A/B measurements of the table-row hints: superusers only, and it can only turn
        // hints off (never changes results).
        pg_sys::DefineCustomBoolVariable(
            c"hnsw.debug_heap_prefetch".as_ptr(),
            c"Prefetches the table blocks of the rows a cold scan returns next (for measurements)"
                .as_ptr(),
            std::ptr::null(),
            HEAP_PREFETCH.as_ptr(),
            true,
            pg_sys::GucContext::PGC_SUSET,
            (pg_sys::GUC_NO_SHOW_ALL | pg_sys::GUC_NOT_IN_SAMPLE) as c_int,
            None,
            None,
            None,
        );
        pg_sys::MarkGUCPrefixReserved(c"hnsw".as_ptr());
    }
}

/// `amoptions`: parses (and with `validate`, checks) the index's reloptions.
pub fn parse(reloptions: pg_sys::Datum, validate: bool) -> *mut pg_sys::bytea {
    let table = &RELOPT_TABLE.0;
    // SAFETY: the kind was registered by init() (the library is loaded before any hnsw index
    // is used); the table describes HnswOptions' int fields at their offsets; the result is
    // palloc'd by Postgres (or NULL when there are no options and validate is off).
    unsafe {
        pg_sys::build_reloptions(
            reloptions,
            validate,
            RELOPT_KIND.get(),
            std::mem::size_of::<HnswOptions>(),
            table.as_ptr(),
            table.len() as c_int,
        )
        .cast()
    }
}

/// The index's parsed options, if it has any.
fn index_options(rel: Relation) -> Option<HnswOptions> {
    // SAFETY: rel is open; rd_options is NULL or the HnswOptions built by `parse`.
    unsafe {
        let opts = (*rel.raw()).rd_options.cast::<HnswOptions>();
        (!opts.is_null()).then(|| *opts)
    }
}

/// `m` of the index's options (`HnswGetM`); the metapage's copy is what scans use.
pub fn m(rel: Relation) -> usize {
    index_options(rel).map_or(DEFAULT_M, |o| o.m) as usize
}

/// `ef_construction` of the index's options (`HnswGetEfConstruction`).
pub fn ef_construction(rel: Relation) -> usize {
    index_options(rel).map_or(DEFAULT_EF_CONSTRUCTION, |o| o.ef_construction) as usize
}

/// Bits per coordinate of the index's codes, `None` for pgvector's format (the option as set;
/// an index's metapage says what it was built with).
pub fn quantization(rel: Relation) -> Option<u8> {
    index_options(rel)
        .map(|o| o.quantization)
        .filter(|&bits| bits > 0)
        .map(|bits| bits as u8)
}

/// `hnsw.build_regions`: the regions a quantized build makes, `None` for its default.
pub fn build_regions() -> Option<usize> {
    let k = BUILD_REGIONS.get();
    (k > 0).then_some(k as usize)
}

/// `hnsw.rerank_candidates` (0: the walk's whole queue).
pub fn rerank_candidates() -> usize {
    RERANK_CANDIDATES.get().max(0) as usize
}

/// pgvector's build-time check of the two options.
pub fn check_build_options(m: usize, ef_construction: usize) {
    if ef_construction < 2 * m {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "ef_construction must be greater than or equal to 2 * m"
        );
    }
}

/// `hnsw.ef_search`.
pub fn ef_search() -> usize {
    EF_SEARCH.get().max(1) as usize
}

/// `hnsw.descent_ef`, unless left at -1 (the index's default).
pub fn descent_ef() -> Option<usize> {
    let width = DESCENT_EF.get();
    (width >= 0).then(|| width.max(1) as usize)
}

/// `hnsw.iterative_scan`.
pub fn iterative_scan() -> vector_hnsw::IterativeScan {
    match ITERATIVE_SCAN.get() {
        ITERATIVE_RELAXED => vector_hnsw::IterativeScan::Relaxed,
        ITERATIVE_STRICT => vector_hnsw::IterativeScan::Strict,
        _ => vector_hnsw::IterativeScan::Off,
    }
}

/// `hnsw.max_scan_tuples`.
pub fn max_scan_tuples() -> u64 {
    MAX_SCAN_TUPLES.get().max(1) as u64
}

/// `hnsw.scan_mem_multiplier`.
pub fn scan_mem_multiplier() -> f64 {
    SCAN_MEM_MULTIPLIER.get()
}

/// `work_mem` in kB.
pub fn work_mem_kb() -> usize {
    // SAFETY: work_mem is a plain int GUC of the server, read by value.
    unsafe { pg_sys::work_mem.max(0) as usize }
}

/// The scan settings now in effect; the memory limit is pgvector's
/// `work_mem * hnsw.scan_mem_multiplier` (kB) plus 256 bytes.
pub fn scan_params() -> vector_hnsw::ScanParams {
    vector_hnsw::ScanParams {
        ef_search: ef_search(),
        descent_ef: descent_ef().unwrap_or(1),
        mode: iterative_scan(),
        max_scan_tuples: max_scan_tuples(),
        max_memory: vector_hnsw::scan::memory_limit(work_mem_kb(), scan_mem_multiplier()),
        beam_width: BEAM_WIDTH.get().max(1) as usize,
    }
}

/// `hnsw.io_method`.
pub fn io_method() -> IoMethod {
    match IO_METHOD.get() {
        IO_OFF => IoMethod::Off,
        IO_PREFETCH => IoMethod::Prefetch,
        _ => IoMethod::ReadStream,
    }
}

/// `hnsw.build_placement`.
pub fn build_placement() -> Placement {
    match BUILD_PLACEMENT.get() {
        PLACE_INSERTION => Placement::Insertion,
        _ => Placement::Neighbors,
    }
}

/// `hnsw.vacuum_repair`.
pub fn vacuum_repair() -> vector_hnsw::RepairMode {
    match VACUUM_REPAIR.get() {
        REPAIR_LOCAL => vector_hnsw::RepairMode::Local,
        _ => vector_hnsw::RepairMode::Search,
    }
}

/// The read settings now in effect: `hnsw.io_method`, `hnsw.prefetch_lookahead` and the hidden
/// `hnsw.debug_heap_prefetch`.
/// What the page graph of `rel` takes from its options and this session's settings.
pub fn graph_settings(rel: Relation) -> GraphSettings {
    GraphSettings {
        ef_construction: ef_construction(rel),
        io: io_settings(),
    }
}

pub fn io_settings() -> Settings {
    Settings {
        method: io_method(),
        lookahead: PREFETCH_LOOKAHEAD.get().max(0) as usize,
        heap_prefetch: HEAP_PREFETCH.get(),
    }
}

/// The `hnsw.io_method` default ([`IoMethod::default_for`] this server).
fn default_io_method() -> c_int {
    let worker =
        crate::storage::io::READ_STREAMS && crate::storage::io::server_io_method_is_worker();
    match IoMethod::default_for(crate::storage::io::READ_STREAMS, worker) {
        IoMethod::ReadStream => IO_READ_STREAM,
        IoMethod::Prefetch => IO_PREFETCH,
        IoMethod::Off => IO_OFF,
    }
}
