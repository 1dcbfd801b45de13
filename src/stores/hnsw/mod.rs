//! The HNSW graph stores: pgvector 0.8.6's page format ([`mod@format`]), the graph read from pages
//! ([`page_graph`]), changed in pages ([`page_graph_write`]) and passed over by vacuum
//! ([`page_graph_vacuum`]), the graph a build keeps in memory ([`build_graph`]) and writes out
//! ([`build_pages`]), the metapage ([`metapage`]), and a quantized index's full vectors
//! ([`vector_pages`]).

pub use vector_formats::hnsw as format;
pub mod build_graph;
pub mod build_memory;
pub mod build_pages;
pub mod build_region;
pub mod centroid_pages;
pub mod metapage;
pub mod page_graph;
pub mod page_graph_vacuum;
pub mod page_graph_values;
pub mod page_graph_write;
pub mod vector_pages;
