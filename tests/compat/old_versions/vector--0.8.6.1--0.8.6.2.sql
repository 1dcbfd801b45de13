-- Upgrade from 0.8.6.1: the ivfflat access method.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6.2'" to load this file. \quit

-- A cluster that came from pgvector 0.8.6 has pgvector's ivfflat objects already (now served
-- by this library under the same symbols); one created by this library before 0.8.6.2 has
-- none. Both end with the same catalog as a fresh install.
DO $ivfflat$
BEGIN
IF NOT EXISTS (SELECT 1 FROM pg_am WHERE amname = 'ivfflat') THEN
    CREATE FUNCTION ivfflathandler(internal) RETURNS index_am_handler
        LANGUAGE C AS 'MODULE_PATHNAME', 'ivfflathandler';

    CREATE ACCESS METHOD ivfflat TYPE INDEX HANDLER ivfflathandler;

    COMMENT ON ACCESS METHOD ivfflat IS 'ivfflat index access method';

    CREATE FUNCTION ivfflat_halfvec_support(internal) RETURNS internal
        LANGUAGE C AS 'MODULE_PATHNAME', 'ivfflat_halfvec_support';

    CREATE FUNCTION ivfflat_bit_support(internal) RETURNS internal
        LANGUAGE C AS 'MODULE_PATHNAME', 'ivfflat_bit_support';

    CREATE OPERATOR CLASS vector_l2_ops DEFAULT FOR TYPE vector USING ivfflat AS
        OPERATOR 1 <-> (vector, vector) FOR ORDER BY float_ops,
        FUNCTION 1 vector_l2_squared_distance(vector, vector),
        FUNCTION 3 l2_distance(vector, vector);

    CREATE OPERATOR CLASS vector_ip_ops FOR TYPE vector USING ivfflat AS
        OPERATOR 1 <#> (vector, vector) FOR ORDER BY float_ops,
        FUNCTION 1 vector_negative_inner_product(vector, vector),
        FUNCTION 3 vector_spherical_distance(vector, vector),
        FUNCTION 4 vector_norm(vector);

    CREATE OPERATOR CLASS vector_cosine_ops FOR TYPE vector USING ivfflat AS
        OPERATOR 1 <=> (vector, vector) FOR ORDER BY float_ops,
        FUNCTION 1 vector_negative_inner_product(vector, vector),
        FUNCTION 2 vector_norm(vector),
        FUNCTION 3 vector_spherical_distance(vector, vector),
        FUNCTION 4 vector_norm(vector);

    CREATE OPERATOR CLASS halfvec_l2_ops FOR TYPE halfvec USING ivfflat AS
        OPERATOR 1 <-> (halfvec, halfvec) FOR ORDER BY float_ops,
        FUNCTION 1 halfvec_l2_squared_distance(halfvec, halfvec),
        FUNCTION 3 l2_distance(halfvec, halfvec),
        FUNCTION 5 ivfflat_halfvec_support(internal);

    CREATE OPERATOR CLASS halfvec_ip_ops FOR TYPE halfvec USING ivfflat AS
        OPERATOR 1 <#> (halfvec, halfvec) FOR ORDER BY float_ops,
        FUNCTION 1 halfvec_negative_inner_product(halfvec, halfvec),
        FUNCTION 3 halfvec_spherical_distance(halfvec, halfvec),
        FUNCTION 4 l2_norm(halfvec),
        FUNCTION 5 ivfflat_halfvec_support(internal);

    CREATE OPERATOR CLASS halfvec_cosine_ops FOR TYPE halfvec USING ivfflat AS
        OPERATOR 1 <=> (halfvec, halfvec) FOR ORDER BY float_ops,
        FUNCTION 1 halfvec_negative_inner_product(halfvec, halfvec),
        FUNCTION 2 l2_norm(halfvec),
        FUNCTION 3 halfvec_spherical_distance(halfvec, halfvec),
        FUNCTION 4 l2_norm(halfvec),
        FUNCTION 5 ivfflat_halfvec_support(internal);

    CREATE OPERATOR CLASS bit_hamming_ops FOR TYPE bit USING ivfflat AS
        OPERATOR 1 <~> (bit, bit) FOR ORDER BY float_ops,
        FUNCTION 1 hamming_distance(bit, bit),
        FUNCTION 3 hamming_distance(bit, bit),
        FUNCTION 5 ivfflat_bit_support(internal);
END IF;
END
$ivfflat$;

-- Added by this library: what the last ivfflat index scan of this session did.
CREATE FUNCTION ivfflat_last_scan_stats(OUT lists bigint, OUT pages bigint, OUT hits bigint,
    OUT reads bigint, OUT prefetched bigint, OUT unused_prefetches bigint,
    OUT mean_in_flight double precision, OUT heap_prefetches bigint)
    RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
