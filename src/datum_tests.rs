//! `#[pg_test]`s for corrupted datums, which SQL cannot build: each must raise a
//! data_corrupted ERROR naming its type, never read past its end.

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::prelude::*;

    type V1Fn = unsafe extern "C-unwind" fn(pg_sys::FunctionCallInfo) -> pg_sys::Datum;

    unsafe extern "C-unwind" {
        fn vector_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn halfvec_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn sparsevec_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
        fn hamming_distance(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    }

    /// A palloc'd varlena holding `body` after its 4-byte header.
    fn datum(body: &[u8]) -> pg_sys::Datum {
        let total = 4 + body.len();
        // SAFETY: palloc0 returns `total` writable bytes (MAXALIGNed); the header is set and
        // the body copied after it.
        unsafe {
            let ptr = pg_sys::palloc0(total).cast::<pg_sys::varlena>();
            pgrx::set_varsize_4b(ptr, total as i32);
            std::ptr::copy_nonoverlapping(body.as_ptr(), ptr.cast::<u8>().add(4), body.len());
            pg_sys::Datum::from(ptr)
        }
    }

    fn call(f: V1Fn, args: &[pg_sys::Datum]) -> pg_sys::Datum {
        let args: Vec<Option<pg_sys::Datum>> = args.iter().map(|&d| Some(d)).collect();
        // SAFETY: each function is called with the argument count and varlena types its SQL
        // signature declares.
        unsafe { pgrx::fcinfo::direct_pg_extern_function_call_as_datum(f, &args) }
            .expect("returned NULL")
    }

    fn ne(fields: &[&[u8]]) -> Vec<u8> {
        fields.concat()
    }

    #[pg_test]
    fn valid_datums_still_read() {
        let v = datum(&ne(&[
            &2i16.to_ne_bytes(),
            &[0, 0],
            &1.5f32.to_ne_bytes(),
            &2f32.to_ne_bytes(),
        ]));
        let text = call(vector_out, &[v]);
        // SAFETY: vector_out returns a palloc'd cstring.
        let text = unsafe { std::ffi::CStr::from_ptr(text.cast_mut_ptr()) };
        assert_eq!(text.to_str().unwrap(), "[1.5,2]");
    }

    #[pg_test(error = "invalid vector datum: negative dimension count -3")]
    fn vector_with_negative_dim() {
        call(
            vector_out,
            &[datum(&ne(&[&(-3i16).to_ne_bytes(), &[0, 0]]))],
        );
    }

    #[pg_test(error = "invalid vector datum: dimension count 5 needs 28 bytes, not 12")]
    fn vector_with_dim_beyond_its_bytes() {
        call(
            vector_out,
            &[datum(&ne(&[
                &5i16.to_ne_bytes(),
                &[0, 0],
                &1f32.to_ne_bytes(),
            ]))],
        );
    }

    #[pg_test(error = "invalid halfvec datum: 6 bytes, shorter than its 8-byte header")]
    fn halfvec_with_truncated_header() {
        call(halfvec_out, &[datum(&[1, 0])]);
    }

    #[pg_test(error = "invalid sparsevec datum: element count 2 needs 32 bytes, not 24")]
    fn sparsevec_with_nnz_mismatch() {
        let body = ne(&[
            &5i32.to_ne_bytes(),
            &2i32.to_ne_bytes(),
            &[0; 4],
            &1i32.to_ne_bytes(),
            &1f32.to_ne_bytes(),
        ]);
        call(sparsevec_out, &[datum(&body)]);
    }

    #[pg_test(error = "invalid bit datum: negative bit length -8")]
    fn bit_with_negative_length() {
        let bad = datum(&ne(&[&(-8i32).to_ne_bytes(), &[0xff]]));
        let good = datum(&ne(&[&8i32.to_ne_bytes(), &[0xff]]));
        call(hamming_distance, &[bad, good]);
    }
}
