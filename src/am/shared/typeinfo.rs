//! What an index needs to know about the indexed type, for both access methods: the operator
//! class's support functions (1 distance, 2 norm, then the type info: 3 for hnsw, 5 for
//! ivfflat, whose 3 and 4 are the k-means distance and norm), the dimension limits, how values
//! are normalized, and how the distance between a query and a stored value is computed.
//!
//! The type info function (`hnsw_halfvec_support`, `hnsw_bit_support`,
//! `hnsw_sparsevec_support`, `ivfflat_halfvec_support`, `ivfflat_bit_support`) returns a
//! pointer to one of the [`TypeInfo`] records below; an operator class without it is for
//! `vector`. Only this library calls those functions, so the record is ours to define.
//!
//! Distances are always `distance(query, stored value)`, the argument order pgvector uses. When
//! support function 1 is one of this library's own distance functions (recognized by its
//! address), the `vector_distance` kernel it would run is called directly on the page bytes;
//! every other case (another function, values the fast path does not take such as mismatched
//! dimensions, which must raise the function's own error) goes through the function manager.
//! Both paths return the same bits because they run the same kernel.

use crate::am::shared::codes::CodeSpace;
use crate::am::shared::out_of_memory;
use crate::fmgr;
use crate::storage::Relation;
use half::f16;
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use vector_distance::sparse::SparseRef;
use vector_formats::varlena::{BitRef, DenseElement, DenseRef, SparsevecRef};

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

// ---------------------------------------------------------------------------------------------
// Owned values
// ---------------------------------------------------------------------------------------------

/// An owned copy of a value (a varlena with a 4-byte header), 8-byte aligned; or SQL NULL, as
/// a scan's query can be (then every distance is 0, as in pgvector).
///
/// In a quantized index ([`super::codes`]) a value is also one of two more things: a new
/// element's value with the code record the index stores for it
/// ([`Value::with_record_and_query`]), or a stored code record used as a query
/// ([`Value::stored_record`]). A query's estimates need it rotated and quantized once: that is
/// kept with the value on first use (a new element's comes with its record).
#[derive(Clone, Debug, Default)]
pub struct Value {
    words: Vec<u64>,
    /// Length in bytes; 0 for NULL.
    len: usize,
    /// The code record a quantized index stores for this value (a new element's).
    record: Option<Vec<u8>>,
    /// The bytes are a quantized index's code record, not a value of the column's type.
    is_record: bool,
    /// The query prepared for a quantized index's estimates, made on first use.
    prepared: std::cell::OnceCell<Box<vector_rabitq::QueryCode>>,
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
            && self.record == other.record
            && self.is_record == other.is_record
    }
}

impl Value {
    /// The NULL value.
    pub fn null() -> Self {
        Value::default()
    }

    /// Copies a varlena (header included).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        // Samples and candidate lists hold many of these: fail as an ERROR, not an abort.
        let mut words = Vec::new();
        out_of_memory::reserve(&mut words, bytes.len().div_ceil(8), "a vector value");
        words.resize(bytes.len().div_ceil(8), 0u64);
        // SAFETY: `words` has at least bytes.len() bytes of storage; u8 has no alignment needs.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), bytes.len()) };
        dst.copy_from_slice(bytes);
        Value {
            words,
            len: bytes.len(),
            ..Value::default()
        }
    }

    /// This value with the code record a quantized index stores for it, and the value prepared
    /// as that index's query (both from [`CodeSpace::record`]).
    pub fn with_record_and_query(
        mut self,
        record: Vec<u8>,
        query: vector_rabitq::QueryCode,
    ) -> Self {
        self.record = Some(record);
        self.prepared = std::cell::OnceCell::from(Box::new(query));
        self
    }

    /// This value with its code record cut to `len` bytes (a build's record without its finer
    /// codes) and no prepared query.
    pub fn with_record_truncated(mut self, len: usize) -> Self {
        if let Some(record) = self.record.as_mut() {
            record.truncate(len);
        }
        self.prepared = std::cell::OnceCell::new();
        self
    }

    /// A quantized index's stored code record, as a query.
    pub fn stored_record(record: &[u8]) -> Self {
        Value {
            is_record: true,
            ..Value::from_bytes(record)
        }
    }

    /// What an index stores for this value: its code record in a quantized index, else the
    /// value itself.
    pub fn stored_bytes(&self) -> Option<&[u8]> {
        match &self.record {
            Some(record) => Some(record),
            None => self.bytes(),
        }
    }

    /// Whether the bytes are a stored code record.
    pub fn is_record(&self) -> bool {
        self.is_record
    }

    /// Detoasts a varlena datum and copies it.
    ///
    /// # Safety
    ///
    /// `datum` is a non-NULL varlena datum that stays valid for the call.
    pub unsafe fn from_datum(datum: pg_sys::Datum) -> Self {
        // SAFETY: per the contract; pg_detoast_datum returns a plain 4-byte-header varlena
        // (the same pointer if it already was one, else a palloc'd copy freed below).
        unsafe {
            let raw = datum.cast_mut_ptr::<pg_sys::varlena>();
            let flat = pg_sys::pg_detoast_datum(raw);
            let len = pgrx::varsize_4b(flat);
            let value = Value::from_bytes(std::slice::from_raw_parts(flat.cast::<u8>(), len));
            if flat != raw {
                pg_sys::pfree(flat.cast());
            }
            value
        }
    }

    pub fn is_null(&self) -> bool {
        self.len == 0
    }

    /// The query prepared for `codes`, made on first use.
    fn prepared(&self, codes: &CodeSpace) -> &vector_rabitq::QueryCode {
        self.prepared.get_or_init(|| {
            Box::new(codes.prepare(self.bytes().expect("a prepared query is not NULL")))
        })
    }

    /// The varlena bytes, `None` for NULL.
    pub fn bytes(&self) -> Option<&[u8]> {
        if self.is_null() {
            return None;
        }
        // SAFETY: `words` holds at least `len` initialized bytes.
        Some(unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) })
    }

    /// A datum pointing at the bytes, valid while `self` is neither dropped nor changed.
    /// Callees must only read it.
    fn datum(&self) -> pg_sys::Datum {
        pg_sys::Datum::from(self.words.as_ptr())
    }
}

// ---------------------------------------------------------------------------------------------
// Support functions
// ---------------------------------------------------------------------------------------------

// This library's own SQL-callable functions, declared here by symbol so their addresses can be
// recognized in an FmgrInfo and the normalizers called directly.
unsafe extern "C-unwind" {
    fn vector_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn vector_negative_inner_product(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_negative_inner_product(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn sparsevec_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn sparsevec_negative_inner_product(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn sparsevec_l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn hamming_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn jaccard_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn l2_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn vector_spherical_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_l2_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_spherical_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn vector_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_l2_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn sparsevec_l2_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn halfvec_l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    fn sparsevec_l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

type V1Fn = unsafe extern "C-unwind" fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum;

/// A distance this library computes itself when it recognizes the support function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    VectorL2Squared,
    VectorNegativeInnerProduct,
    VectorL1,
    HalfvecL2Squared,
    HalfvecNegativeInnerProduct,
    HalfvecL1,
    SparsevecL2Squared,
    SparsevecNegativeInnerProduct,
    SparsevecL1,
    Hamming,
    Jaccard,
    /// `l2_distance` and `*_spherical_distance`: ivfflat's k-means distances.
    VectorL2,
    VectorSpherical,
    HalfvecL2,
    HalfvecSpherical,
}

/// A norm this library computes itself (support function 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NormKernel {
    Vector,
    Halfvec,
    Sparsevec,
}

fn known_distance(addr: usize) -> Option<Kernel> {
    let table: [(V1Fn, Kernel); 15] = [
        (vector_l2_squared_distance, Kernel::VectorL2Squared),
        (
            vector_negative_inner_product,
            Kernel::VectorNegativeInnerProduct,
        ),
        (l1_distance, Kernel::VectorL1),
        (halfvec_l2_squared_distance, Kernel::HalfvecL2Squared),
        (
            halfvec_negative_inner_product,
            Kernel::HalfvecNegativeInnerProduct,
        ),
        (halfvec_l1_distance, Kernel::HalfvecL1),
        (sparsevec_l2_squared_distance, Kernel::SparsevecL2Squared),
        (
            sparsevec_negative_inner_product,
            Kernel::SparsevecNegativeInnerProduct,
        ),
        (sparsevec_l1_distance, Kernel::SparsevecL1),
        (hamming_distance, Kernel::Hamming),
        (jaccard_distance, Kernel::Jaccard),
        (l2_distance, Kernel::VectorL2),
        (vector_spherical_distance, Kernel::VectorSpherical),
        (halfvec_l2_distance, Kernel::HalfvecL2),
        (halfvec_spherical_distance, Kernel::HalfvecSpherical),
    ];
    table
        .into_iter()
        .find(|(f, _)| *f as usize == addr)
        .map(|(_, k)| k)
}

fn known_norm(addr: usize) -> Option<NormKernel> {
    let table: [(V1Fn, NormKernel); 3] = [
        (vector_norm, NormKernel::Vector),
        (halfvec_l2_norm, NormKernel::Halfvec),
        (sparsevec_l2_norm, NormKernel::Sparsevec),
    ];
    table
        .into_iter()
        .find(|(f, _)| *f as usize == addr)
        .map(|(_, k)| k)
}

/// Address of the C function behind an FmgrInfo (0 if none).
fn fn_address(proc: *mut pg_sys::FmgrInfo) -> usize {
    // SAFETY: proc is a valid FmgrInfo from the index's relcache entry.
    unsafe { (*proc).fn_addr }.map_or(0, |f| f as usize)
}

/// A support function: its FmgrInfo and, when it is one of ours, the kernel it runs.
#[derive(Clone, Copy, Debug)]
struct Proc<K> {
    info: *mut pg_sys::FmgrInfo,
    kernel: Option<K>,
}

/// The support functions of an index (pgvector's `HnswSupport` plus its type info).
///
/// It borrows FmgrInfo records from the index's relcache entry: use it only while the index
/// relation it was made from is open.
#[derive(Clone, Debug)]
pub struct Support {
    type_info: &'static TypeInfo,
    collation: pg_sys::Oid,
    distance: Proc<Kernel>,
    norm: Option<Proc<NormKernel>>,
    /// The kernel of support function 1 when it is one of ours (the fast path); `None` to
    /// always go through the function manager.
    pair: Option<PairFn>,
    /// The four-pair version of `pair`, for the kernels that have one.
    pair4: Option<Pair4Fn>,
    /// A quantized index's codes: then every distance is an estimate between codes (see
    /// [`super::codes`]).
    codes: Option<std::rc::Rc<CodeSpace>>,
}

impl Support {
    /// Resolves the distance (support function 1), the norm (2) and the type info of the
    /// index's column.
    pub fn for_index(rel: Relation, method: Method) -> Self {
        Self::with_procs(rel, method, DISTANCE_PROC, NORM_PROC)
    }

    /// The same with other support functions as the distance and the norm (ivfflat's k-means
    /// distance and norm, 3 and 4).
    pub fn with_procs(rel: Relation, method: Method, distance_proc: u16, norm_proc: u16) -> Self {
        let type_info = TypeInfo::for_index(rel, method);
        let distance = optional_proc(rel, distance_proc)
            // SAFETY: rel is an open index; index_getprocinfo raises pgvector's (Postgres's)
            // "missing support function" error for a missing required function.
            .unwrap_or_else(|| unsafe { pg_sys::index_getprocinfo(rel.raw(), 1, distance_proc) });
        let norm = optional_proc(rel, norm_proc).map(|info| Proc {
            info,
            kernel: known_norm(fn_address(info)),
        });
        let kernel = known_distance(fn_address(distance));
        // SAFETY: rel is open; rd_indcollation has one entry per key column (hnsw has one).
        let collation = unsafe { *(*rel.raw()).rd_indcollation };
        Support {
            type_info,
            collation,
            distance: Proc {
                info: distance,
                kernel,
            },
            norm,
            pair: kernel.map(Kernel::pair_fn),
            pair4: kernel.and_then(Kernel::pair4_fn),
            codes: None,
        }
    }

    /// The support of a quantized index: distances are estimates between codes.
    pub fn with_codes(mut self, codes: std::rc::Rc<CodeSpace>) -> Self {
        self.codes = Some(codes);
        self
    }

    /// A quantized index's codes, if this is one.
    pub fn codes(&self) -> Option<&CodeSpace> {
        self.codes.as_deref()
    }

    /// The same support on full values: the exact distances of a quantized index's rerank.
    pub fn exact(&self) -> Support {
        Support {
            codes: None,
            ..self.clone()
        }
    }

    /// Whether `stored` (as the index stores it) stands for `value` (a new element's value):
    /// equal bytes, or in a quantized index equal codes and vector hashes.
    pub fn same_value(&self, value: &Value, stored: &[u8]) -> bool {
        let Some(mine) = value.stored_bytes() else {
            return false;
        };
        if self.codes.is_none() {
            return mine == stored;
        }
        use vector_formats::hnsw_codes::CodeRecord;
        match (CodeRecord::parse(mine), CodeRecord::parse(stored)) {
            (Ok(a), Ok(b)) => a.same_vector(&b),
            _ => false,
        }
    }

    pub fn type_info(&self) -> &'static TypeInfo {
        self.type_info
    }

    /// The kernel support function 1 is recognized as, if any.
    pub fn kernel(&self) -> Option<Kernel> {
        self.distance.kernel
    }

    /// Always go through the function manager (to compare both paths).
    pub fn without_fast_path(mut self) -> Self {
        self.pair = None;
        self.pair4 = None;
        self
    }

    /// Whether the operator class normalizes values (support function 2, cosine distance).
    pub fn normalizes(&self) -> bool {
        self.norm.is_some()
    }

    /// `distance(query, value)`, where `value` is a stored varlena (header included). A NULL
    /// query is at distance 0 from everything. For many values and one query, [`prepare`]
    /// the query once instead.
    ///
    /// [`prepare`]: Self::prepare
    pub fn distance(&self, query: &Value, value: &[u8]) -> f64 {
        self.prepare(query).distance(value)
    }

    /// The bytes of a stored value of `len` bytes that its distances read: all of them, except
    /// in a quantized build, whose records carry codes that only the write-out keeps.
    pub fn compared_range(&self, len: usize) -> std::ops::Range<usize> {
        match &self.codes {
            Some(codes) => codes.compared_range(len),
            None => 0..len,
        }
    }

    /// The query for many distances (a search's batch of elements).
    pub fn prepare<'a>(&'a self, query: &'a Value) -> QueryDistance<'a> {
        QueryDistance {
            support: self,
            query,
        }
    }

    /// Distance between two stored values (`a` plays the query), as in neighbor selection.
    #[inline]
    pub fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64 {
        if let Some(codes) = &self.codes {
            return codes.pair_distance(a, b);
        }
        if let Some(d) = self.pair.and_then(|f| f(a, b)) {
            return d;
        }
        self.fmgr_distance(&Value::from_bytes(a), b)
    }

    /// How many pairs [`Self::pair_distances`] computes for about the price of one.
    pub fn pair_batch(&self) -> usize {
        if self.pair4.is_some() && self.codes.is_none() {
            4
        } else {
            1
        }
    }

    /// [`Self::pair_distance`] of each pair into `out`: four at once where the kernel has a
    /// four-pair version (each result has the bits of one at a time).
    pub fn pair_distances(&self, pairs: &[(&[u8], &[u8])], out: &mut [f64]) {
        if let (Some(f), Ok(four), None) = (
            self.pair4,
            <[(&[u8], &[u8]); 4]>::try_from(pairs),
            &self.codes,
        ) {
            if let Some(d) = f(four) {
                out[..4].copy_from_slice(&d);
                return;
            }
        }
        for (o, (a, b)) in out.iter_mut().zip(pairs) {
            *o = self.pair_distance(a, b);
        }
    }

    /// Support function 1 through the function manager (`query` is not NULL).
    fn fmgr_distance(&self, query: &Value, value: &[u8]) -> f64 {
        // SAFETY: both datums point at complete varlenas of the operator class's type that
        // outlive the call (the caller keeps the page locked); the function only reads them
        // and returns a float8 by value.
        let d = unsafe {
            pg_sys::FunctionCall2Coll(
                self.distance.info,
                self.collation,
                query.datum(),
                pg_sys::Datum::from(value.as_ptr()),
            )
        };
        f64::from_bits(d.value() as u64)
    }

    /// Support function 1 through the function manager on two varlenas, `a` first.
    fn fmgr_pair(&self, a: &[u8], b: &[u8]) -> f64 {
        // SAFETY: both datums point at complete, aligned varlenas of the operator class's type
        // that outlive the call; the function only reads them and returns a float8 by value.
        let d = unsafe {
            pg_sys::FunctionCall2Coll(
                self.distance.info,
                self.collation,
                pg_sys::Datum::from(a.as_ptr()),
                pg_sys::Datum::from(b.as_ptr()),
            )
        };
        f64::from_bits(d.value() as u64)
    }

    /// Distance between two owned values (`a` plays the query).
    pub fn value_distance(&self, a: &Value, b: &Value) -> f64 {
        match b.bytes() {
            Some(b) => self.distance(a, b),
            None => 0.0,
        }
    }

    /// The norm function of `value` (support function 2, or the k-means norm), if the
    /// operator class has one.
    pub fn norm_of(&self, value: &Value) -> Option<f64> {
        self.norm.map(|norm| self.norm(norm, value))
    }

    /// Support function 2 of `value` (the norm pgvector checks before normalizing).
    fn norm(&self, norm: Proc<NormKernel>, value: &Value) -> f64 {
        let bytes = value.bytes().expect("a value to normalize is not NULL");
        if self.pair.is_some() {
            if let Some(n) = norm.kernel.and_then(|k| k.apply(bytes)) {
                return n;
            }
        }
        // SAFETY: the datum is a complete varlena of the operator class's type, read only.
        let d = unsafe { pg_sys::FunctionCall1Coll(norm.info, self.collation, value.datum()) };
        f64::from_bits(d.value() as u64)
    }

    /// The type's `l2_normalize` applied to `value` (a zero vector stays zero).
    pub fn normalized(&self, value: &Value) -> Value {
        let Some(f) = self.type_info.normalize_fn() else {
            pgrx::error!("type does not support normalization");
        };
        // SAFETY: f is this library's normalize function for the value's type; it reads the
        // datum and returns a new palloc'd varlena, copied and freed here.
        unsafe {
            let out = pg_sys::DirectFunctionCall1Coll(Some(f), self.collation, value.datum());
            let result = Value::from_datum(out);
            pg_sys::pfree(out.cast_mut_ptr());
            result
        }
    }

    /// The query of an index scan (pgvector's `GetScanValue`): NULL stays NULL, otherwise a
    /// detoasted copy, normalized when the operator class has support function 2 (a zero
    /// vector normalizes to zero; every distance to it is then the same).
    ///
    /// # Safety
    ///
    /// Unless `is_null`, `datum` is a varlena of the operator class's type.
    pub unsafe fn scan_value(&self, datum: pg_sys::Datum, is_null: bool) -> Value {
        if is_null {
            return Value::null();
        }
        // SAFETY: per the contract.
        let value = unsafe { Value::from_datum(datum) };
        if self.normalizes() {
            self.normalized(&value)
        } else {
            value
        }
    }

    /// The value to store for a heap value (pgvector's `HnswFormIndexValue`): detoasted,
    /// checked, and normalized when the operator class has support function 2. `None` when a
    /// value to normalize has norm 0: such rows are not indexed.
    ///
    /// # Safety
    ///
    /// `datum` is a non-NULL varlena of the operator class's type.
    pub unsafe fn index_value(&self, datum: pg_sys::Datum) -> Option<Value> {
        // SAFETY: per the contract.
        let value = unsafe { Value::from_datum(datum) };
        self.type_info.check_value(value.bytes().expect("not NULL"));
        match self.norm {
            Some(norm) => (self.norm(norm, &value) > 0.0).then(|| self.normalized(&value)),
            None => Some(value),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fast path
// ---------------------------------------------------------------------------------------------

/// The elements of a `vector` or `halfvec` varlena, read with the checked reader of
/// `vector_formats` (so the layout is written down once).
#[inline]
fn dense_parts<T: DenseElement>(bytes: &[u8]) -> Option<&[T]> {
    DenseRef::<T>::read(bytes).ok().map(|v| v.x)
}

/// A `sparsevec` varlena's dimensions and its indices and values.
#[inline]
fn sparse_parts(bytes: &[u8]) -> Option<(i32, SparseRef<'_>)> {
    let v = SparsevecRef::read(bytes).ok()?;
    Some((
        v.dim,
        SparseRef {
            indices: v.indices,
            values: v.values,
        },
    ))
}

/// A `bit` varlena's length in bits and its packed bytes.
#[inline]
fn bit_parts(bytes: &[u8]) -> Option<(usize, &[u8])> {
    BitRef::read(bytes)
        .ok()
        .map(|v| (v.bit_len as usize, v.bytes))
}

/// A kernel on two stored varlenas: `None` when they must go through the function manager
/// (values the kernel does not take, such as mismatched dimensions).
type PairFn = fn(&[u8], &[u8]) -> Option<f64>;

/// Four pairs of stored values at once; `None` when one does not decode as the kernel's type
/// or a pair's lengths differ (the caller then goes one pair at a time).
type Pair4Fn = fn([(&[u8], &[u8]); 4]) -> Option<[f64; 4]>;

/// Four pairs of `vector` values through a four-pair kernel.
fn vector_pair4(
    pairs: [(&[u8], &[u8]); 4],
    f: impl Fn([(&[f32], &[f32]); 4]) -> [f64; 4],
) -> Option<[f64; 4]> {
    let mut parts: [(&[f32], &[f32]); 4] = [(&[], &[]); 4];
    for (part, (a, b)) in parts.iter_mut().zip(pairs) {
        let (x, y) = (dense_parts::<f32>(a)?, dense_parts::<f32>(b)?);
        if x.len() != y.len() {
            return None;
        }
        *part = (x, y);
    }
    Some(f(parts))
}

/// The distance between two dense values of element type `T`.
#[inline(always)]
fn dense_pair<T: DenseElement>(a: &[u8], b: &[u8], f: impl Fn(&[T], &[T]) -> f64) -> Option<f64> {
    let (x, y) = (dense_parts::<T>(a)?, dense_parts::<T>(b)?);
    (x.len() == y.len()).then(|| f(x, y))
}

#[inline(always)]
fn sparse_pair(a: &[u8], b: &[u8], f: impl Fn(SparseRef<'_>, SparseRef<'_>) -> f64) -> Option<f64> {
    let ((xd, x), (yd, y)) = (sparse_parts(a)?, sparse_parts(b)?);
    (xd == yd).then(|| f(x, y))
}

#[inline(always)]
fn bit_pair(a: &[u8], b: &[u8], f: impl Fn(&[u8], &[u8], usize) -> f64) -> Option<f64> {
    let ((xl, x), (yl, y)) = (bit_parts(a)?, bit_parts(b)?);
    (xl == yl).then(|| f(x, y, xl))
}

/// Distances from one query to many stored values ([`Support::prepare`]).
pub struct QueryDistance<'a> {
    support: &'a Support,
    query: &'a Value,
}

impl QueryDistance<'_> {
    /// A NULL query (every distance is 0).
    pub fn is_null(&self) -> bool {
        self.query.is_null()
    }

    /// `distance(value, query)`: the stored value first, the order ivfflat's scans call the
    /// distance in (only a mismatch error's wording differs).
    #[inline]
    pub fn distance_value_first(&self, value: &[u8]) -> f64 {
        let Some(q) = self.query.bytes() else {
            return 0.0;
        };
        if let Some(d) = self.support.pair.and_then(|f| f(value, q)) {
            return d;
        }
        self.support.fmgr_pair(value, q)
    }

    /// `distance(query, value)` of each of `values` into `out` (as long): four at once where
    /// the kernel allows, with the bits of one at a time.
    pub fn distances(&self, values: &[&[u8]], out: &mut [f64]) {
        let Some(q) = self.query.bytes() else {
            out.fill(0.0);
            return;
        };
        if self.support.codes.is_some() {
            for (o, v) in out.iter_mut().zip(values) {
                *o = self.distance(v);
            }
            return;
        }
        for (vs, os) in values.chunks(4).zip(out.chunks_mut(4)) {
            if let (Some(f), Ok(four)) = (self.support.pair4, <&[&[u8]; 4]>::try_from(vs)) {
                if let Some(d) = f(four.map(|v| (q, v))) {
                    os.copy_from_slice(&d);
                    continue;
                }
            }
            for (o, v) in os.iter_mut().zip(vs) {
                *o = self.distance(v);
            }
        }
    }

    /// `distance(query, value)` and, for a quantized index's estimate, how far below it the
    /// exact distance can be (0 for an exact distance).
    #[inline]
    pub fn estimate(&self, value: &[u8]) -> (f64, f64) {
        match (&self.support.codes, self.query.is_null()) {
            (Some(codes), false) if !self.query.is_record() => {
                codes.estimate(self.query.prepared(codes), value)
            }
            _ => (self.distance(value), 0.0),
        }
    }

    /// `distance(query, value)` for a stored varlena (header included).
    #[inline]
    pub fn distance(&self, value: &[u8]) -> f64 {
        let Some(q) = self.query.bytes() else {
            return 0.0;
        };
        if let Some(codes) = &self.support.codes {
            return if self.query.is_record() {
                codes.pair_distance(q, value)
            } else {
                codes.distance(self.query.prepared(codes), value)
            };
        }
        if let Some(d) = self.support.pair.and_then(|f| f(q, value)) {
            return d;
        }
        self.support.fmgr_distance(self.query, value)
    }
}

impl Kernel {
    /// The four-pair version of [`Kernel::pair_fn`], for the kernels that have one.
    fn pair4_fn(self) -> Option<Pair4Fn> {
        use vector_distance::f32 as s;
        match self {
            Kernel::VectorL2Squared => Some(|p| vector_pair4(p, s::l2_squared_distance_x4)),
            Kernel::VectorL2 => Some(|p| vector_pair4(p, s::l2_distance_x4)),
            Kernel::VectorNegativeInnerProduct => {
                Some(|p| vector_pair4(p, s::negative_inner_product_x4))
            }
            Kernel::VectorSpherical => Some(|p| vector_pair4(p, s::spherical_distance_x4)),
            _ => None,
        }
    }

    /// The kernel as a function of two stored values, resolved once per index (one indirect
    /// call per distance, everything else inlined into it).
    fn pair_fn(self) -> PairFn {
        use vector_distance::{bits, f16 as h, f32 as s, sparse};
        match self {
            Kernel::VectorL2Squared => |a, b| dense_pair(a, b, s::l2_squared_distance),
            Kernel::VectorNegativeInnerProduct => {
                |a, b| dense_pair(a, b, s::negative_inner_product)
            }
            Kernel::VectorL1 => |a, b| dense_pair(a, b, s::l1_distance),
            Kernel::HalfvecL2Squared => |a, b| dense_pair(a, b, h::l2_squared_distance),
            Kernel::HalfvecNegativeInnerProduct => {
                |a, b| dense_pair(a, b, h::negative_inner_product)
            }
            Kernel::HalfvecL1 => |a, b| dense_pair(a, b, h::l1_distance),
            Kernel::SparsevecL2Squared => |a, b| sparse_pair(a, b, sparse::l2_squared_distance),
            Kernel::SparsevecNegativeInnerProduct => {
                |a, b| sparse_pair(a, b, sparse::negative_inner_product)
            }
            Kernel::SparsevecL1 => |a, b| sparse_pair(a, b, sparse::l1_distance),
            Kernel::Hamming => |a, b| bit_pair(a, b, bits::hamming_distance),
            Kernel::Jaccard => |a, b| bit_pair(a, b, bits::jaccard_distance),
            Kernel::VectorL2 => |a, b| dense_pair(a, b, s::l2_distance),
            Kernel::VectorSpherical => |a, b| dense_pair(a, b, s::spherical_distance),
            Kernel::HalfvecL2 => |a, b| dense_pair(a, b, h::l2_distance),
            Kernel::HalfvecSpherical => |a, b| dense_pair(a, b, h::spherical_distance),
        }
    }

    /// The distance, or `None` when the values must go through the SQL function (which then
    /// raises its error for mismatched dimensions).
    pub fn apply(self, a: &[u8], b: &[u8]) -> Option<f64> {
        (self.pair_fn())(a, b)
    }
}

impl NormKernel {
    fn apply(self, a: &[u8]) -> Option<f64> {
        use vector_distance::{f16 as h, f32 as s, sparse};
        match self {
            NormKernel::Vector => Some(s::norm(dense_parts::<f32>(a)?)),
            NormKernel::Halfvec => Some(h::norm(dense_parts::<f16>(a)?)),
            NormKernel::Sparsevec => Some(sparse::norm(sparse_parts(a)?.1)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Column checks
// ---------------------------------------------------------------------------------------------

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

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use pgrx::prelude::*;

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        /// Uniform in [-1, 1), with some exact zeros.
        fn float(&mut self) -> f32 {
            let r = self.next();
            if r.is_multiple_of(11) {
                0.0
            } else {
                ((r >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            }
        }
    }

    fn varlena(body: &[u8]) -> Value {
        let size = (4 + body.len()) as u32;
        let mut v = Vec::with_capacity(size as usize);
        #[cfg(target_endian = "little")]
        v.extend_from_slice(&(size << 2).to_ne_bytes());
        #[cfg(target_endian = "big")]
        v.extend_from_slice(&size.to_ne_bytes());
        v.extend_from_slice(body);
        Value::from_bytes(&v)
    }

    fn vector_value(x: &[f32]) -> Value {
        let mut body = Vec::new();
        body.extend_from_slice(&(x.len() as i16).to_ne_bytes());
        body.extend_from_slice(&0i16.to_ne_bytes());
        for f in x {
            body.extend_from_slice(&f.to_ne_bytes());
        }
        varlena(&body)
    }

    fn halfvec_value(x: &[f32]) -> Value {
        let mut body = Vec::new();
        body.extend_from_slice(&(x.len() as i16).to_ne_bytes());
        body.extend_from_slice(&0i16.to_ne_bytes());
        for f in x {
            body.extend_from_slice(&f16::from_f32(*f).to_bits().to_ne_bytes());
        }
        varlena(&body)
    }

    fn sparsevec_value(dim: i32, x: &[f32]) -> Value {
        let nonzero: Vec<(i32, f32)> = x
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0.0)
            .map(|(i, v)| (i as i32, *v))
            .collect();
        let mut body = Vec::new();
        body.extend_from_slice(&dim.to_ne_bytes());
        body.extend_from_slice(&(nonzero.len() as i32).to_ne_bytes());
        body.extend_from_slice(&0i32.to_ne_bytes());
        for (i, _) in &nonzero {
            body.extend_from_slice(&i.to_ne_bytes());
        }
        for (_, v) in &nonzero {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        varlena(&body)
    }

    fn bit_value(x: &[f32]) -> Value {
        let mut body = Vec::new();
        body.extend_from_slice(&(x.len() as i32).to_ne_bytes());
        let mut bytes = vec![0u8; x.len().div_ceil(8)];
        for (i, v) in x.iter().enumerate() {
            if *v > 0.0 {
                bytes[i / 8] |= 0x80 >> (i % 8);
            }
        }
        body.extend_from_slice(&bytes);
        varlena(&body)
    }

    type MakeValue = fn(&[f32]) -> Value;

    /// The SQL function behind a kernel, called through the function manager.
    fn via_fmgr(f: V1Fn, a: &Value, b: &Value) -> f64 {
        // SAFETY: f is one of this library's distance functions; both datums are complete
        // varlenas of its argument type.
        let d = unsafe {
            pg_sys::DirectFunctionCall2Coll(Some(f), pg_sys::InvalidOid, a.datum(), b.datum())
        };
        f64::from_bits(d.value() as u64)
    }

    fn norm_via_fmgr(f: V1Fn, a: &Value) -> f64 {
        // SAFETY: f is one of this library's norm functions; the datum is a complete varlena.
        let d = unsafe { pg_sys::DirectFunctionCall1Coll(Some(f), pg_sys::InvalidOid, a.datum()) };
        f64::from_bits(d.value() as u64)
    }

    #[pg_test]
    fn fast_path_equals_sql_functions() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let cases: [(Kernel, V1Fn, MakeValue); 11] = [
            (
                Kernel::VectorL2Squared,
                vector_l2_squared_distance,
                vector_value,
            ),
            (
                Kernel::VectorNegativeInnerProduct,
                vector_negative_inner_product,
                vector_value,
            ),
            (Kernel::VectorL1, l1_distance, vector_value),
            (
                Kernel::HalfvecL2Squared,
                halfvec_l2_squared_distance,
                halfvec_value,
            ),
            (
                Kernel::HalfvecNegativeInnerProduct,
                halfvec_negative_inner_product,
                halfvec_value,
            ),
            (Kernel::HalfvecL1, halfvec_l1_distance, halfvec_value),
            (
                Kernel::SparsevecL2Squared,
                sparsevec_l2_squared_distance,
                |x| sparsevec_value(x.len() as i32, x),
            ),
            (
                Kernel::SparsevecNegativeInnerProduct,
                sparsevec_negative_inner_product,
                |x| sparsevec_value(x.len() as i32, x),
            ),
            (Kernel::SparsevecL1, sparsevec_l1_distance, |x| {
                sparsevec_value(x.len() as i32, x)
            }),
            (Kernel::Hamming, hamming_distance, bit_value),
            (Kernel::Jaccard, jaccard_distance, bit_value),
        ];
        // The kernels' address table recognizes each function.
        for (kernel, f, _) in &cases {
            assert_eq!(known_distance(*f as usize), Some(*kernel));
        }
        for round in 0..300usize {
            let dim = 1 + round % 70;
            let x: Vec<f32> = (0..dim).map(|_| rng.float()).collect();
            let y: Vec<f32> = (0..dim).map(|_| rng.float()).collect();
            for (kernel, f, make) in &cases {
                let (a, b) = (make(&x), make(&y));
                let fast = kernel.apply(a.bytes().unwrap(), b.bytes().unwrap());
                let slow = via_fmgr(*f, &a, &b);
                assert_eq!(
                    fast.map(f64::to_bits),
                    Some(slow.to_bits()),
                    "{kernel:?} dim {dim}: {fast:?} vs {slow}"
                );
            }
            let norms: [(NormKernel, V1Fn, Value); 3] = [
                (NormKernel::Vector, vector_norm, vector_value(&x)),
                (NormKernel::Halfvec, halfvec_l2_norm, halfvec_value(&x)),
                (
                    NormKernel::Sparsevec,
                    sparsevec_l2_norm,
                    sparsevec_value(dim as i32, &x),
                ),
            ];
            for (kernel, f, a) in &norms {
                assert_eq!(known_norm(*f as usize), Some(*kernel));
                let fast = kernel.apply(a.bytes().unwrap()).map(f64::to_bits);
                assert_eq!(
                    fast,
                    Some(norm_via_fmgr(*f, a).to_bits()),
                    "{kernel:?} dim {dim}"
                );
            }
        }
    }

    #[pg_test]
    fn mismatched_values_take_the_sql_path() {
        let (a, b) = (vector_value(&[1.0, 2.0, 3.0]), vector_value(&[1.0, 2.0]));
        assert_eq!(
            Kernel::VectorL2Squared.apply(a.bytes().unwrap(), b.bytes().unwrap()),
            None
        );
        let (a, b) = (sparsevec_value(5, &[1.0]), sparsevec_value(6, &[1.0]));
        assert_eq!(
            Kernel::SparsevecL1.apply(a.bytes().unwrap(), b.bytes().unwrap()),
            None
        );
        let (a, b) = (bit_value(&[1.0; 9]), bit_value(&[1.0; 10]));
        assert_eq!(
            Kernel::Hamming.apply(a.bytes().unwrap(), b.bytes().unwrap()),
            None
        );
        let a = vector_value(&[1.0, 2.0, 3.0]);
        assert_eq!(
            Kernel::VectorL2Squared.apply(
                a.bytes().unwrap(),
                vector_value(&[1.0, 0.0, 1.0]).bytes().unwrap()
            ),
            Some(8.0)
        );
        assert!(Value::null().is_null());
    }

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
