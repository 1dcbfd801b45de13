//! Binary I/O: int32 dim, int32 nnz, int32 unused, int32 indices[nnz] (0-based), float4
//! values[nnz], all in network byte order.

use super::{check_dim, check_element, check_expected_dim, check_index, check_nnz, raise};
use crate::types::binary_io::bytea_datum;
use crate::types::layout::{FromVarlena, SparsevecMut};
use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION;

/// Reads a network-order int32 from the message (the server raises an ERROR if it is short).
fn read_i32(buf: pg_sys::StringInfo) -> i32 {
    // SAFETY: `buf` is the live StringInfo the server passed to recv.
    unsafe { pg_sys::pq_getmsgint(buf, 4) as i32 }
}

fn read_f32(buf: pg_sys::StringInfo) -> f32 {
    // SAFETY: as for read_i32.
    unsafe { pg_sys::pq_getmsgfloat4(buf) }
}

crate::sql_function! {
    fn sparsevec_recv(call) {
        let buf = call.internal::<pg_sys::StringInfoData>(0);
        let typmod = call.i32(2);

        let dim = read_i32(buf);
        let nnz = read_i32(buf);
        let unused = read_i32(buf);
        check_dim(dim as i64);
        check_nnz(nnz as i64, dim as i64);
        check_expected_dim(typmod, dim as i64);
        if unused != 0 {
            raise(ERRCODE_DATA_EXCEPTION, format!("expected unused to be 0, not {unused}"));
        }

        // nnz is now within 0..=SPARSEVEC_MAX_NNZ.
        let mut result = SparsevecMut::new(dim, nnz as usize);
        let (indices, values) = result.parts();
        let mut previous = None;
        for slot in indices.iter_mut() {
            let index = read_i32(buf);
            check_index(index, previous, dim);
            *slot = index;
            previous = Some(index);
        }
        for slot in values.iter_mut() {
            let value = read_f32(buf);
            check_element(value);
            if value == 0.0 {
                raise(
                    ERRCODE_DATA_EXCEPTION,
                    "binary representation of sparsevec cannot contain zero values".into(),
                );
            }
            *slot = value;
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_send(call) {
        let ptr = call.varlena(0);
        // SAFETY: a detoasted sparsevec has its int32 `unused` field at offset 12.
        let unused = unsafe { ptr.cast::<u8>().add(12).cast::<i32>().read() };
        // SAFETY: the argument is a detoasted sparsevec that lives for the call.
        let svec = unsafe { crate::types::layout::SparsevecRef::from_varlena(ptr) };

        let mut payload = Vec::with_capacity(12 + 8 * svec.nnz());
        payload.extend_from_slice(&svec.dim.to_be_bytes());
        payload.extend_from_slice(&(svec.nnz() as i32).to_be_bytes());
        payload.extend_from_slice(&unused.to_be_bytes());
        for index in svec.indices {
            payload.extend_from_slice(&index.to_be_bytes());
        }
        for value in svec.values {
            payload.extend_from_slice(&value.to_bits().to_be_bytes());
        }

        bytea_datum(&payload)
    }
}
