//! The distances and norms this library computes itself: when an operator class's support
//! function is one of this library's own SQL functions (recognized by its address), the
//! `vector_distance` kernel that function would run is called directly on the stored bytes. Both
//! paths return the same bits because they run the same kernel; values the kernel does not take
//! (mismatched dimensions) go through the function manager, which raises the function's error.

use half::f16;
use pgrx::pg_sys;
use vector_distance::sparse::SparseRef;
use vector_formats::varlena::{BitRef, DenseElement, DenseRef, SparsevecRef};

// This library's own SQL-callable functions, declared here by symbol so their addresses can be
// recognized in an FmgrInfo and the normalizers called directly.
unsafe extern "C-unwind" {
    pub(crate) fn vector_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn vector_negative_inner_product(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_negative_inner_product(fcinfo: pg_sys::FunctionCallInfo)
        -> pg_sys::Datum;
    pub(crate) fn halfvec_l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn sparsevec_l2_squared_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn sparsevec_negative_inner_product(
        fcinfo: pg_sys::FunctionCallInfo,
    ) -> pg_sys::Datum;
    pub(crate) fn sparsevec_l1_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn hamming_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn jaccard_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn l2_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn vector_spherical_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_l2_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_spherical_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn vector_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_l2_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn sparsevec_l2_norm(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn halfvec_l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    pub(crate) fn sparsevec_l2_normalize(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

pub(crate) type V1Fn = unsafe extern "C-unwind" fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum;

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
pub(crate) enum NormKernel {
    Vector,
    Halfvec,
    Sparsevec,
}

pub(crate) fn known_distance(addr: usize) -> Option<Kernel> {
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

pub(crate) fn known_norm(addr: usize) -> Option<NormKernel> {
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
pub(crate) fn fn_address(proc: *mut pg_sys::FmgrInfo) -> usize {
    // SAFETY: proc is a valid FmgrInfo from the index's relcache entry.
    unsafe { (*proc).fn_addr }.map_or(0, |f| f as usize)
}

/// The elements of a `vector` or `halfvec` varlena, read with the checked reader of
/// `vector_formats` (so the layout is written down once).
#[inline]
pub(crate) fn dense_parts<T: DenseElement>(bytes: &[u8]) -> Option<&[T]> {
    DenseRef::<T>::read(bytes).ok().map(|v| v.x)
}

/// A `sparsevec` varlena's dimensions and its indices and values.
#[inline]
pub(crate) fn sparse_parts(bytes: &[u8]) -> Option<(i32, SparseRef<'_>)> {
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
pub(crate) type PairFn = fn(&[u8], &[u8]) -> Option<f64>;

/// Four pairs of stored values at once; `None` when one does not decode as the kernel's type
/// or a pair's lengths differ (the caller then goes one pair at a time).
pub(crate) type Pair4Fn = fn([(&[u8], &[u8]); 4]) -> Option<[f64; 4]>;

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

impl Kernel {
    /// The four-pair version of [`Kernel::pair_fn`], for the kernels that have one.
    pub(crate) fn pair4_fn(self) -> Option<Pair4Fn> {
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
    pub(crate) fn pair_fn(self) -> PairFn {
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
    pub(crate) fn apply(self, a: &[u8]) -> Option<f64> {
        use vector_distance::{f16 as h, f32 as s, sparse};
        match self {
            NormKernel::Vector => Some(s::norm(dense_parts::<f32>(a)?)),
            NormKernel::Halfvec => Some(h::norm(dense_parts::<f16>(a)?)),
            NormKernel::Sparsevec => Some(sparse::norm(sparse_parts(a)?.1)),
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use crate::opclass::value::Value;
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
}
