//! `vector`: a drop-in replacement for pgvector 0.8.6, written with pgrx.
//!
//! The SQL surface is declared by hand in `sql/` (same objects and link symbols as pgvector);
//! this crate is the thin glue between those declarations and the pure-Rust crates.

pub mod am;
mod datum_tests;
pub mod fmgr;
mod recv_tests;
pub mod storage;
pub mod stores;
pub mod types;

::pgrx::pg_module_magic!();

// The install script: hand-written fragments, in dependency order.
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

/// Runs when the library is loaded: registers both index methods' options and settings.
#[::pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    am::hnsw::options::init();
    am::ivfflat::options::init();
    am::explain::init();
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
