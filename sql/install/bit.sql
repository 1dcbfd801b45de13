-- Distances on Postgres's bit type

CREATE FUNCTION hamming_distance(bit, bit) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'hamming_distance';

CREATE FUNCTION jaccard_distance(bit, bit) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE C AS 'MODULE_PATHNAME', 'jaccard_distance';

CREATE OPERATOR <~> (
    PROCEDURE = hamming_distance,
    LEFTARG = bit,
    RIGHTARG = bit,
    COMMUTATOR = <~>
);

CREATE OPERATOR <%> (
    PROCEDURE = jaccard_distance,
    LEFTARG = bit,
    RIGHTARG = bit,
    COMMUTATOR = <%>
);
