//! pgvector 0.8.6's formats in plain Rust, so that unit tests and fuzzers reach them without a
//! server:
//!
//! * the datum codecs of its types: the varlena layouts (checked readers), the text input
//!   parsers and the binary receive/send formats, with pgvector's checks in pgvector's order
//!   (errors carry what the extension needs to raise pgvector's own ERROR);
//! * the page codecs: Postgres's page frame ([`page`]), and what pgvector's indexes store in
//!   it ([`hnsw`], [`ivfflat`]).

pub mod binary;
pub mod checks;
pub mod error;
pub mod hnsw;
pub mod hnsw_codes;
pub mod hnsw_filter;
pub mod ivfflat;
pub mod page;
pub mod text;
pub mod varlena;
