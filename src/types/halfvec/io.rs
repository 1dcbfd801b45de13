//! Text and binary input/output of `halfvec`, and its type modifier.

use super::TYPE_NAME;
use crate::fmgr;
use crate::types::binary_io::{bytea_datum, receive};
use crate::types::checks::OrRaise;
use crate::types::layout::{HalfvecMut, HALFVEC_MAX_DIM};
use crate::types::typmod::dims_typmod_in;
use half::f16;
use pgrx::pg_sys;
use vector_formats::{binary, text};

/// Builds a halfvec from validated elements.
fn halfvec_from(x: &[f16]) -> pg_sys::Datum {
    let mut result = HalfvecMut::new(x.len());
    result.x().copy_from_slice(x);
    result.into_datum()
}

crate::sql_function! {
    fn halfvec_in(call) {
        // Each element is read as a float4 with the C library's strtof (as pgvector does),
        // then rounded to half precision.
        halfvec_from(&text::parse_halfvec(call.cstr(0), call.i32(2)).or_raise())
    }
}

crate::sql_function! {
    fn halfvec_out(call) {
        let v = call.halfvec(0);
        let mut text = String::with_capacity(2 + v.dim() * 8);
        text.push('[');
        for (i, h) in v.x.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            // Printed as the float4 it widens to, shortest round-trip form.
            fmgr::push_float4_shortest(&mut text, h.to_f32());
        }
        text.push(']');
        fmgr::cstring_datum(&text)
    }
}

crate::sql_function! {
    fn halfvec_typmod_in(call) {
        dims_typmod_in(&call, TYPE_NAME, HALFVEC_MAX_DIM)
    }
}

crate::sql_function! {
    fn halfvec_recv(call) {
        halfvec_from(&receive(&call, binary::recv_halfvec))
    }
}

crate::sql_function! {
    fn halfvec_send(call) {
        bytea_datum(&binary::send_halfvec(call.halfvec(0)))
    }
}
