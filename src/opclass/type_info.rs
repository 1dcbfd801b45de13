//! The indexed type, as an operator class tells it: support functions 1 (distance) and 2
//! (norm), then the type info function (3 for hnsw, 5 for ivfflat, whose 3 and 4 are the k-means
//! distance and norm), the dimension limits and how values are normalized.
//!
//! The type info function (`hnsw_halfvec_support`, `hnsw_bit_support`,
//! `hnsw_sparsevec_support`, `ivfflat_halfvec_support`, `ivfflat_bit_support`) returns a
//! pointer to one of the [`TypeInfo`] records below; an operator class without it is for
//! `vector`. Only this library calls those functions, so the record is ours to define.

use pgrx::{ereport, pg_sys, PgSqlErrorCode};

use crate::fmgr;
use crate::opclass::kernels::{
    halfvec_l2_normalize, l2_normalize, sparse_parts, sparsevec_l2_normalize,
};
use crate::storage::Relation;

/// `HNSW_DISTANCE_PROC`, `IVFFLAT_DISTANCE_PROC`.
pub const DISTANCE_PROC: u16 = 1;
/// `HNSW_NORM_PROC`, `IVFFLAT_NORM_PROC`.
pub const NORM_PROC: u16 = 2;

/// The access method an index belongs to: its name in messages and where its operator
/// classes keep the type info function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Hnsw,
    Ivfflat,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Hnsw => "hnsw",
            Method::Ivfflat => "ivfflat",
        }
    }

    /// `HNSW_TYPE_INFO_PROC`, `IVFFLAT_TYPE_INFO_PROC`.
    pub fn type_info_proc(self) -> u16 {
        match self {
            Method::Hnsw => 3,
            Method::Ivfflat => 5,
        }
    }
}

/// `HNSW_MAX_DIM`: dimensions of an indexable `vector`.
pub const MAX_DIM: i32 = 2000;
/// `HNSW_MAX_NNZ`: non-zero elements of an indexable `sparsevec`.
pub const MAX_NNZ: usize = 1000;

/// The indexed type, as told by support function 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    Vector,
    Halfvec,
    Bit,
    Sparsevec,
}

/// Per-type facts (pgvector's `HnswTypeInfo`).
#[derive(Debug)]
pub struct TypeInfo {
    pub kind: ValueKind,
    /// Largest `typmod` (dimensions, or bits) an indexed column may have.
    pub max_dimensions: i32,
}

static VECTOR_INFO: TypeInfo = TypeInfo {
    kind: ValueKind::Vector,
    max_dimensions: MAX_DIM,
};
static HALFVEC_INFO: TypeInfo = TypeInfo {
    kind: ValueKind::Halfvec,
    max_dimensions: MAX_DIM * 2,
};
static BIT_INFO: TypeInfo = TypeInfo {
    kind: ValueKind::Bit,
    max_dimensions: MAX_DIM * 32,
};
static SPARSEVEC_INFO: TypeInfo = TypeInfo {
    kind: ValueKind::Sparsevec,
    max_dimensions: crate::types::layout::SPARSEVEC_MAX_DIM as i32,
};

fn type_info_datum(info: &'static TypeInfo) -> pg_sys::Datum {
    fmgr::pointer_datum(info as *const TypeInfo as *mut TypeInfo)
}

crate::sql_function! {
    /// `hnsw_halfvec_support(internal)`: support function 3 of the halfvec operator classes.
    fn hnsw_halfvec_support(_call) {
        type_info_datum(&HALFVEC_INFO)
    }
}

crate::sql_function! {
    /// `hnsw_bit_support(internal)`: support function 3 of the bit operator classes.
    fn hnsw_bit_support(_call) {
        type_info_datum(&BIT_INFO)
    }
}

crate::sql_function! {
    /// `hnsw_sparsevec_support(internal)`: support function 3 of the sparsevec operator classes.
    fn hnsw_sparsevec_support(_call) {
        type_info_datum(&SPARSEVEC_INFO)
    }
}

crate::sql_function! {
    /// `ivfflat_halfvec_support(internal)`: support function 5 of ivfflat's halfvec operator
    /// classes.
    fn ivfflat_halfvec_support(_call) {
        type_info_datum(&HALFVEC_INFO)
    }
}

crate::sql_function! {
    /// `ivfflat_bit_support(internal)`: support function 5 of ivfflat's bit operator class.
    fn ivfflat_bit_support(_call) {
        type_info_datum(&BIT_INFO)
    }
}

impl TypeInfo {
    /// The record for the index's column: from the type info function, or `vector`'s
    /// without it.
    pub fn for_index(rel: Relation, method: Method) -> &'static TypeInfo {
        let procnum = method.type_info_proc();
        let Some(proc) = optional_proc(rel, procnum) else {
            return &VECTOR_INFO;
        };
        // SAFETY: proc is the FmgrInfo of the index's type info function, which takes no
        // argument that it reads and returns a pointer (checked below before any use).
        let datum = unsafe { pg_sys::FunctionCall0Coll(proc, pg_sys::InvalidOid) };
        let ptr = datum.cast_mut_ptr::<TypeInfo>().cast_const();
        [&HALFVEC_INFO, &BIT_INFO, &SPARSEVEC_INFO]
            .into_iter()
            .find(|known| std::ptr::eq(*known, ptr))
            .unwrap_or_else(|| {
                pgrx::error!(
                    "{} support function {procnum} did not return a known type info",
                    method.name()
                )
            })
    }

    /// pgvector's `checkValue`: values that cannot be indexed although the type accepts them.
    pub fn check_value(&self, value: &[u8]) {
        if self.kind == ValueKind::Sparsevec {
            if let Some((_, sparse)) = sparse_parts(value) {
                if sparse.indices.len() > MAX_NNZ {
                    ereport!(
                        ERROR,
                        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                        format!(
                            "sparsevec cannot have more than {MAX_NNZ} non-zero elements for hnsw index"
                        )
                    );
                }
            }
        }
    }

    /// The SQL-callable function that normalizes a value of this type (`l2_normalize`).
    pub fn normalize_fn(&self) -> pg_sys::PGFunction {
        match self.kind {
            ValueKind::Vector => Some(l2_normalize),
            ValueKind::Halfvec => Some(halfvec_l2_normalize),
            ValueKind::Sparsevec => Some(sparsevec_l2_normalize),
            ValueKind::Bit => None,
        }
    }
}

/// `index_getprocinfo` of the first column's support function `procnum`, if the operator
/// class has one.
pub fn optional_proc(rel: Relation, procnum: u16) -> Option<*mut pg_sys::FmgrInfo> {
    // SAFETY: the relation is an open index (Relation's contract); both calls only look up the
    // relcache entry's support function array for column 1, which every hnsw index has.
    unsafe {
        let oid = pg_sys::index_getprocid(rel.raw(), 1, procnum);
        if oid == pg_sys::InvalidOid {
            None
        } else {
            Some(pg_sys::index_getprocinfo(rel.raw(), 1, procnum))
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use pgrx::prelude::*;

    #[pg_test]
    fn type_info_support_functions() {
        let halfvec =
            Spi::get_one::<i64>("SELECT 1 FROM pg_proc WHERE proname = 'hnsw_halfvec_support'")
                .unwrap();
        assert_eq!(halfvec, Some(1));
        assert_eq!(HALFVEC_INFO.max_dimensions, 4000);
        assert_eq!(BIT_INFO.max_dimensions, 64000);
        assert_eq!(VECTOR_INFO.max_dimensions, 2000);
    }
}
