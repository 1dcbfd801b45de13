//! Casts between sparsevec and vector, halfvec, sparsevec (typmod check) and arrays.

use super::{check_dim, check_element, check_expected_dim, check_nnz, raise};
use crate::fmgr;
use crate::types::layout::{HalfvecMut, SparsevecMut, VectorMut, HALFVEC_MAX_DIM, VECTOR_MAX_DIM};
use half::f16;
use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::{
    ERRCODE_DATA_EXCEPTION, ERRCODE_NULL_VALUE_NOT_ALLOWED, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
    ERRCODE_PROGRAM_LIMIT_EXCEEDED,
};

/// Builds a sparsevec of `dim` dimensions from the non-zero entries of `dense` (already
/// converted to float4, in dimension order).
fn from_dense(dim: i32, nnz: usize, dense: impl Iterator<Item = f32>) -> SparsevecMut {
    let mut result = SparsevecMut::new(dim, nnz);
    let (indices, values) = result.parts();
    let mut k = 0;
    for (i, value) in dense.enumerate() {
        if value != 0.0 {
            indices[k] = i as i32;
            values[k] = value;
            k += 1;
        }
    }
    result
}

crate::sql_function! {
    fn sparsevec(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted sparsevec that lives for the call.
        let svec = unsafe { crate::types::layout::SparsevecRef::from_varlena(ptr) };
        check_expected_dim(call.i32(1), svec.dim as i64);
        fmgr::pointer_datum(ptr)
    }
}

crate::sql_function! {
    fn vector_to_sparsevec(call) {
        let vec = call.vector(0);
        let dim = vec.dim() as i64;
        check_dim(dim);
        check_expected_dim(call.i32(1), dim);
        let nnz = vec.x.iter().filter(|&&v| v != 0.0).count();
        check_nnz(nnz as i64, dim);
        from_dense(dim as i32, nnz, vec.x.iter().copied()).into_datum()
    }
}

crate::sql_function! {
    fn halfvec_to_sparsevec(call) {
        let vec = call.halfvec(0);
        let dim = vec.dim() as i64;
        check_dim(dim);
        check_expected_dim(call.i32(1), dim);
        // Both zeros (+0 and -0) are left out.
        let nnz = vec.x.iter().filter(|v| v.to_bits() & 0x7fff != 0).count();
        check_nnz(nnz as i64, dim);
        from_dense(dim as i32, nnz, vec.x.iter().map(|v| v.to_f32())).into_datum()
    }
}

/// The target's dimension checks of a cast to vector or halfvec.
fn check_dense_dim(type_name: &str, max_dim: usize, dim: i32) {
    if dim < 1 {
        raise(
            ERRCODE_DATA_EXCEPTION,
            format!("{type_name} must have at least 1 dimension"),
        );
    }
    if dim as i64 > max_dim as i64 {
        raise(
            ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("{type_name} cannot have more than {max_dim} dimensions"),
        );
    }
}

crate::sql_function! {
    fn sparsevec_to_vector(call) {
        let svec = call.sparsevec(0);
        check_dense_dim("vector", VECTOR_MAX_DIM, svec.dim);
        check_expected_dim(call.i32(1), svec.dim as i64);
        let mut result = VectorMut::new(svec.dim as usize);
        let x = result.x();
        for (&index, &value) in svec.indices.iter().zip(svec.values) {
            // Stored indices are in range; `get_mut` only guards against corrupt data.
            if let Some(slot) = x.get_mut(index as usize) {
                *slot = value;
            }
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_to_halfvec(call) {
        let svec = call.sparsevec(0);
        check_dense_dim("halfvec", HALFVEC_MAX_DIM, svec.dim);
        check_expected_dim(call.i32(1), svec.dim as i64);
        let mut result = HalfvecMut::new(svec.dim as usize);
        let x = result.x();
        for (&index, &value) in svec.indices.iter().zip(svec.values) {
            let half = f16::from_f32(value);
            if half.is_infinite() && !value.is_infinite() {
                let mut spelled = String::new();
                fmgr::push_float4_shortest(&mut spelled, value);
                raise(
                    ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                    format!("\"{spelled}\" is out of range for type halfvec"),
                );
            }
            // Stored indices are in range; `get_mut` only guards against corrupt data.
            if let Some(slot) = x.get_mut(index as usize) {
                *slot = half;
            }
        }
        result.into_datum()
    }
}

unsafe extern "C-unwind" {
    /// The server's numeric -> real cast, called directly as a V1 function (pgrx's `pg_sys`
    /// item of that name is a Rust wrapper, not a function pointer the fmgr can call).
    #[link_name = "numeric_float4"]
    fn server_numeric_float4(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// Element types `array_to_sparsevec` accepts.
#[derive(Clone, Copy)]
enum ArrayElement {
    Int4,
    Float4,
    Float8,
    Numeric,
}

impl ArrayElement {
    fn of(oid: pg_sys::Oid) -> Option<Self> {
        match oid {
            pg_sys::INT4OID => Some(Self::Int4),
            pg_sys::FLOAT4OID => Some(Self::Float4),
            pg_sys::FLOAT8OID => Some(Self::Float8),
            pg_sys::NUMERICOID => Some(Self::Numeric),
            _ => None,
        }
    }

    /// The element as float4, rounded as a C cast would.
    fn to_f32(self, datum: pg_sys::Datum) -> f32 {
        let bits = datum.value() as u64;
        match self {
            Self::Int4 => bits as u32 as i32 as f32,
            Self::Float4 => f32::from_bits(bits as u32),
            Self::Float8 => f64::from_bits(bits) as f32,
            Self::Numeric => {
                // SAFETY: numeric_float4 is the server's numeric -> real conversion; `datum` is
                // a numeric element of the array (it raises an ERROR when out of range).
                let real = unsafe {
                    pg_sys::DirectFunctionCall1Coll(
                        Some(server_numeric_float4),
                        pg_sys::InvalidOid,
                        datum,
                    )
                };
                f32::from_bits(real.value() as u32)
            }
        }
    }
}

fn unsupported_array_type() -> ! {
    raise(ERRCODE_DATA_EXCEPTION, "unsupported array type".into())
}

crate::sql_function! {
    fn array_to_sparsevec(call) {
        let array = call.varlena(0).cast::<pg_sys::ArrayType>();
        let typmod = call.i32(1);
        // SAFETY: the argument is a detoasted array, whose header is an ArrayType.
        let (ndim, has_nulls, elemtype) = unsafe {
            let header = &*array;
            (header.ndim, header.dataoffset != 0, header.elemtype)
        };
        if ndim > 1 {
            raise(ERRCODE_DATA_EXCEPTION, "array must be 1-D".into());
        }
        // SAFETY: `array` is a valid detoasted array.
        if has_nulls && unsafe { pg_sys::array_contains_nulls(array) } {
            raise(ERRCODE_NULL_VALUE_NOT_ALLOWED, "array must not contain nulls".into());
        }

        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut count = 0;
        // SAFETY: `array` is valid and null-free; deconstruct_array fills a palloc'd Datum
        // array of `count` elements (by-reference ones point into `array`).
        let datums: &[pg_sys::Datum] = unsafe {
            let (mut typlen, mut typbyval, mut typalign) = (0i16, false, 0 as std::ffi::c_char);
            pg_sys::get_typlenbyvalalign(elemtype, &mut typlen, &mut typbyval, &mut typalign);
            pg_sys::deconstruct_array(
                array,
                elemtype,
                typlen.into(),
                typbyval,
                typalign,
                &mut elems,
                std::ptr::null_mut(),
                &mut count,
            );
            if elems.is_null() || count <= 0 {
                &[]
            } else {
                std::slice::from_raw_parts(elems, count as usize)
            }
        };

        let dim = datums.len() as i64;
        check_dim(dim);
        check_expected_dim(typmod, dim);
        let Some(kind) = ArrayElement::of(elemtype) else { unsupported_array_type() };
        let dense: Vec<f32> = datums.iter().map(|&d| kind.to_f32(d)).collect();
        // NaN compares unequal to zero, so it is kept here and rejected below.
        let nnz = dense.iter().filter(|&&v| v != 0.0).count();
        check_nnz(nnz as i64, dim);
        let mut result = from_dense(dim as i32, nnz, dense.into_iter());
        if !elems.is_null() {
            // SAFETY: the Datum array was palloc'd by deconstruct_array and is no longer used
            // (by-reference elements point into `array`, which is not freed).
            unsafe { pg_sys::pfree(elems.cast()) };
        }
        for &value in result.parts().1.iter() {
            check_element(value);
        }
        result.into_datum()
    }
}
