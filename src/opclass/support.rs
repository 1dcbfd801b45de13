//! The support functions of an index (pgvector's `HnswSupport` plus its type info): distances
//! between a query and stored values, norms, normalization, through this library's kernels
//! where it recognizes the function ([`crate::opclass::kernels`]), else the function manager.
//!
//! Distances are always `distance(query, stored value)`, the argument order pgvector uses.

use pgrx::pg_sys;

use crate::opclass::kernels::{
    fn_address, known_distance, known_norm, Kernel, NormKernel, Pair4Fn, PairFn,
};
use crate::opclass::type_info::{optional_proc, Method, TypeInfo, DISTANCE_PROC, NORM_PROC};
use crate::opclass::value::Value;
use crate::storage::Relation;

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
        }
    }

    pub fn type_info(&self) -> &'static TypeInfo {
        self.type_info
    }

    /// The kernel support function 1 is recognized as, if any.
    pub fn kernel(&self) -> Option<Kernel> {
        self.distance.kernel
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
        if let Some(d) = self.pair.and_then(|f| f(a, b)) {
            return d;
        }
        self.fmgr_distance(&Value::from_bytes(a), b)
    }

    /// How many pairs [`Self::pair_distances`] computes for about the price of one.
    pub fn pair_batch(&self) -> usize {
        if self.pair4.is_some() {
            4
        } else {
            1
        }
    }

    /// [`Self::pair_distance`] of each pair into `out`: four at once where the kernel has a
    /// four-pair version (each result has the bits of one at a time).
    pub fn pair_distances(&self, pairs: &[(&[u8], &[u8])], out: &mut [f64]) {
        if let (Some(f), Ok(four)) = (self.pair4, <[(&[u8], &[u8]); 4]>::try_from(pairs)) {
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

    /// `distance(query, value)` for a stored varlena (header included).
    #[inline]
    pub fn distance(&self, value: &[u8]) -> f64 {
        let Some(q) = self.query.bytes() else {
            return 0.0;
        };
        if let Some(d) = self.support.pair.and_then(|f| f(q, value)) {
            return d;
        }
        self.support.fmgr_distance(self.query, value)
    }
}
