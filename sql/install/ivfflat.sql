-- ivfflat: the inverted-list index access method and its operator classes (support function 1
-- is the distance lists are chosen and entries ordered by, 2 the norm cosine classes normalize
-- with, 3 and 4 the distance and norm of k-means, 5 the type info for types other than vector).

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
