//! The datum codecs of pgvector's types, in plain Rust so that unit tests and fuzzers reach
//! them without a server: the varlena layouts (checked readers), the text input parsers and
//! the binary receive/send formats, with pgvector 0.8.6's checks in pgvector's order. Errors
//! carry what the extension needs to raise pgvector's own ERROR.

pub mod binary;
pub mod checks;
pub mod error;
pub mod text;
pub mod varlena;
