//! `#[pg_test]`s for corrupted datums, which SQL cannot build: each must raise a
//! data_corrupted ERROR naming its type, never read past its end, in every SQL function of
//! the extension and in both indexes' inserts and scans.

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

    /// Malformed datums of one type: each header claims more (or less) than its bytes hold.
    fn malformed(type_name: &str) -> Vec<(&'static str, pg_sys::Datum)> {
        let f = |v: f32| v.to_ne_bytes();
        match type_name {
            "vector" => vec![
                (
                    "negative dim",
                    datum(&ne(&[&(-3i16).to_ne_bytes(), &[0, 0], &f(1.0)])),
                ),
                (
                    "dim beyond bytes",
                    datum(&ne(&[&5i16.to_ne_bytes(), &[0, 0], &f(1.0)])),
                ),
                ("truncated header", datum(&[3, 0])),
            ],
            "halfvec" => vec![
                (
                    "negative dim",
                    datum(&ne(&[&(-3i16).to_ne_bytes(), &[0, 0], &[0, 60]])),
                ),
                (
                    "dim beyond bytes",
                    datum(&ne(&[&9i16.to_ne_bytes(), &[0, 0], &[0, 60]])),
                ),
                ("truncated header", datum(&[3])),
            ],
            "sparsevec" => vec![
                (
                    "negative nnz",
                    datum(&ne(&[&5i32.to_ne_bytes(), &(-1i32).to_ne_bytes(), &[0; 4]])),
                ),
                (
                    "nnz beyond bytes",
                    datum(&ne(&[
                        &5i32.to_ne_bytes(),
                        &4i32.to_ne_bytes(),
                        &[0; 4],
                        &1i32.to_ne_bytes(),
                        &f(1.0),
                    ])),
                ),
                ("truncated header", datum(&ne(&[&5i32.to_ne_bytes()]))),
            ],
            "bit" => vec![
                (
                    "negative length",
                    datum(&ne(&[&(-8i32).to_ne_bytes(), &[0xff]])),
                ),
                (
                    "length beyond bytes",
                    datum(&ne(&[&64i32.to_ne_bytes(), &[0xff]])),
                ),
                ("truncated header", datum(&[8])),
            ],
            _ => Vec::new(),
        }
    }

    /// A sound value of an argument type (read by its input function), or None for a type
    /// these tests do not build.
    fn sound(type_oid: pg_sys::Oid, type_name: &str) -> Option<pg_sys::Datum> {
        let text = match type_name {
            "vector" | "halfvec" => c"[1,2,3]",
            "sparsevec" => c"{1:1,3:2}/3",
            "bit" => c"101",
            "integer" => c"3",
            "boolean" => c"true",
            "double precision[]" => c"{0}",
            _ => return None,
        };
        let mut input = pg_sys::InvalidOid;
        let mut ioparam = pg_sys::InvalidOid;
        // SAFETY: the type exists (it is a function's argument type); its input function is
        // called on a C string with the type's I/O parameter and no typmod.
        unsafe {
            pg_sys::getTypeInputInfo(type_oid, &mut input, &mut ioparam);
            Some(pg_sys::OidInputFunctionCall(
                input,
                text.as_ptr().cast_mut(),
                ioparam,
                -1,
            ))
        }
    }

    /// Every SQL function of the extension that takes a vector, halfvec, sparsevec or bit
    /// argument, called with each malformed datum in each such position (the other arguments
    /// sound): each call must raise data_corrupted. Covers `*_out`, `*_send`, the distance
    /// functions and operators' procedures, casts, the aggregates' transition functions.
    #[pg_test]
    fn every_function_rejects_malformed_datums() {
        type Function = (pg_sys::Oid, String, Vec<pg_sys::Oid>, Vec<String>);
        let functions: Vec<Function> = Spi::connect(|client| {
            client
                .select(
                    "SELECT p.oid, p.proname::text, p.proargtypes::oid[],
                            array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t)
                       FROM pg_proc p
                       JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                       JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass
                                          AND d.refobjid = e.oid AND e.extname = 'vector'
                      WHERE p.prokind = 'f' AND p.pronargs BETWEEN 1 AND 3
                      ORDER BY p.proname, p.oid",
                    None,
                    &[],
                )
                .unwrap()
                .map(|row| {
                    (
                        row.get::<pg_sys::Oid>(1).unwrap().unwrap(),
                        row.get::<String>(2).unwrap().unwrap(),
                        row.get::<Vec<pg_sys::Oid>>(3).unwrap().unwrap(),
                        row.get::<Vec<String>>(4).unwrap().unwrap(),
                    )
                })
                .collect()
        });
        let mut calls = 0;
        let mut covered = std::collections::BTreeSet::new();
        let mut wrong = Vec::new();
        for (oid, name, type_oids, types) in &functions {
            let sound_args = type_oids.iter().zip(types).map(|(&o, t)| sound(o, t));
            let Some(args) = sound_args.collect::<Option<Vec<_>>>() else {
                continue;
            };
            for (position, type_name) in types.iter().enumerate() {
                for (kind, bad) in malformed(type_name) {
                    let mut call_args = args.clone();
                    call_args[position] = bad;
                    calls += 1;
                    covered.insert(name.clone());
                    let outcome = outcome_of(|| {
                        // SAFETY: the function is called with as many arguments as it
                        // declares, each of its declared type (sound, or malformed varlena).
                        unsafe {
                            match call_args.len() {
                                1 => pg_sys::OidFunctionCall1Coll(
                                    *oid,
                                    pg_sys::InvalidOid,
                                    call_args[0],
                                ),
                                2 => pg_sys::OidFunctionCall2Coll(
                                    *oid,
                                    pg_sys::InvalidOid,
                                    call_args[0],
                                    call_args[1],
                                ),
                                _ => pg_sys::OidFunctionCall3Coll(
                                    *oid,
                                    pg_sys::InvalidOid,
                                    call_args[0],
                                    call_args[1],
                                    call_args[2],
                                ),
                            }
                        };
                    });
                    if !outcome.is_empty() {
                        wrong.push(format!(
                            "{name}({}) with {kind} at {position}: {outcome}",
                            types.join(", ")
                        ));
                    }
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {calls} calls:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
        // Guards against the catalog query silently matching nothing.
        for f in [
            "vector_out",
            "vector_send",
            "halfvec_send",
            "sparsevec_send",
            "l2_distance",
            "cosine_distance",
            "inner_product",
            "hamming_distance",
            "jaccard_distance",
            "vector_accum",
            "halfvec_to_vector",
            "sparsevec_to_vector",
            "vector_cmp",
        ] {
            assert!(covered.contains(f), "{f} was not called");
        }
        assert!(calls >= 300, "only {calls} calls");
    }

    /// What a closure raised: empty for data_corrupted, else a description.
    fn outcome_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        PgTryBuilder::new(|| {
            f();
            "returned".to_owned()
        })
        .catch_others(|e| match e {
            pg_sys::panic::CaughtError::PostgresError(r)
            | pg_sys::panic::CaughtError::ErrorReport(r)
                if r.sql_error_code() == PgSqlErrorCode::ERRCODE_DATA_CORRUPTED =>
            {
                String::new()
            }
            pg_sys::panic::CaughtError::PostgresError(r)
            | pg_sys::panic::CaughtError::ErrorReport(r) => {
                format!("{:?}: {}", r.sql_error_code(), r.message())
            }
            pg_sys::panic::CaughtError::RustPanic { ereport, .. } => {
                format!("panic: {}", ereport.message())
            }
        })
        .execute()
    }

    /// Malformed values reaching an index directly, as a corrupted heap tuple or a caller's
    /// query would bring them: an insert and an ordered scan of each method raise
    /// data_corrupted, and the indexes still answer and check clean afterwards.
    #[pg_test]
    fn indexes_reject_malformed_datums() {
        Spi::run(
            "CREATE TABLE md (id int, v vector(3));
             INSERT INTO md SELECT i, array[i, i % 7, 1] FROM generate_series(1, 200) i;
             CREATE INDEX md_hnsw ON md USING hnsw (v vector_l2_ops);
             CREATE INDEX md_ivf ON md USING ivfflat (v vector_l2_ops) WITH (lists = 4);",
        )
        .unwrap();
        let oid = |name: &str| {
            Spi::get_one::<pg_sys::Oid>(&format!("SELECT '{name}'::regclass::oid"))
                .unwrap()
                .unwrap()
        };
        let vector_type = Spi::get_one::<pg_sys::Oid>("SELECT 'vector'::regtype::oid")
            .unwrap()
            .unwrap();
        let table = oid("md");
        let mut wrong = Vec::new();
        let mut calls = 0;
        for index in ["md_hnsw", "md_ivf"] {
            let index_oid = oid(index);
            for (kind, bad) in malformed("vector") {
                calls += 2;
                let insert = outcome_of(|| {
                    // SAFETY: both relations are opened and closed here under RowExclusiveLock;
                    // index_insert gets one value, its null flag and a heap TID, as for a
                    // one-column index.
                    unsafe {
                        let heap = pg_sys::table_open(table, pg_sys::RowExclusiveLock as i32);
                        let rel = pg_sys::index_open(index_oid, pg_sys::RowExclusiveLock as i32);
                        let info = pg_sys::BuildIndexInfo(rel);
                        let mut values = [bad];
                        let mut nulls = [false];
                        let mut tid = pg_sys::ItemPointerData::default();
                        pgrx::itemptr::item_pointer_set_all(&mut tid, 0, 1);
                        pg_sys::index_insert(
                            rel,
                            values.as_mut_ptr(),
                            nulls.as_mut_ptr(),
                            &mut tid,
                            heap,
                            pg_sys::IndexUniqueCheck::UNIQUE_CHECK_NO,
                            false,
                            info,
                        );
                        pg_sys::index_close(rel, pg_sys::RowExclusiveLock as i32);
                        pg_sys::table_close(heap, pg_sys::RowExclusiveLock as i32);
                    }
                });
                if !insert.is_empty() {
                    wrong.push(format!("{index} insert, {kind}: {insert}"));
                }
                let scan = outcome_of(|| {
                    // SAFETY: an ordered scan of the open index with one ORDER BY key on its
                    // column, under the active snapshot; ended and closed here.
                    unsafe {
                        let heap = pg_sys::table_open(table, pg_sys::AccessShareLock as i32);
                        let rel = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as i32);
                        let snapshot = pg_sys::GetActiveSnapshot();
                        let scan = pg_sys::index_beginscan(
                            heap,
                            rel,
                            snapshot,
                            std::ptr::null_mut(),
                            0,
                            1,
                        );
                        let mut key = pg_sys::ScanKeyData::default();
                        pg_sys::ScanKeyEntryInitialize(
                            &mut key,
                            pg_sys::SK_ORDER_BY as i32,
                            1,
                            1,
                            vector_type,
                            pg_sys::InvalidOid,
                            pg_sys::InvalidOid,
                            bad,
                        );
                        pg_sys::index_rescan(scan, std::ptr::null_mut(), 0, &mut key, 1);
                        pg_sys::index_getnext_tid(
                            scan,
                            pg_sys::ScanDirection::ForwardScanDirection,
                        );
                        pg_sys::index_endscan(scan);
                        pg_sys::index_close(rel, pg_sys::AccessShareLock as i32);
                        pg_sys::table_close(heap, pg_sys::AccessShareLock as i32);
                    }
                });
                if !scan.is_empty() {
                    wrong.push(format!("{index} scan, {kind}: {scan}"));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {calls}:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
        Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL ivfflat.probes = 4").unwrap();
        let ids = Spi::get_one::<Vec<i32>>(
            "SELECT array(SELECT id FROM md ORDER BY v <-> '[5,5,1]' LIMIT 3)",
        );
        let mut ids = ids.unwrap().unwrap();
        ids.sort();
        assert_eq!(ids, [4, 5, 6]);
        // The rejected inserts left nothing behind: both indexes check clean. The verifiers
        // belong to the companion extension vector_rs, declared here as its script does.
        Spi::run(
            "CREATE FUNCTION hnsw_index_parent_check(regclass, boolean) RETURNS void
                 AS '$libdir/vector' LANGUAGE C STRICT;
             CREATE FUNCTION ivfflat_index_parent_check(regclass, boolean) RETURNS void
                 AS '$libdir/vector' LANGUAGE C STRICT;",
        )
        .unwrap();
        Spi::run("SELECT hnsw_index_parent_check('md_hnsw', true), ivfflat_index_parent_check('md_ivf', true)")
            .unwrap();
    }
}
