//! Text and binary input/output of `halfvec`, and its type modifier.

use std::ffi::CStr;

use super::{check_dim, check_element, check_expected_dim, to_half, TYPE_NAME};
use crate::fmgr;
use crate::types::binary_io::{recv_dense_header, recv_u16, send_dense};
use crate::types::checks::out_of_range;
use crate::types::layout::{HalfvecMut, HALFVEC_MAX_DIM};
use crate::types::text_input::parse_dense;
use crate::types::typmod::dims_typmod_in;
use half::f16;

/// Parses `[x1,x2,...]`: each element with the C library's `strtof` (as pgvector does), then
/// rounded to half precision.
fn parse_halfvec(lit: &CStr) -> Vec<f16> {
    parse_dense(
        lit,
        TYPE_NAME,
        HALFVEC_MAX_DIM,
        |value, range_error, spelled| {
            let h = to_half(value);
            if (range_error && value.is_infinite()) || (h.is_infinite() && !value.is_infinite()) {
                out_of_range(TYPE_NAME, &String::from_utf8_lossy(spelled));
            }
            check_element(h);
            h
        },
    )
}

crate::sql_function! {
    fn halfvec_in(call) {
        let lit = call.cstr(0);
        let typmod = call.i32(2);
        let values = parse_halfvec(lit);
        let dim = values.len() as i32;
        check_dim(dim);
        check_expected_dim(typmod, dim);
        let mut result = HalfvecMut::new(values.len());
        result.x().copy_from_slice(&values);
        result.into_datum()
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
        let dim = recv_dense_header(&call, TYPE_NAME, HALFVEC_MAX_DIM);
        let mut result = HalfvecMut::new(dim);
        for x in result.x() {
            *x = f16::from_bits(recv_u16(&call));
            check_element(*x);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn halfvec_send(call) {
        send_dense(&call, |h: f16| h.to_bits().to_be_bytes())
    }
}
