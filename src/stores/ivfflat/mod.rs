//! The IVFFlat stores: pgvector 0.8.6's page format ([`mod@format`]), the list pages
//! ([`lists`]) and the chains of entry pages ([`entries`]).

pub use vector_formats::ivfflat as format;
pub mod entries;
pub mod lists;
