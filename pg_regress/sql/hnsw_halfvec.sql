-- hnsw over halfvec: the four operator classes (l2, ip, cosine, l1) built over existing rows and
-- fed by inserts afterwards, NULL rows and NULL queries, zero vectors under cosine, dimension
-- checks and the 4000-dimension limit, expression indexes (including a halfvec index over a
-- vector column) and partial indexes. Tables stay far below 2 * m rows, where hnsw returns exact
-- results, and every query point is chosen so that no two distances tie.

SET enable_seqscan = off;

CREATE TABLE t (id int, val halfvec(3));
INSERT INTO t VALUES
  (1, '[0,0,0]'), (2, '[1,2,3]'), (3, '[1,1,1]'), (4, NULL), (5, '[-1,2,0.75]'),
  (6, '[3,1.5,2.25]'), (7, '[2,2.5,-2]');
CREATE INDEX t_l2 ON t USING hnsw (val halfvec_l2_ops);
CREATE INDEX t_ip ON t USING hnsw (val halfvec_ip_ops);
CREATE INDEX t_cosine ON t USING hnsw (val halfvec_cosine_ops);
CREATE INDEX t_l1 ON t USING hnsw (val halfvec_l1_ops);
INSERT INTO t VALUES (8, '[1.25,2,4]'), (9, '[0.5,0.25,0.125]'), (10, NULL), (11, '[-3,-1,4.5]');

-- L2
SELECT id, val FROM t ORDER BY val <-> '[3.1,2.9,3.3]';
SELECT id FROM t ORDER BY val <-> '[-1,0.2,1.3]';
SELECT id, round((val <-> '[3.1,2.9,3.3]')::numeric, 4) AS distance FROM t ORDER BY val <-> '[3.1,2.9,3.3]' LIMIT 3;

-- inner product
SELECT id, val FROM t ORDER BY val <#> '[3.1,2.9,3.3]';
SELECT id FROM t ORDER BY val <#> '[-1,0.2,1.3]';

-- cosine: the zero vector has no direction and is left out of the index
SELECT id, val FROM t ORDER BY val <=> '[2.7,3.2,1.9]';
SELECT id FROM t ORDER BY val <=> '[-1,0.2,1.3]';

-- L1
SELECT id, val FROM t ORDER BY val <+> '[3.1,2.9,3.3]';
SELECT id FROM t ORDER BY val <+> '[-1,0.2,1.3]';

-- a NULL query value returns every indexed row (in no particular order)
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <-> (SELECT NULL::halfvec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <#> (SELECT NULL::halfvec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <=> (SELECT NULL::halfvec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <+> (SELECT NULL::halfvec)) s;

-- a zero query vector under cosine
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <=> '[0,0,0]') s;

-- the table still holds every row, NULLs included
SELECT COUNT(*) FROM t;

-- LIMIT and OFFSET over the index
SELECT id FROM t ORDER BY val <-> '[1.1,0.8,2.3]' LIMIT 2;
SELECT id FROM t ORDER BY val <-> '[1.1,0.8,2.3]' LIMIT 3 OFFSET 2;
SELECT id FROM t ORDER BY val <-> '[1.1,0.8,2.3]' LIMIT 0;

-- a query with other dimensions
SELECT id FROM t ORDER BY val <-> '[1,2]';
SELECT id FROM t ORDER BY val <=> '[1,2,3,4]' LIMIT 1;

-- the query vector as a parameter, with custom and generic plans
PREPARE nearest(halfvec) AS SELECT id FROM t ORDER BY val <-> $1 LIMIT 3;
EXECUTE nearest('[0.1,1.2,2.1]');
SET plan_cache_mode = force_generic_plan;
EXECUTE nearest('[2.1,1.3,0.4]');
EXECUTE nearest('[0.1,1.2,2.1]');
RESET plan_cache_mode;
DEALLOCATE nearest;

-- one index scan per outer row (rescans)
SELECT t.id, (SELECT array_agg(n.id) FROM (SELECT t2.id FROM t t2 ORDER BY t2.val <-> t.val LIMIT 3) n) AS nearest
  FROM t WHERE t.val IS NOT NULL ORDER BY t.id;
SELECT t.id, n.id AS nearest
  FROM t CROSS JOIN LATERAL (SELECT t2.id FROM t t2 WHERE t2.id <> t.id ORDER BY t2.val <=> t.val LIMIT 1) n
  WHERE t.val IS NOT NULL AND t.val <> '[0,0,0]' ORDER BY t.id;

-- updates and deletes are seen through the index
UPDATE t SET val = '[3,3,3.5]' WHERE id = 1;
DELETE FROM t WHERE id = 2;
SELECT id FROM t ORDER BY val <-> '[3.1,2.9,3.3]' LIMIT 4;

-- TRUNCATE empties the index, which takes inserts again
TRUNCATE t;
SELECT id FROM t ORDER BY val <-> '[3.1,2.9,3.3]';
INSERT INTO t VALUES (1, '[1,1,1]'), (2, '[2,2,2.5]'), (3, NULL);
SELECT id FROM t ORDER BY val <-> '[3.1,2.9,3.3]';
SELECT id FROM t ORDER BY val <#> '[3.1,2.9,3.3]';
SELECT id FROM t ORDER BY val <=> '[1,2,3]';
SELECT id FROM t ORDER BY val <+> '[3.1,2.9,3.3]';

DROP TABLE t;

-- an index built from inserts only, compared with the exact order
CREATE TABLE g (id int, val halfvec(4));
CREATE INDEX ON g USING hnsw (val halfvec_l2_ops);
INSERT INTO g SELECT i, ARRAY[i % 7, (i * 3) % 11, sqrt(i), (i * i) % 13]::real[]::halfvec
  FROM generate_series(1, 30) i;
SELECT array_agg(id) FROM (SELECT id FROM g ORDER BY val <-> '[3,5,2,6]' LIMIT 10) s;
SET enable_indexscan = off;
RESET enable_seqscan;
SELECT array_agg(id) FROM (SELECT id FROM g ORDER BY val <-> '[3,5,2,6]' LIMIT 10) s;
SET enable_seqscan = off;
RESET enable_indexscan;
DROP TABLE g;

-- a column without dimensions cannot be indexed, an expression with a typmod can
CREATE TABLE u (id int, val halfvec);
INSERT INTO u VALUES (1, '[1,2,3]'), (2, '[3,2,1]'), (3, '[1,1]');
CREATE INDEX ON u USING hnsw (val halfvec_l2_ops);
CREATE INDEX ON u USING hnsw ((val::halfvec(3)) halfvec_l2_ops);
DELETE FROM u WHERE id = 3;
CREATE INDEX u_expr ON u USING hnsw ((val::halfvec(3)) halfvec_l2_ops);
SELECT id FROM u ORDER BY val::halfvec(3) <-> '[2.7,3.2,1.9]';
INSERT INTO u VALUES (4, '[1,2]');
DROP TABLE u;

-- partial index
CREATE TABLE p (id int, val halfvec(2));
INSERT INTO p SELECT i, ARRAY[i, 10 - i]::real[]::halfvec FROM generate_series(1, 9) i;
CREATE INDEX ON p USING hnsw (val halfvec_l2_ops) WHERE id % 2 = 0;
SELECT id FROM p WHERE id % 2 = 0 ORDER BY val <-> '[3.9,6]';
DROP TABLE p;

-- a halfvec index over a vector column
CREATE TABLE v (id int, val vector(3));
INSERT INTO v VALUES (1, '[1,2,3]'), (2, '[3,1.5,2.25]'), (3, '[-1,2,0.75]'), (4, '[0.5,0.25,0.125]');
CREATE INDEX ON v USING hnsw ((val::halfvec(3)) halfvec_l2_ops);
CREATE INDEX ON v USING hnsw ((val::halfvec(3)) halfvec_cosine_ops);
SELECT id FROM v ORDER BY val::halfvec(3) <-> '[3.1,2.9,3.3]';
SELECT id FROM v ORDER BY val::halfvec(3) <=> '[-1,0.2,1.3]';
DROP TABLE v;

-- what CREATE INDEX refuses
CREATE TABLE t (id int, val halfvec(3));
CREATE INDEX ON t USING hnsw (val);
CREATE INDEX ON t USING hnsw (val vector_l2_ops);
CREATE INDEX ON t USING hnsw (val sparsevec_l2_ops);
DROP TABLE t;

-- dimension limit: 4000
CREATE TABLE t (val halfvec(4000));
CREATE INDEX ON t USING hnsw (val halfvec_l2_ops);
INSERT INTO t SELECT array_fill(i, ARRAY[4000])::halfvec FROM generate_series(1, 3) i;
SELECT val[1:2]::real[] FROM (SELECT val::real[] FROM t ORDER BY val <-> array_fill(2.25, ARRAY[4000])::halfvec) s;
CREATE INDEX ON t USING hnsw (val halfvec_ip_ops);
DROP TABLE t;

CREATE TABLE t (val halfvec(4001));
CREATE INDEX ON t USING hnsw (val halfvec_l2_ops);
CREATE INDEX ON t USING hnsw (val halfvec_cosine_ops);
CREATE INDEX ON t USING hnsw ((val::halfvec(4000)) halfvec_l2_ops);
DROP TABLE t;

-- a vector column above the vector limit can be indexed as halfvec
CREATE TABLE t (val vector(3000));
CREATE INDEX ON t USING hnsw (val vector_l2_ops);
CREATE INDEX ON t USING hnsw ((val::halfvec(3000)) halfvec_l2_ops);
INSERT INTO t SELECT array_fill(i, ARRAY[3000])::vector FROM generate_series(1, 3) i;
SELECT (val::real[])[1] FROM t ORDER BY val::halfvec(3000) <-> array_fill(0.5, ARRAY[3000])::halfvec;
DROP TABLE t;
