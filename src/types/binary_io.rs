//! Pieces of the binary receive and send functions shared by the types.

use super::checks::{check_dim, check_expected_dim};
use crate::fmgr::{self, FnCall};
use crate::types::layout::{DenseElement, DenseRef, FromVarlena};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};

/// Reads the next network-order 16-bit word of the message a receive function is given; a
/// short message raises the server's own error.
pub fn recv_u16(call: &FnCall) -> u16 {
    let buf = call.internal::<pg_sys::StringInfoData>(0);
    // SAFETY: the first argument of a receive function is the message's StringInfo;
    // pq_getmsgint raises an ERROR rather than read past its end.
    unsafe { pg_sys::pq_getmsgint(buf, 2) as u16 }
}

/// Reads and checks the header of a received `vector` or `halfvec` (named `type_name`, at most
/// `max_dim` elements): int16 dim, then int16 unused, which must be 0. Returns the dimension
/// count, checked against the limits and the type modifier (the third argument).
pub fn recv_dense_header(call: &FnCall, type_name: &'static str, max_dim: usize) -> usize {
    let typmod = call.i32(2);
    let dim = recv_u16(call) as i16;
    let unused = recv_u16(call) as i16;
    check_dim(type_name, max_dim, dim);
    check_expected_dim(typmod, dim);
    if unused != 0 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("expected unused to be 0, not {unused}")
        );
    }
    dim as usize
}

/// The body of a `vector` or `halfvec` send function: int16 dim, int16 unused (passed on as
/// stored, like pgvector does), then each element as `to_be` spells it in network order.
pub fn send_dense<T: DenseElement, const N: usize>(
    call: &FnCall,
    to_be: impl Fn(T) -> [u8; N],
) -> pg_sys::Datum {
    let ptr = call.varlena(0);
    // SAFETY: the argument is a detoasted value of the dense type whose element is `T`, living
    // for the call; its int16 `unused` field sits at offset 6 of its 8-byte header.
    let (v, unused) = unsafe {
        (
            DenseRef::<T>::from_varlena(ptr),
            ptr.cast::<u8>().add(6).cast::<i16>().read(),
        )
    };
    let mut payload = Vec::with_capacity(4 + N * v.dim());
    payload.extend_from_slice(&(v.dim() as i16).to_be_bytes());
    payload.extend_from_slice(&unused.to_be_bytes());
    for &x in v.x {
        payload.extend_from_slice(&to_be(x));
    }
    bytea_datum(&payload)
}

/// A `bytea` holding `payload`: the result of a send function.
pub fn bytea_datum(payload: &[u8]) -> pg_sys::Datum {
    let bytea = fmgr::palloc_varlena(4 + payload.len());
    // SAFETY: the block has room for the payload after its 4-byte header.
    unsafe {
        std::ptr::copy_nonoverlapping(payload.as_ptr(), bytea.cast::<u8>().add(4), payload.len())
    };
    fmgr::pointer_datum(bytea)
}
