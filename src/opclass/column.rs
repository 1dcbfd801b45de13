//! pgvector's checks of the indexed column before a build.

use pgrx::{ereport, pg_sys, PgSqlErrorCode};

use crate::opclass::type_info::{Method, TypeInfo};
use crate::storage::Relation;

/// The indexed column's type and typmod (`atttypid`, `atttypmod` of the index's first column).
pub fn column_type(rel: Relation) -> (pg_sys::Oid, i32) {
    // SAFETY: rel is an open index; rd_att describes its columns (hnsw has one) and is not
    // released while the relation is open.
    let desc = unsafe { pgrx::PgTupleDesc::from_pg_unchecked((*rel.raw()).rd_att) };
    let attr = desc.get(0).expect("an hnsw index has one column");
    (attr.atttypid, attr.atttypmod)
}

/// pgvector's checks of the indexed column before a build, in its order; returns the column's
/// dimensions (its typmod).
pub fn check_build_column(rel: Relation, type_info: &TypeInfo, method: Method) -> i32 {
    let (typid, dimensions) = column_type(rel);
    if typid == pg_sys::VARBITOID {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("type not supported for {} index", method.name())
        );
    }
    if dimensions < 0 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "column does not have dimensions"
        );
    }
    if dimensions > type_info.max_dimensions {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!(
                "column cannot have more than {} dimensions for {} index",
                type_info.max_dimensions,
                method.name()
            )
        );
    }
    dimensions
}
