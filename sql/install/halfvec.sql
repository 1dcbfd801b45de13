-- ---------------------------------------------------------------------------------------------
-- halfvec: vectors of half-precision floats
-- ---------------------------------------------------------------------------------------------

CREATE TYPE halfvec;

CREATE FUNCTION halfvec_in(cstring, oid, integer) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_in';
CREATE FUNCTION halfvec_out(halfvec) RETURNS cstring
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_out';
CREATE FUNCTION halfvec_typmod_in(cstring[]) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_typmod_in';
CREATE FUNCTION halfvec_recv(internal, oid, integer) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_recv';
CREATE FUNCTION halfvec_send(halfvec) RETURNS bytea
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_send';

CREATE TYPE halfvec (
    INPUT = halfvec_in,
    OUTPUT = halfvec_out,
    TYPMOD_IN = halfvec_typmod_in,
    RECEIVE = halfvec_recv,
    SEND = halfvec_send,
    STORAGE = external
);

-- Public functions -------------------------------------------------------------------------------

CREATE FUNCTION l2_distance(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_l2_distance';
CREATE FUNCTION inner_product(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_inner_product';
CREATE FUNCTION cosine_distance(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_cosine_distance';
CREATE FUNCTION l1_distance(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_l1_distance';
CREATE FUNCTION vector_dims(halfvec) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_vector_dims';
CREATE FUNCTION l2_norm(halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_l2_norm';
CREATE FUNCTION l2_normalize(halfvec) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_l2_normalize';
CREATE FUNCTION binary_quantize(halfvec) RETURNS bit
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_binary_quantize';
CREATE FUNCTION subvector(halfvec, integer, integer) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_subvector';

-- Operator support and index support functions ---------------------------------------------------

CREATE FUNCTION halfvec_add(halfvec, halfvec) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_add';
CREATE FUNCTION halfvec_sub(halfvec, halfvec) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_sub';
CREATE FUNCTION halfvec_mul(halfvec, halfvec) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_mul';
CREATE FUNCTION halfvec_concat(halfvec, halfvec) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_concat';

CREATE FUNCTION halfvec_lt(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_lt';
CREATE FUNCTION halfvec_le(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_le';
CREATE FUNCTION halfvec_eq(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_eq';
CREATE FUNCTION halfvec_ne(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_ne';
CREATE FUNCTION halfvec_ge(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_ge';
CREATE FUNCTION halfvec_gt(halfvec, halfvec) RETURNS boolean
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_gt';
CREATE FUNCTION halfvec_cmp(halfvec, halfvec) RETURNS integer
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_cmp';

CREATE FUNCTION halfvec_l2_squared_distance(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_l2_squared_distance';
CREATE FUNCTION halfvec_negative_inner_product(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_negative_inner_product';
CREATE FUNCTION halfvec_spherical_distance(halfvec, halfvec) RETURNS float8
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_spherical_distance';

-- Aggregates -------------------------------------------------------------------------------------

CREATE FUNCTION halfvec_accum(float8[], halfvec) RETURNS float8[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_accum';
CREATE FUNCTION halfvec_avg(float8[]) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_avg';
-- The avg state has the same shape as vector's, so its combine step is shared.
CREATE FUNCTION halfvec_combine(float8[], float8[]) RETURNS float8[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_combine';

CREATE AGGREGATE avg(halfvec) (
    STYPE = float8[],
    INITCOND = '{0}',
    SFUNC = halfvec_accum,
    COMBINEFUNC = halfvec_combine,
    FINALFUNC = halfvec_avg,
    PARALLEL = SAFE
);

CREATE AGGREGATE sum(halfvec) (
    STYPE = halfvec,
    SFUNC = halfvec_add,
    COMBINEFUNC = halfvec_add,
    PARALLEL = SAFE
);

-- Casts ------------------------------------------------------------------------------------------

CREATE FUNCTION halfvec(halfvec, integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec';
CREATE FUNCTION halfvec_to_vector(halfvec, integer, boolean) RETURNS vector
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_to_vector';
CREATE FUNCTION vector_to_halfvec(vector, integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'vector_to_halfvec';
CREATE FUNCTION array_to_halfvec(integer[], integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_halfvec';
CREATE FUNCTION array_to_halfvec(real[], integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_halfvec';
CREATE FUNCTION array_to_halfvec(double precision[], integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_halfvec';
CREATE FUNCTION array_to_halfvec(numeric[], integer, boolean) RETURNS halfvec
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'array_to_halfvec';
CREATE FUNCTION halfvec_to_float4(halfvec, integer, boolean) RETURNS real[]
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'halfvec_to_float4';

-- The typmod cast, then vector in both directions, then arrays.
CREATE CAST (halfvec AS halfvec) WITH FUNCTION halfvec(halfvec, integer, boolean) AS IMPLICIT;
CREATE CAST (vector AS halfvec)
    WITH FUNCTION vector_to_halfvec(vector, integer, boolean) AS IMPLICIT;
CREATE CAST (halfvec AS vector)
    WITH FUNCTION halfvec_to_vector(halfvec, integer, boolean) AS ASSIGNMENT;
CREATE CAST (halfvec AS real[])
    WITH FUNCTION halfvec_to_float4(halfvec, integer, boolean) AS ASSIGNMENT;
CREATE CAST (integer[] AS halfvec)
    WITH FUNCTION array_to_halfvec(integer[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (real[] AS halfvec)
    WITH FUNCTION array_to_halfvec(real[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (double precision[] AS halfvec)
    WITH FUNCTION array_to_halfvec(double precision[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (numeric[] AS halfvec)
    WITH FUNCTION array_to_halfvec(numeric[], integer, boolean) AS ASSIGNMENT;

-- Operators --------------------------------------------------------------------------------------

-- Distances (the ordering operators of vector indexes).
CREATE OPERATOR <-> (
    PROCEDURE = l2_distance, LEFTARG = halfvec, RIGHTARG = halfvec, COMMUTATOR = <->
);
CREATE OPERATOR <#> (
    PROCEDURE = halfvec_negative_inner_product, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = <#>
);
CREATE OPERATOR <=> (
    PROCEDURE = cosine_distance, LEFTARG = halfvec, RIGHTARG = halfvec, COMMUTATOR = <=>
);
CREATE OPERATOR <+> (
    PROCEDURE = l1_distance, LEFTARG = halfvec, RIGHTARG = halfvec, COMMUTATOR = <+>
);

-- Arithmetic.
CREATE OPERATOR + (
    PROCEDURE = halfvec_add, LEFTARG = halfvec, RIGHTARG = halfvec, COMMUTATOR = +
);
CREATE OPERATOR - (
    PROCEDURE = halfvec_sub, LEFTARG = halfvec, RIGHTARG = halfvec
);
CREATE OPERATOR * (
    PROCEDURE = halfvec_mul, LEFTARG = halfvec, RIGHTARG = halfvec, COMMUTATOR = *
);
CREATE OPERATOR || (
    PROCEDURE = halfvec_concat, LEFTARG = halfvec, RIGHTARG = halfvec
);

-- Comparisons.
CREATE OPERATOR < (
    PROCEDURE = halfvec_lt, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    PROCEDURE = halfvec_le, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR = (
    PROCEDURE = halfvec_eq, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    PROCEDURE = halfvec_ne, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR >= (
    PROCEDURE = halfvec_ge, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR > (
    PROCEDURE = halfvec_gt, LEFTARG = halfvec, RIGHTARG = halfvec,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);

-- The btree operator class (sorting, DISTINCT, merge joins, btree indexes).
CREATE OPERATOR CLASS halfvec_ops DEFAULT FOR TYPE halfvec USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 halfvec_cmp(halfvec, halfvec);
