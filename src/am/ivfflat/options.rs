//! The index option (`WITH (lists = ...)`) and the `ivfflat.*` settings, with pgvector 0.8.6's
//! names, descriptions, ranges, defaults and errors.

use crate::am::shared::settings::{enum_entry, int_option, PgCell, StaticTable, ENUM_END};
use crate::storage::Relation;
use crate::stores::ivfflat::format::{DEFAULT_LISTS, MAX_LISTS, MIN_LISTS};
use pgrx::pg_sys;
use std::ffi::c_int;

/// `IVFFLAT_DEFAULT_PROBES`.
const DEFAULT_PROBES: c_int = 1;

static PROBES: PgCell<c_int> = PgCell::new(DEFAULT_PROBES);
static ITERATIVE_SCAN: PgCell<c_int> = PgCell::new(ITERATIVE_OFF);
static MAX_PROBES: PgCell<c_int> = PgCell::new(MAX_LISTS);
static RELOPT_KIND: PgCell<pg_sys::relopt_kind::Type> = PgCell::new(0);
static IO_METHOD: PgCell<c_int> = PgCell::new(IO_PREFETCH);

/// `ivfflat.io_method` values (ours; pgvector reads list pages one after the other).
const IO_OFF: c_int = 0;
const IO_PREFETCH: c_int = 1;

static IO_METHOD_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 3]> = StaticTable([
    enum_entry(c"off", IO_OFF),
    enum_entry(c"prefetch", IO_PREFETCH),
    ENUM_END,
]);

/// `ivfflat.iterative_scan` values, as pgvector numbers them.
const ITERATIVE_OFF: c_int = 0;
const ITERATIVE_RELAXED: c_int = 1;

static ITERATIVE_SCAN_OPTIONS: StaticTable<[pg_sys::config_enum_entry; 3]> = StaticTable([
    enum_entry(c"off", ITERATIVE_OFF),
    enum_entry(c"relaxed_order", ITERATIVE_RELAXED),
    ENUM_END,
]);

/// The parsed reloptions (`rd_options`), laid out as pgvector's `IvfflatOptions`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct IvfflatOptions {
    vl_len_: i32,
    lists: c_int,
}

static RELOPT_TABLE: StaticTable<[pg_sys::relopt_parse_elt; 1]> = StaticTable([int_option(
    c"lists",
    std::mem::offset_of!(IvfflatOptions, lists),
)]);

/// Registers the reloption and the settings (pgvector's `IvfflatInit`). Call once per
/// backend, from `_PG_init`.
pub fn init() {
    // SAFETY: called once from _PG_init, where defining reloptions and custom settings is
    // allowed. Every string is 'static, every variable a static that outlives the backend, and
    // the enum table is terminated.
    unsafe {
        let kind = pg_sys::add_reloption_kind();
        RELOPT_KIND.set(kind);
        pg_sys::add_int_reloption(
            kind as pg_sys::bits32,
            c"lists".as_ptr(),
            c"Number of inverted lists".as_ptr(),
            DEFAULT_LISTS,
            MIN_LISTS,
            MAX_LISTS,
            pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE,
        );
        pg_sys::DefineCustomIntVariable(
            c"ivfflat.probes".as_ptr(),
            c"Sets the number of probes".as_ptr(),
            c"Valid range is 1..lists.".as_ptr(),
            PROBES.as_ptr(),
            DEFAULT_PROBES,
            MIN_LISTS,
            MAX_LISTS,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"ivfflat.iterative_scan".as_ptr(),
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
        pg_sys::DefineCustomIntVariable(
            c"ivfflat.max_probes".as_ptr(),
            c"Sets the max number of probes for iterative scans".as_ptr(),
            std::ptr::null(),
            MAX_PROBES.as_ptr(),
            MAX_LISTS,
            MIN_LISTS,
            MAX_LISTS,
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::DefineCustomEnumVariable(
            c"ivfflat.io_method".as_ptr(),
            c"Sets how ivfflat scans read the pages of their lists".as_ptr(),
            c"prefetch hints the pages ahead of the reads within effective_io_concurrency once they come from a device (unless plain reads have been faster in this session), and reads lists found in the page cache through read streams; off reads one page at a time.".as_ptr(),
            IO_METHOD.as_ptr(),
            IO_PREFETCH,
            IO_METHOD_OPTIONS.0.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            0,
            None,
            None,
            None,
        );
        pg_sys::MarkGUCPrefixReserved(c"ivfflat".as_ptr());
    }
}

/// `amoptions`: parses (and with `validate`, checks) the index's reloptions.
pub fn parse(reloptions: pg_sys::Datum, validate: bool) -> *mut pg_sys::bytea {
    let table = &RELOPT_TABLE.0;
    // SAFETY: the kind was registered by init() (the library is loaded before any ivfflat
    // index is used); the table describes IvfflatOptions' int field at its offset; the result
    // is palloc'd by Postgres (or NULL when there are no options and validate is off).
    unsafe {
        pg_sys::build_reloptions(
            reloptions,
            validate,
            RELOPT_KIND.get(),
            std::mem::size_of::<IvfflatOptions>(),
            table.as_ptr(),
            table.len() as c_int,
        )
        .cast()
    }
}

/// `lists` of the index's options (`IvfflatGetLists`); the metapage's copy is what scans use.
pub fn lists(rel: Relation) -> usize {
    // SAFETY: rel is open; rd_options is NULL or the IvfflatOptions built by `parse`.
    let lists = unsafe {
        let opts = (*rel.raw()).rd_options.cast::<IvfflatOptions>();
        if opts.is_null() {
            DEFAULT_LISTS
        } else {
            (*opts).lists
        }
    };
    lists.max(1) as usize
}

/// `ivfflat.probes`.
pub fn probes() -> usize {
    PROBES.get().max(1) as usize
}

/// Whether `ivfflat.iterative_scan` is `relaxed_order`.
pub fn iterative() -> bool {
    ITERATIVE_SCAN.get() == ITERATIVE_RELAXED
}

/// `ivfflat.max_probes`.
pub fn max_probes() -> usize {
    MAX_PROBES.get().max(1) as usize
}

/// Whether `ivfflat.io_method` is `prefetch`.
pub fn io_prefetch() -> bool {
    IO_METHOD.get() == IO_PREFETCH
}
