//! `#[pg_test]`s for what SQL cannot reach: the binary `recv` functions fed crafted messages.
//!
//! `COPY ... (FORMAT binary)` only produces well-formed messages; these build malformed ones
//! by hand and check that each is rejected with pgvector's error, never a crash.

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::prelude::*;

    type V1Fn = unsafe extern "C-unwind" fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum;

    unsafe extern "C-unwind" {
        fn vector_recv(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn vector_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn halfvec_recv(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn halfvec_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn sparsevec_recv(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn sparsevec_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    }

    /// Big-endian message bytes, as the binary protocol sends them.
    fn be16(v: i16) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }
    fn be32(v: i32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }
    fn bef32(v: f32) -> Vec<u8> {
        v.to_bits().to_be_bytes().to_vec()
    }

    /// Calls a `recv` function on `parts` with `typmod`, then its `out` function on the result.
    fn recv_then_out(recv: V1Fn, out: V1Fn, parts: &[Vec<u8>], typmod: i32) -> String {
        let bytes: Vec<u8> = parts.concat();
        // SAFETY: makeStringInfo allocates in the current memory context; we append exactly
        // `bytes.len()` readable bytes. The V1 calls get the argument types their SQL
        // signatures declare (internal, oid, int4) and (type) -> cstring.
        unsafe {
            let buf = pg_sys::makeStringInfo();
            pg_sys::appendBinaryStringInfo(buf, bytes.as_ptr().cast(), bytes.len() as i32);
            let value = pgrx::fcinfo::direct_pg_extern_function_call_as_datum(
                recv,
                &[
                    Some(pg_sys::Datum::from(buf)),
                    Some(pg_sys::Datum::from(0u32)),
                    Some(pg_sys::Datum::from(typmod)),
                ],
            )
            .expect("recv returned NULL");
            let text = pgrx::fcinfo::direct_pg_extern_function_call_as_datum(out, &[Some(value)])
                .expect("out returned NULL");
            let cstr = std::ffi::CStr::from_ptr(text.cast_mut_ptr::<std::ffi::c_char>());
            cstr.to_str().unwrap().to_owned()
        }
    }

    fn vector(parts: &[Vec<u8>], typmod: i32) -> String {
        recv_then_out(vector_recv, vector_out, parts, typmod)
    }
    fn halfvec(parts: &[Vec<u8>], typmod: i32) -> String {
        recv_then_out(halfvec_recv, halfvec_out, parts, typmod)
    }
    fn sparsevec(parts: &[Vec<u8>], typmod: i32) -> String {
        recv_then_out(sparsevec_recv, sparsevec_out, parts, typmod)
    }

    #[pg_test]
    fn vector_recv_accepts_well_formed() {
        let msg = [be16(2), be16(0), bef32(1.5), bef32(-2.0)];
        assert_eq!(vector(&msg, -1), "[1.5,-2]");
        assert_eq!(vector(&msg, 2), "[1.5,-2]");
    }

    #[pg_test]
    fn recv_moves_the_cursor_past_what_it_read() {
        let bytes = [be16(1), be16(0), bef32(1.0), vec![7, 7]].concat();
        // SAFETY: as in recv_then_out; only the cursor is read back.
        let cursor = unsafe {
            let buf = pg_sys::makeStringInfo();
            pg_sys::appendBinaryStringInfo(buf, bytes.as_ptr().cast(), bytes.len() as i32);
            pgrx::fcinfo::direct_pg_extern_function_call_as_datum(
                vector_recv,
                &[
                    Some(pg_sys::Datum::from(buf)),
                    Some(pg_sys::Datum::from(0u32)),
                    Some(pg_sys::Datum::from(-1)),
                ],
            )
            .expect("recv returned NULL");
            (*buf).cursor
        };
        // The server rejects a message that recv did not read to its end.
        assert_eq!(cursor, 8);
    }

    #[pg_test(error = "expected unused to be 0, not 7")]
    fn vector_recv_rejects_unused() {
        vector(&[be16(1), be16(7), bef32(1.0)], -1);
    }

    #[pg_test(error = "vector must have at least 1 dimension")]
    fn vector_recv_rejects_zero_dims() {
        vector(&[be16(0), be16(0)], -1);
    }

    #[pg_test(error = "vector must have at least 1 dimension")]
    fn vector_recv_rejects_negative_dims() {
        vector(&[be16(-3), be16(0)], -1);
    }

    #[pg_test(error = "vector cannot have more than 16000 dimensions")]
    fn vector_recv_rejects_too_many_dims() {
        vector(&[be16(16001), be16(0)], -1);
    }

    #[pg_test(error = "expected 3 dimensions, not 2")]
    fn vector_recv_checks_typmod() {
        vector(&[be16(2), be16(0), bef32(1.0), bef32(2.0)], 3);
    }

    #[pg_test(error = "NaN not allowed in vector")]
    fn vector_recv_rejects_nan() {
        vector(&[be16(1), be16(0), bef32(f32::NAN)], -1);
    }

    #[pg_test(error = "infinite value not allowed in vector")]
    fn vector_recv_rejects_infinity() {
        vector(&[be16(1), be16(0), bef32(f32::NEG_INFINITY)], -1);
    }

    #[pg_test(error = "insufficient data left in message")]
    fn vector_recv_rejects_truncated() {
        vector(&[be16(3), be16(0), bef32(1.0)], -1);
    }

    #[pg_test]
    fn halfvec_recv_accepts_well_formed() {
        let msg = [
            be16(2),
            be16(0),
            0x3e00u16.to_be_bytes().to_vec(),
            0xc000u16.to_be_bytes().to_vec(),
        ];
        assert_eq!(halfvec(&msg, -1), "[1.5,-2]");
    }

    #[pg_test(error = "expected unused to be 0, not 1")]
    fn halfvec_recv_rejects_unused() {
        halfvec(&[be16(1), be16(1), 0x3c00u16.to_be_bytes().to_vec()], -1);
    }

    #[pg_test(error = "NaN not allowed in halfvec")]
    fn halfvec_recv_rejects_nan() {
        halfvec(&[be16(1), be16(0), 0x7e00u16.to_be_bytes().to_vec()], -1);
    }

    #[pg_test(error = "infinite value not allowed in halfvec")]
    fn halfvec_recv_rejects_infinity() {
        halfvec(&[be16(1), be16(0), 0x7c00u16.to_be_bytes().to_vec()], -1);
    }

    #[pg_test(error = "halfvec cannot have more than 16000 dimensions")]
    fn halfvec_recv_rejects_too_many_dims() {
        halfvec(&[be16(16001), be16(0)], -1);
    }

    #[pg_test]
    fn sparsevec_recv_accepts_well_formed() {
        let msg = [
            be32(5),
            be32(2),
            be32(0),
            be32(0),
            be32(3),
            bef32(1.5),
            bef32(-2.0),
        ];
        assert_eq!(sparsevec(&msg, -1), "{1:1.5,4:-2}/5");
    }

    #[pg_test(error = "sparsevec indices must be in ascending order")]
    fn sparsevec_recv_rejects_unsorted() {
        sparsevec(
            &[
                be32(5),
                be32(2),
                be32(0),
                be32(3),
                be32(1),
                bef32(1.0),
                bef32(2.0),
            ],
            -1,
        );
    }

    #[pg_test(error = "sparsevec indices must not contain duplicates")]
    fn sparsevec_recv_rejects_duplicates() {
        sparsevec(
            &[
                be32(5),
                be32(2),
                be32(0),
                be32(1),
                be32(1),
                bef32(1.0),
                bef32(2.0),
            ],
            -1,
        );
    }

    #[pg_test(error = "sparsevec index out of bounds")]
    fn sparsevec_recv_rejects_index_out_of_bounds() {
        sparsevec(&[be32(5), be32(1), be32(0), be32(5), bef32(1.0)], -1);
    }

    #[pg_test(error = "binary representation of sparsevec cannot contain zero values")]
    fn sparsevec_recv_rejects_zero_value() {
        sparsevec(&[be32(5), be32(1), be32(0), be32(2), bef32(0.0)], -1);
    }

    #[pg_test(error = "sparsevec cannot have negative number of elements")]
    fn sparsevec_recv_rejects_negative_nnz() {
        sparsevec(&[be32(5), be32(-1), be32(0)], -1);
    }

    #[pg_test(error = "sparsevec cannot have more than 16000 non-zero elements")]
    fn sparsevec_recv_rejects_too_many_nnz() {
        sparsevec(&[be32(100000), be32(16001), be32(0)], -1);
    }

    #[pg_test(error = "sparsevec cannot have more elements than dimensions")]
    fn sparsevec_recv_rejects_nnz_above_dim() {
        sparsevec(&[be32(2), be32(3), be32(0)], -1);
    }

    #[pg_test(error = "sparsevec cannot have more than 1000000000 dimensions")]
    fn sparsevec_recv_rejects_too_many_dims() {
        sparsevec(&[be32(1_000_000_001), be32(0), be32(0)], -1);
    }

    #[pg_test(error = "expected unused to be 0, not 9")]
    fn sparsevec_recv_rejects_unused() {
        sparsevec(&[be32(5), be32(0), be32(9)], -1);
    }

    #[pg_test(error = "NaN not allowed in sparsevec")]
    fn sparsevec_recv_rejects_nan() {
        sparsevec(&[be32(5), be32(1), be32(0), be32(2), bef32(f32::NAN)], -1);
    }

    #[pg_test(error = "insufficient data left in message")]
    fn sparsevec_recv_rejects_truncated() {
        sparsevec(&[be32(5), be32(2), be32(0), be32(1)], -1);
    }
}
