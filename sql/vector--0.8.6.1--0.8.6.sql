-- From this library's catalog version 0.8.6.1 to pgvector 0.8.6's own catalog.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6'" to load this file. \quit

-- Versions 0.8.6.1 to 0.8.6.4 put this library's additions into pgvector's extension, which
-- left clusters on versions that pgvector's update scripts do not know. They now live in the
-- companion extension vector_rs (CREATE EXTENSION vector_rs brings them back), and `vector`
-- is pgvector's 0.8.6 catalog, ready for pgvector's next update script on either library.
-- A view or function that uses one of the dropped functions stops this update: drop it first.

-- Clusters this library created at 0.8.6.1 have no ivfflat access method (those that pgvector
-- created have pgvector's): add it as pgvector 0.8.6 declares it.
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

DROP FUNCTION hnsw_last_scan_stats();
