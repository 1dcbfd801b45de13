-- hnsw over sparsevec: the four operator classes (l2, ip, cosine, l1) built over existing rows and
-- fed by inserts afterwards, NULL rows and NULL queries, the empty (zero) vector under cosine, the
-- 1000 non-zero elements limit at build and at insert, columns without dimensions and very wide
-- columns. Tables stay far below 2 * m rows, where hnsw returns exact results, and every query
-- point is chosen so that no two distances tie.

SET enable_seqscan = off;

CREATE TABLE t (id int, val sparsevec(5));
INSERT INTO t VALUES
  (1, '{}/5'), (2, '{1:1,2:2,3:3}/5'), (3, '{1:1,2:1,3:1,4:1,5:1.5}/5'), (4, NULL),
  (5, '{1:-1,3:2,5:0.75}/5'), (6, '{2:3,4:1.5,5:2.25}/5'), (7, '{1:2,2:2.5,3:-2}/5');
CREATE INDEX t_l2 ON t USING hnsw (val sparsevec_l2_ops);
CREATE INDEX t_ip ON t USING hnsw (val sparsevec_ip_ops);
CREATE INDEX t_cosine ON t USING hnsw (val sparsevec_cosine_ops);
CREATE INDEX t_l1 ON t USING hnsw (val sparsevec_l1_ops);
INSERT INTO t VALUES
  (8, '{1:1.25,4:2,5:4}/5'), (9, '{3:0.5,4:0.25,5:0.125}/5'), (10, NULL), (11, '{1:-3,2:-1,3:4.5}/5');

-- L2
SELECT id, val FROM t ORDER BY val <-> '{1:3.1,2:2.9,3:3.3,4:0.7,5:1.1}/5';
SELECT id FROM t ORDER BY val <-> '{1:-1,2:0.2,3:1.3,5:0.4}/5';

-- inner product
SELECT id, val FROM t ORDER BY val <#> '{1:3.1,2:2.9,3:3.3,4:0.7,5:1.1}/5';
SELECT id FROM t ORDER BY val <#> '{1:-1,2:0.2,3:1.3,5:0.4}/5';

-- cosine: the empty vector has no direction and is left out of the index
SELECT id, val FROM t ORDER BY val <=> '{1:2.7,2:3.2,3:1.9,4:-0.6}/5';
SELECT id FROM t ORDER BY val <=> '{1:1.1,3:0.8,5:2.3}/5';

-- L1
SELECT id, val FROM t ORDER BY val <+> '{1:3.1,2:2.9,3:3.3,4:0.7,5:1.1}/5';
SELECT id FROM t ORDER BY val <+> '{1:-1,2:0.2,3:1.3,5:0.4}/5';

-- NULL queries and the empty query vector
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <-> (SELECT NULL::sparsevec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <#> (SELECT NULL::sparsevec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <=> (SELECT NULL::sparsevec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <+> (SELECT NULL::sparsevec)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <=> '{}/5') s;
SELECT COUNT(*) FROM t;

-- a query with other dimensions
SELECT id FROM t ORDER BY val <-> '{1:1}/4';

-- one index scan per outer row
SELECT t.id, (SELECT array_agg(n.id) FROM (SELECT t2.id FROM t t2 ORDER BY t2.val <-> t.val LIMIT 3) n) AS nearest
  FROM t WHERE t.val IS NOT NULL ORDER BY t.id;
SELECT t.id, n.id AS nearest
  FROM t CROSS JOIN LATERAL (SELECT t2.id FROM t t2 WHERE t2.id <> t.id ORDER BY t2.val <=> t.val LIMIT 1) n
  WHERE t.val IS NOT NULL AND t.val <> '{}/5' ORDER BY t.id;

TRUNCATE t;
SELECT id FROM t ORDER BY val <-> '{1:3}/5';
INSERT INTO t VALUES (1, '{1:1}/5'), (2, '{2:2,3:0.5}/5'), (3, NULL);
SELECT id FROM t ORDER BY val <-> '{1:3}/5';
SELECT id FROM t ORDER BY val <=> '{2:3}/5';

DROP TABLE t;

-- a column without dimensions cannot be indexed, an expression with a typmod can
CREATE TABLE u (id int, val sparsevec);
INSERT INTO u VALUES (1, '{1:1,3:2}/3'), (2, '{2:1}/3');
CREATE INDEX ON u USING hnsw (val sparsevec_l2_ops);
CREATE INDEX ON u USING hnsw ((val::sparsevec(3)) sparsevec_l2_ops);
SELECT id FROM u ORDER BY val::sparsevec(3) <-> '{2:2}/3';
DROP TABLE u;

-- wide columns have no dimension limit; only the number of non-zero elements is limited
CREATE TABLE w (id int, val sparsevec(1000000));
INSERT INTO w VALUES (1, '{1:1,999999:2}/1000000'), (2, '{500000:3,1000000:1}/1000000'),
  (3, '{7:-1}/1000000');
CREATE INDEX ON w USING hnsw (val sparsevec_l2_ops);
INSERT INTO w VALUES (4, '{1000000:2}/1000000');
SELECT id FROM w ORDER BY val <-> '{1000000:1.5}/1000000';
DROP TABLE w;

-- non-zero elements: at most 1000
CREATE TABLE t (val sparsevec(1001));
INSERT INTO t VALUES (array_cat(array_fill(1, ARRAY[1000]), ARRAY[0])::vector::sparsevec);
INSERT INTO t VALUES (array_fill(1, ARRAY[1001])::vector::sparsevec);
CREATE INDEX ON t USING hnsw (val sparsevec_l2_ops);
DELETE FROM t WHERE val = array_fill(1, ARRAY[1001])::vector::sparsevec;
CREATE INDEX ON t USING hnsw (val sparsevec_l2_ops);
INSERT INTO t VALUES (array_fill(1, ARRAY[1001])::vector::sparsevec);
INSERT INTO t VALUES (array_cat(array_fill(0, ARRAY[1]), array_fill(2, ARRAY[1000]))::vector::sparsevec);
SELECT COUNT(*) FROM t;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <-> array_fill(2, ARRAY[1001])::vector::sparsevec) s;
DROP TABLE t;

-- the limit does not apply to queries
CREATE TABLE t (val sparsevec(1001));
INSERT INTO t VALUES ('{1:1}/1001'), ('{2:2}/1001');
CREATE INDEX ON t USING hnsw (val sparsevec_l2_ops);
SELECT val FROM t ORDER BY val <-> array_fill(1, ARRAY[1001])::vector::sparsevec LIMIT 1;
DROP TABLE t;

-- what CREATE INDEX refuses
CREATE TABLE t (val sparsevec(3));
CREATE INDEX ON t USING hnsw (val);
CREATE INDEX ON t USING hnsw (val vector_l2_ops);
DROP TABLE t;
