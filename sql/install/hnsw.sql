-- hnsw: the graph index access method and its operator classes (support function 1 is the
-- distance the graph is built on, 2 the norm that cosine classes normalize with, 3 the type
-- info for types other than vector).

CREATE FUNCTION hnswhandler(internal) RETURNS index_am_handler
    LANGUAGE C AS 'MODULE_PATHNAME', 'hnswhandler';

CREATE ACCESS METHOD hnsw TYPE INDEX HANDLER hnswhandler;

COMMENT ON ACCESS METHOD hnsw IS 'hnsw index access method';

CREATE FUNCTION hnsw_halfvec_support(internal) RETURNS internal
    LANGUAGE C AS 'MODULE_PATHNAME', 'hnsw_halfvec_support';

CREATE FUNCTION hnsw_bit_support(internal) RETURNS internal
    LANGUAGE C AS 'MODULE_PATHNAME', 'hnsw_bit_support';

CREATE FUNCTION hnsw_sparsevec_support(internal) RETURNS internal
    LANGUAGE C AS 'MODULE_PATHNAME', 'hnsw_sparsevec_support';

-- vector

CREATE OPERATOR CLASS vector_l2_ops FOR TYPE vector USING hnsw AS
    OPERATOR 1 <-> (vector, vector) FOR ORDER BY float_ops,
    FUNCTION 1 vector_l2_squared_distance(vector, vector);

CREATE OPERATOR CLASS vector_ip_ops FOR TYPE vector USING hnsw AS
    OPERATOR 1 <#> (vector, vector) FOR ORDER BY float_ops,
    FUNCTION 1 vector_negative_inner_product(vector, vector);

CREATE OPERATOR CLASS vector_cosine_ops FOR TYPE vector USING hnsw AS
    OPERATOR 1 <=> (vector, vector) FOR ORDER BY float_ops,
    FUNCTION 1 vector_negative_inner_product(vector, vector),
    FUNCTION 2 vector_norm(vector);

CREATE OPERATOR CLASS vector_l1_ops FOR TYPE vector USING hnsw AS
    OPERATOR 1 <+> (vector, vector) FOR ORDER BY float_ops,
    FUNCTION 1 l1_distance(vector, vector);

-- halfvec

CREATE OPERATOR CLASS halfvec_l2_ops FOR TYPE halfvec USING hnsw AS
    OPERATOR 1 <-> (halfvec, halfvec) FOR ORDER BY float_ops,
    FUNCTION 1 halfvec_l2_squared_distance(halfvec, halfvec),
    FUNCTION 3 hnsw_halfvec_support(internal);

CREATE OPERATOR CLASS halfvec_ip_ops FOR TYPE halfvec USING hnsw AS
    OPERATOR 1 <#> (halfvec, halfvec) FOR ORDER BY float_ops,
    FUNCTION 1 halfvec_negative_inner_product(halfvec, halfvec),
    FUNCTION 3 hnsw_halfvec_support(internal);

CREATE OPERATOR CLASS halfvec_cosine_ops FOR TYPE halfvec USING hnsw AS
    OPERATOR 1 <=> (halfvec, halfvec) FOR ORDER BY float_ops,
    FUNCTION 1 halfvec_negative_inner_product(halfvec, halfvec),
    FUNCTION 2 l2_norm(halfvec),
    FUNCTION 3 hnsw_halfvec_support(internal);

CREATE OPERATOR CLASS halfvec_l1_ops FOR TYPE halfvec USING hnsw AS
    OPERATOR 1 <+> (halfvec, halfvec) FOR ORDER BY float_ops,
    FUNCTION 1 l1_distance(halfvec, halfvec),
    FUNCTION 3 hnsw_halfvec_support(internal);

-- bit

CREATE OPERATOR CLASS bit_hamming_ops FOR TYPE bit USING hnsw AS
    OPERATOR 1 <~> (bit, bit) FOR ORDER BY float_ops,
    FUNCTION 1 hamming_distance(bit, bit),
    FUNCTION 3 hnsw_bit_support(internal);

CREATE OPERATOR CLASS bit_jaccard_ops FOR TYPE bit USING hnsw AS
    OPERATOR 1 <%> (bit, bit) FOR ORDER BY float_ops,
    FUNCTION 1 jaccard_distance(bit, bit),
    FUNCTION 3 hnsw_bit_support(internal);

-- sparsevec

CREATE OPERATOR CLASS sparsevec_l2_ops FOR TYPE sparsevec USING hnsw AS
    OPERATOR 1 <-> (sparsevec, sparsevec) FOR ORDER BY float_ops,
    FUNCTION 1 sparsevec_l2_squared_distance(sparsevec, sparsevec),
    FUNCTION 3 hnsw_sparsevec_support(internal);

CREATE OPERATOR CLASS sparsevec_ip_ops FOR TYPE sparsevec USING hnsw AS
    OPERATOR 1 <#> (sparsevec, sparsevec) FOR ORDER BY float_ops,
    FUNCTION 1 sparsevec_negative_inner_product(sparsevec, sparsevec),
    FUNCTION 3 hnsw_sparsevec_support(internal);

CREATE OPERATOR CLASS sparsevec_cosine_ops FOR TYPE sparsevec USING hnsw AS
    OPERATOR 1 <=> (sparsevec, sparsevec) FOR ORDER BY float_ops,
    FUNCTION 1 sparsevec_negative_inner_product(sparsevec, sparsevec),
    FUNCTION 2 l2_norm(sparsevec),
    FUNCTION 3 hnsw_sparsevec_support(internal);

CREATE OPERATOR CLASS sparsevec_l1_ops FOR TYPE sparsevec USING hnsw AS
    OPERATOR 1 <+> (sparsevec, sparsevec) FOR ORDER BY float_ops,
    FUNCTION 1 l1_distance(sparsevec, sparsevec),
    FUNCTION 3 hnsw_sparsevec_support(internal);
