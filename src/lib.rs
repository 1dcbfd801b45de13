//! `vector`: a drop-in replacement for pgvector 0.8.6, written with pgrx.
//!
//! The SQL surface is declared by hand in `sql/` (same objects and link symbols as pgvector);
//! this crate is the thin glue between those declarations and the pure-Rust crates.

pub mod am;
mod datum_tests;
pub mod fmgr;
pub mod opclass;
pub mod out_of_memory;
mod recv_tests;
pub mod storage;
pub mod stores;
pub mod types;

::pgrx::pg_module_magic!();

// The install script of `vector`: hand-written fragments, in dependency order, giving exactly
// pgvector 0.8.6's catalog. What this library adds lives in the companion extension
// `vector_rs` (sql/companion/), so that pgvector's own update scripts apply to our clusters.
::pgrx::extension_sql_file!("../sql/install/vector.sql", name = "vector_type", bootstrap);
::pgrx::extension_sql_file!(
    "../sql/install/halfvec.sql",
    name = "halfvec_type",
    requires = ["vector_type"]
);
::pgrx::extension_sql_file!(
    "../sql/install/bit.sql",
    name = "bit_functions",
    requires = ["halfvec_type"]
);
::pgrx::extension_sql_file!(
    "../sql/install/sparsevec.sql",
    name = "sparsevec_type",
    requires = ["bit_functions"]
);
::pgrx::extension_sql_file!(
    "../sql/install/hnsw.sql",
    name = "hnsw_access_method",
    requires = ["sparsevec_type"]
);
::pgrx::extension_sql_file!(
    "../sql/install/ivfflat.sql",
    name = "ivfflat_access_method",
    requires = ["hnsw_access_method"]
);

/// Runs when the library is loaded: keeps error reports free of Rust backtraces, and
/// registers both index methods' options and settings.
#[::pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    disable_backtrace_capture();
    am::hnsw::options::init();
    am::ivfflat::options::init();
    am::explain::init();
}

/// pgrx's panic hook captures a Rust backtrace for every ERROR raised through Rust and puts it
/// in the DETAIL when `RUST_BACKTRACE` is set in the server's environment, so the text a
/// client sees would depend on how the postmaster was started (and every error would pay for
/// the capture). `RUST_LIB_BACKTRACE` takes precedence over `RUST_BACKTRACE` for
/// `std::backtrace::Backtrace::capture`, which reads it at its first call, after this one.
fn disable_backtrace_capture() {
    // _PG_init runs in the process's only thread, so nothing reads the environment meanwhile.
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
