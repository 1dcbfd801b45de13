\echo Use "CREATE EXTENSION vector" to load this file. \quit

-- ============================================================================
-- vector: dense float4 vectors
-- ============================================================================

-- Shell type first, so that the I/O functions can name it.
CREATE TYPE vector;

CREATE FUNCTION vector_in(cstring, oid, integer) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_in';
CREATE FUNCTION vector_out(vector) RETURNS cstring
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_out';
CREATE FUNCTION vector_typmod_in(cstring[]) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_typmod_in';
CREATE FUNCTION vector_recv(internal, oid, integer) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_recv';
CREATE FUNCTION vector_send(vector) RETURNS bytea
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_send';

-- Stored uncompressed (EXTERNAL) with the default int4 alignment.
CREATE TYPE vector (
    INPUT = vector_in,
    OUTPUT = vector_out,
    RECEIVE = vector_recv,
    SEND = vector_send,
    TYPMOD_IN = vector_typmod_in,
    STORAGE = external
);

-- Distances, norms and slicing.
CREATE FUNCTION l2_distance(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'l2_distance';
CREATE FUNCTION inner_product(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'inner_product';
CREATE FUNCTION cosine_distance(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'cosine_distance';
CREATE FUNCTION l1_distance(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'l1_distance';
CREATE FUNCTION vector_dims(vector) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_dims';
CREATE FUNCTION vector_norm(vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_norm';
CREATE FUNCTION l2_normalize(vector) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'l2_normalize';
CREATE FUNCTION binary_quantize(vector) RETURNS bit
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'binary_quantize';
CREATE FUNCTION subvector(vector, integer, integer) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'subvector';

-- Operator implementations.
CREATE FUNCTION vector_add(vector, vector) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_add';
CREATE FUNCTION vector_sub(vector, vector) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_sub';
CREATE FUNCTION vector_mul(vector, vector) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_mul';
CREATE FUNCTION vector_concat(vector, vector) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_concat';

-- Ordering (btree support).
CREATE FUNCTION vector_lt(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_lt';
CREATE FUNCTION vector_le(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_le';
CREATE FUNCTION vector_eq(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_eq';
CREATE FUNCTION vector_ne(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_ne';
CREATE FUNCTION vector_ge(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_ge';
CREATE FUNCTION vector_gt(vector, vector) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_gt';
CREATE FUNCTION vector_cmp(vector, vector) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_cmp';

-- Index support distances (kept for clusters whose catalogs reference them).
CREATE FUNCTION vector_l2_squared_distance(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_l2_squared_distance';
CREATE FUNCTION vector_negative_inner_product(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_negative_inner_product';
CREATE FUNCTION vector_spherical_distance(vector, vector) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_spherical_distance';

-- Aggregate support: the state is float8[] {count, sum_1, ..., sum_dim}.
CREATE FUNCTION vector_accum(float8[], vector) RETURNS float8[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_accum';
CREATE FUNCTION vector_avg(float8[]) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_avg';
CREATE FUNCTION vector_combine(float8[], float8[]) RETURNS float8[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_combine';

CREATE AGGREGATE avg(vector) (
    STYPE = float8[],
    INITCOND = '{0}',
    SFUNC = vector_accum,
    COMBINEFUNC = vector_combine,
    FINALFUNC = vector_avg,
    PARALLEL = SAFE
);

CREATE AGGREGATE sum(vector) (
    STYPE = vector,
    SFUNC = vector_add,
    COMBINEFUNC = vector_add,
    PARALLEL = SAFE
);

-- Casts: the typmod check, and conversions from and to arrays.
CREATE FUNCTION vector(vector, integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector';
CREATE FUNCTION array_to_vector(integer[], integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_vector';
CREATE FUNCTION array_to_vector(real[], integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_vector';
CREATE FUNCTION array_to_vector(float8[], integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_vector';
CREATE FUNCTION array_to_vector(numeric[], integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_vector';
CREATE FUNCTION vector_to_float4(vector, integer, boolean) RETURNS real[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_to_float4';

CREATE CAST (vector AS vector)
    WITH FUNCTION vector(vector, integer, boolean) AS IMPLICIT;
CREATE CAST (vector AS real[])
    WITH FUNCTION vector_to_float4(vector, integer, boolean) AS IMPLICIT;
CREATE CAST (integer[] AS vector)
    WITH FUNCTION array_to_vector(integer[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (real[] AS vector)
    WITH FUNCTION array_to_vector(real[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (float8[] AS vector)
    WITH FUNCTION array_to_vector(float8[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (numeric[] AS vector)
    WITH FUNCTION array_to_vector(numeric[], integer, boolean) AS ASSIGNMENT;

-- Distance operators.
CREATE OPERATOR <-> (
    FUNCTION = l2_distance, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <->
);
CREATE OPERATOR <#> (
    FUNCTION = vector_negative_inner_product, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <#>
);
CREATE OPERATOR <=> (
    FUNCTION = cosine_distance, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <=>
);
CREATE OPERATOR <+> (
    FUNCTION = l1_distance, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <+>
);

-- Arithmetic and concatenation.
CREATE OPERATOR + (
    FUNCTION = vector_add, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = +
);
CREATE OPERATOR - (
    FUNCTION = vector_sub, LEFTARG = vector, RIGHTARG = vector
);
CREATE OPERATOR * (
    FUNCTION = vector_mul, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = *
);
CREATE OPERATOR || (
    FUNCTION = vector_concat, LEFTARG = vector, RIGHTARG = vector
);

-- Comparisons, with the planner's scalar selectivity estimators.
CREATE OPERATOR < (
    FUNCTION = vector_lt, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = >, NEGATOR = >=,
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    FUNCTION = vector_le, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = >=, NEGATOR = >,
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR = (
    FUNCTION = vector_eq, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = =, NEGATOR = <>,
    RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    FUNCTION = vector_ne, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <>, NEGATOR = =,
    RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR >= (
    FUNCTION = vector_ge, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <=, NEGATOR = <,
    RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR > (
    FUNCTION = vector_gt, LEFTARG = vector, RIGHTARG = vector,
    COMMUTATOR = <, NEGATOR = <=,
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);

CREATE OPERATOR CLASS vector_ops
    DEFAULT FOR TYPE vector USING btree AS
        OPERATOR 1 <,
        OPERATOR 2 <=,
        OPERATOR 3 =,
        OPERATOR 4 >=,
        OPERATOR 5 >,
        FUNCTION 1 vector_cmp(vector, vector);
