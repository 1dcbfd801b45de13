//! The metapage of an hnsw index, read under a share lock: pgvector's fields, and a quantized
//! index's quantizer section.

use crate::storage::{ReadMode, Relation};
use crate::stores::hnsw::format::{MetaPage, METAPAGE_BLKNO, PAGE_ID};
use vector_formats::hnsw_codes::QuantizerMeta;

/// Reads the metapage of `rel` under a share lock.
pub fn read_meta(rel: Relation) -> MetaPage {
    let guard = rel
        .with_page_id(PAGE_ID)
        .read_page(METAPAGE_BLKNO, ReadMode::Shared);
    match MetaPage::decode(guard.page().contents()) {
        Ok(meta) => meta,
        Err(_) => pgrx::error!("hnsw index is not valid"),
    }
}

/// The quantizer section of a quantized index's metapage, read under a share lock.
pub fn read_quantizer(rel: Relation) -> QuantizerMeta {
    let guard = rel
        .with_page_id(PAGE_ID)
        .read_page(METAPAGE_BLKNO, ReadMode::Shared);
    match QuantizerMeta::decode(guard.page().contents()) {
        Ok(meta) => meta,
        Err(e) => pgrx::error!("hnsw index is not valid: {e}"),
    }
}
