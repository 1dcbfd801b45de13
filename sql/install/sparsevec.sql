-- sparsevec: sparse float4 vectors

CREATE TYPE sparsevec;

CREATE FUNCTION sparsevec_in(cstring, oid, integer) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_in';

CREATE FUNCTION sparsevec_out(sparsevec) RETURNS cstring
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_out';

CREATE FUNCTION sparsevec_typmod_in(cstring[]) RETURNS integer
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_typmod_in';

CREATE FUNCTION sparsevec_recv(internal, oid, integer) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_recv';

CREATE FUNCTION sparsevec_send(sparsevec) RETURNS bytea
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_send';

CREATE TYPE sparsevec (
    INPUT = sparsevec_in,
    OUTPUT = sparsevec_out,
    RECEIVE = sparsevec_recv,
    SEND = sparsevec_send,
    TYPMOD_IN = sparsevec_typmod_in,
    STORAGE = external
);

-- Distances and norms

CREATE FUNCTION l2_distance(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_l2_distance';

CREATE FUNCTION inner_product(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_inner_product';

CREATE FUNCTION cosine_distance(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_cosine_distance';

CREATE FUNCTION l1_distance(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_l1_distance';

CREATE FUNCTION l2_norm(sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_l2_norm';

CREATE FUNCTION l2_normalize(sparsevec) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_l2_normalize';

CREATE FUNCTION sparsevec_l2_squared_distance(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_l2_squared_distance';

CREATE FUNCTION sparsevec_negative_inner_product(sparsevec, sparsevec) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_negative_inner_product';

-- Comparison support

CREATE FUNCTION sparsevec_lt(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_lt';

CREATE FUNCTION sparsevec_le(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_le';

CREATE FUNCTION sparsevec_eq(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_eq';

CREATE FUNCTION sparsevec_ne(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_ne';

CREATE FUNCTION sparsevec_ge(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_ge';

CREATE FUNCTION sparsevec_gt(sparsevec, sparsevec) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_gt';

CREATE FUNCTION sparsevec_cmp(sparsevec, sparsevec) RETURNS int4
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_cmp';

-- Conversions

CREATE FUNCTION sparsevec(sparsevec, integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec';

CREATE FUNCTION vector_to_sparsevec(vector, integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'vector_to_sparsevec';

CREATE FUNCTION sparsevec_to_vector(sparsevec, integer, boolean) RETURNS vector
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_to_vector';

CREATE FUNCTION halfvec_to_sparsevec(halfvec, integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'halfvec_to_sparsevec';

CREATE FUNCTION sparsevec_to_halfvec(sparsevec, integer, boolean) RETURNS halfvec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'sparsevec_to_halfvec';

CREATE FUNCTION array_to_sparsevec(integer[], integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'array_to_sparsevec';

CREATE FUNCTION array_to_sparsevec(real[], integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'array_to_sparsevec';

CREATE FUNCTION array_to_sparsevec(double precision[], integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'array_to_sparsevec';

CREATE FUNCTION array_to_sparsevec(numeric[], integer, boolean) RETURNS sparsevec
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'array_to_sparsevec';

CREATE CAST (sparsevec AS sparsevec)
    WITH FUNCTION sparsevec(sparsevec, integer, boolean) AS IMPLICIT;

CREATE CAST (vector AS sparsevec)
    WITH FUNCTION vector_to_sparsevec(vector, integer, boolean) AS IMPLICIT;

CREATE CAST (sparsevec AS vector)
    WITH FUNCTION sparsevec_to_vector(sparsevec, integer, boolean) AS ASSIGNMENT;

CREATE CAST (halfvec AS sparsevec)
    WITH FUNCTION halfvec_to_sparsevec(halfvec, integer, boolean) AS IMPLICIT;

CREATE CAST (sparsevec AS halfvec)
    WITH FUNCTION sparsevec_to_halfvec(sparsevec, integer, boolean) AS ASSIGNMENT;

CREATE CAST (integer[] AS sparsevec)
    WITH FUNCTION array_to_sparsevec(integer[], integer, boolean) AS ASSIGNMENT;

CREATE CAST (real[] AS sparsevec)
    WITH FUNCTION array_to_sparsevec(real[], integer, boolean) AS ASSIGNMENT;

CREATE CAST (double precision[] AS sparsevec)
    WITH FUNCTION array_to_sparsevec(double precision[], integer, boolean) AS ASSIGNMENT;

CREATE CAST (numeric[] AS sparsevec)
    WITH FUNCTION array_to_sparsevec(numeric[], integer, boolean) AS ASSIGNMENT;

-- Operators

CREATE OPERATOR <-> (
    PROCEDURE = l2_distance,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <->
);

CREATE OPERATOR <#> (
    PROCEDURE = sparsevec_negative_inner_product,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <#>
);

CREATE OPERATOR <=> (
    PROCEDURE = cosine_distance,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <=>
);

CREATE OPERATOR <+> (
    PROCEDURE = l1_distance,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <+>
);

CREATE OPERATOR < (
    PROCEDURE = sparsevec_lt,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = >,
    NEGATOR = >=,
    RESTRICT = scalarltsel,
    JOIN = scalarltjoinsel
);

CREATE OPERATOR <= (
    PROCEDURE = sparsevec_le,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = >=,
    NEGATOR = >,
    RESTRICT = scalarlesel,
    JOIN = scalarlejoinsel
);

CREATE OPERATOR = (
    PROCEDURE = sparsevec_eq,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = =,
    NEGATOR = <>,
    RESTRICT = eqsel,
    JOIN = eqjoinsel
);

CREATE OPERATOR <> (
    PROCEDURE = sparsevec_ne,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <>,
    NEGATOR = =,
    RESTRICT = eqsel,
    JOIN = eqjoinsel
);

CREATE OPERATOR >= (
    PROCEDURE = sparsevec_ge,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <=,
    NEGATOR = <,
    RESTRICT = scalargesel,
    JOIN = scalargejoinsel
);

CREATE OPERATOR > (
    PROCEDURE = sparsevec_gt,
    LEFTARG = sparsevec,
    RIGHTARG = sparsevec,
    COMMUTATOR = <,
    NEGATOR = <=,
    RESTRICT = scalargtsel,
    JOIN = scalargtjoinsel
);

CREATE OPERATOR CLASS sparsevec_ops
    DEFAULT FOR TYPE sparsevec USING btree AS
        OPERATOR 1 <,
        OPERATOR 2 <=,
        OPERATOR 3 =,
        OPERATOR 4 >=,
        OPERATOR 5 >,
        FUNCTION 1 sparsevec_cmp(sparsevec, sparsevec);
