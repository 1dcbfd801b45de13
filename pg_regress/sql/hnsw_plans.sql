-- Plans the optimizer makes with hnsw indexes, which depend on the access method's cost
-- estimate: ORDER BY distance with and without LIMIT, filters, operators of another operator
-- class, descending order, distance conditions without ORDER BY, expression indexes, parameters,
-- joins, and hnsw.ef_search, which enters the estimate. Only plan shapes are shown (COSTS OFF),
-- and only for plans that no enable_* setting disables, so the output reads the same on every
-- supported server version.

CREATE TABLE items (id int PRIMARY KEY, cat int, val vector(3), emb halfvec(3));
INSERT INTO items
  SELECT i, i % 10, ARRAY[sin(i), cos(i), sin(i * 0.5)]::real[]::vector,
         ARRAY[cos(i), sin(i), cos(i * 0.5)]::real[]::halfvec
  FROM generate_series(1, 1000) i;
CREATE INDEX items_val_l2 ON items USING hnsw (val vector_l2_ops);
CREATE INDEX items_val_cos ON items USING hnsw (val vector_cosine_ops);
CREATE INDEX items_emb ON items USING hnsw (emb halfvec_ip_ops);
CREATE INDEX items_cat ON items (cat);
ANALYZE items;

-- nearest neighbors with LIMIT use the index of the matching operator class
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <=> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY emb <#> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id, val <-> '[0.1,0.2,0.3]' AS distance FROM items ORDER BY distance LIMIT 5;

-- no index for this operator
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <#> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <+> '[0.1,0.2,0.3]' LIMIT 5;

-- without LIMIT, every row is wanted
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]';

-- descending distance, distance conditions without ORDER BY
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]' DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE val <-> '[0.1,0.2,0.3]' < 0.1;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE val <-> '[0.1,0.2,0.3]' < 0.1
  ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;

-- filters
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE id > 10 ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat = 3 ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE id < 20 ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;

-- ef_search is part of the estimate
SET hnsw.ef_search = 1000;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
SET hnsw.ef_search = 1;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
RESET hnsw.ef_search;

-- iterative scans do not change the plan
SET hnsw.iterative_scan = relaxed_order;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat = 3 ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
RESET hnsw.iterative_scan;

-- query vector from a parameter, custom and generic plans
PREPARE nearest(vector) AS SELECT id FROM items ORDER BY val <-> $1 LIMIT 5;
EXPLAIN (COSTS OFF) EXECUTE nearest('[0.1,0.2,0.3]');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE nearest('[0.1,0.2,0.3]');
RESET plan_cache_mode;
DEALLOCATE nearest;

-- the query vector cast from another type
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[0.1,0.2,0.3]'::halfvec::vector LIMIT 5;

-- one index scan per outer row
CREATE TABLE queries (qid int, q vector(3));
INSERT INTO queries SELECT i, ARRAY[i, 0.5, -i]::real[]::vector FROM generate_series(1, 3) i;
ANALYZE queries;
EXPLAIN (COSTS OFF) SELECT qid, n.id FROM queries
  CROSS JOIN LATERAL (SELECT id FROM items ORDER BY val <-> queries.q LIMIT 3) n;

-- expression indexes
CREATE INDEX items_val_half ON items USING hnsw ((val::halfvec(3)) halfvec_l2_ops);
CREATE INDEX items_val_bits ON items USING hnsw ((binary_quantize(val)::bit(3)) bit_hamming_ops);
ANALYZE items;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val::halfvec(3) <-> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items
  ORDER BY binary_quantize(val)::bit(3) <~> binary_quantize('[0.1,-0.2,0.3]'::vector) LIMIT 5;

-- a partial index is used when the query implies its predicate
CREATE INDEX items_val_cat ON items USING hnsw (val vector_l1_ops) WHERE cat <> 7;
ANALYZE items;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat <> 7 ORDER BY val <+> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat <> 6 ORDER BY val <+> '[0.1,0.2,0.3]' LIMIT 5;

-- an empty table
CREATE TABLE empty (val vector(3));
CREATE INDEX ON empty USING hnsw (val vector_l2_ops);
ANALYZE empty;
EXPLAIN (COSTS OFF) SELECT * FROM empty ORDER BY val <-> '[0.1,0.2,0.3]' LIMIT 5;
DROP TABLE empty;

DROP TABLE queries;
DROP TABLE items;
