-- Stands in for pgvector's next release in tests/compat/going_back.sh (written for the test,
-- not pgvector's): changes of the kinds pgvector's update scripts make, applied to a catalog
-- at 0.8.6 on pgvector's library and on ours. pgvector's 0.8.6 -> 0.8.7 comments on its types.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6.99'" to load this file. \quit

COMMENT ON TYPE vector IS 'next release: single-precision vector';
COMMENT ON TYPE halfvec IS 'next release: half-precision vector';

-- A new SQL name for a C symbol both libraries have.
CREATE FUNCTION vector_dims_next(vector) RETURNS integer
    AS 'MODULE_PATHNAME', 'vector_dims' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A new operator class over existing support functions.
CREATE OPERATOR CLASS vector_l2_next_ops FOR TYPE vector USING hnsw AS
    OPERATOR 1 <-> (vector, vector) FOR ORDER BY float_ops,
    FUNCTION 1 vector_l2_squared_distance(vector, vector);
