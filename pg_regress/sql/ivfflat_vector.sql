-- ivfflat over vector: vector_l2_ops (the default for vector), vector_ip_ops and
-- vector_cosine_ops, each built over existing rows and fed by inserts afterwards; NULL rows; zero
-- vectors (indexed under inner product, left out under cosine); NULL and zero query values;
-- rescans from a lateral join; query values of the wrong dimension; the dimension checks; the
-- types, operator classes and index forms ivfflat refuses; expression and partial indexes.
-- Every scan reads all the lists (lists = 1, or ivfflat.probes >= lists), so the rows returned
-- do not depend on the k-means centers, and no two distances to a query point tie.

SET enable_seqscan = off;

-- L2, the default operator class, with two lists both probed
CREATE TABLE t (id int, val vector(3));
INSERT INTO t VALUES
  (1, '[2,0,1]'), (2, '[0,0,0]'), (3, NULL), (4, '[-1,4,2]'), (5, '[3,3,-3]'),
  (6, '[0.5,1.5,2.5]');
CREATE INDEX t_l2 ON t USING ivfflat (val) WITH (lists = 2);
INSERT INTO t VALUES (7, '[1,1,1]'), (8, NULL), (9, '[10,-10,0]');
SET ivfflat.probes = 2;
SELECT id, val FROM t ORDER BY val <-> '[1,2,1]';
SELECT id FROM t ORDER BY val <-> '[3,3,-2]' LIMIT 3;
SELECT id, round((val <-> '[1,2,1]')::numeric, 5) AS distance
  FROM t ORDER BY val <-> '[1,2,1]' LIMIT 4;
-- a NULL query value: every indexed row comes back (NULL rows are not in the index)
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> (SELECT NULL::vector)) s;
-- a NULL constant folds the ORDER BY away: no index order, every row
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> NULL::vector) s;
SELECT COUNT(*) FROM t;
-- probes beyond the number of lists read every list once
SET ivfflat.probes = 40;
SELECT id FROM t ORDER BY val <-> '[1,2,1]';
SET ivfflat.probes = 2;
-- one index scan per outer row
CREATE TABLE q (qid int, qv vector(3));
INSERT INTO q VALUES (1, '[0,0,0.2]'), (2, '[2,0,1.1]'), (3, '[9,-9,0]'), (4, '[-1,4.5,2]');
SELECT qid, n.id FROM q CROSS JOIN LATERAL (
  SELECT id FROM t ORDER BY val <-> q.qv LIMIT 1) n ORDER BY qid;
SELECT qid, n.ids FROM q CROSS JOIN LATERAL (
  SELECT array_agg(id) AS ids FROM (SELECT id FROM t ORDER BY val <-> q.qv LIMIT 2) s) n
  ORDER BY qid;
-- the query value must have the column's dimensions
SELECT id FROM t ORDER BY val <-> '[1,2]' LIMIT 1;
SELECT id FROM t ORDER BY val <-> '[1,2,3,4]' LIMIT 1;
DROP INDEX t_l2;

-- inner product: the zero vector is indexed
CREATE TABLE ip (id int, val vector(3));
INSERT INTO ip VALUES
  (1, '[1,2,3]'), (2, '[0,0,0]'), (3, NULL), (4, '[-2,1,1]'), (5, '[3,-1,2]'),
  (6, '[0.5,0.5,5]');
CREATE INDEX ip_val ON ip USING ivfflat (val vector_ip_ops) WITH (lists = 1);
INSERT INTO ip VALUES (7, '[2,2,-1]'), (8, '[-1,-1,-1]'), (9, NULL);
SELECT id, val FROM ip ORDER BY val <#> '[1,1,2]';
SELECT id FROM ip ORDER BY val <#> '[-3,0.5,1]';
SELECT COUNT(*) FROM (SELECT id FROM ip ORDER BY val <#> (SELECT NULL::vector)) s;
SELECT COUNT(*) FROM (SELECT id FROM ip ORDER BY val <#> '[0,0,0]') s;
SELECT id FROM ip ORDER BY val <#> '[1,1]' LIMIT 1;

-- inner product with three lists, all probed
CREATE INDEX ip_val3 ON ip USING ivfflat (val vector_ip_ops) WITH (lists = 3);
DROP INDEX ip_val;
SET ivfflat.probes = 3;
SELECT id FROM ip ORDER BY val <#> '[1,1,2]';
SET ivfflat.probes = 2;

-- cosine: zero vectors have no direction and are left out of the index
CREATE TABLE cos (id int, val vector(3));
INSERT INTO cos VALUES
  (1, '[1,2,3]'), (2, '[0,0,0]'), (3, NULL), (4, '[-2,1,1]'), (5, '[3,-1,2]'),
  (6, '[0.5,0.5,5]');
CREATE INDEX cos_val ON cos USING ivfflat (val vector_cosine_ops) WITH (lists = 2);
INSERT INTO cos VALUES (7, '[2,2,-1]'), (8, '[0,0,0]'), (9, '[-1,-1,-1]'), (10, NULL);
SELECT id, val FROM cos ORDER BY val <=> '[1,1,2]';
SELECT id FROM cos ORDER BY val <=> '[-3,0.5,1.5]';
-- a NULL or zero query value: the indexed rows, in no particular order
SELECT COUNT(*) FROM (SELECT id FROM cos ORDER BY val <=> (SELECT NULL::vector)) s;
SELECT COUNT(*) FROM (SELECT id FROM cos ORDER BY val <=> '[0,0,0]') s;
-- the magnitude of the query value does not matter
SELECT id FROM cos ORDER BY val <=> '[100,100,200]' LIMIT 3;
SELECT qid, n.id FROM q CROSS JOIN LATERAL (
  SELECT id FROM cos ORDER BY val <=> q.qv LIMIT 1) n ORDER BY qid;
SELECT id FROM cos ORDER BY val <=> '[1,1,2,0]' LIMIT 1;
-- the index holds the rows that are neither NULL nor zero
SELECT reltuples FROM pg_class WHERE relname = 'cos_val';
REINDEX INDEX cos_val;
SELECT reltuples FROM pg_class WHERE relname = 'cos_val';
SELECT COUNT(*) FROM (SELECT id FROM cos ORDER BY val <=> '[1,0,0]') s;

-- every operator class on the same table: each ORDER BY uses its own index
CREATE INDEX t_l2 ON t USING ivfflat (val vector_l2_ops) WITH (lists = 1);
CREATE INDEX t_ip ON t USING ivfflat (val vector_ip_ops) WITH (lists = 1);
CREATE INDEX t_cos ON t USING ivfflat (val vector_cosine_ops) WITH (lists = 1);
SELECT id FROM t ORDER BY val <-> '[0.2,1.4,0.3]';
SELECT id FROM t ORDER BY val <#> '[0.2,1.4,0.3]';
SELECT id FROM t ORDER BY val <=> '[0.2,1.4,0.3]';
DROP TABLE t, ip, cos, q;

-- dimensions
CREATE TABLE d (val vector);
CREATE INDEX ON d USING ivfflat (val);
CREATE INDEX ON d USING ivfflat (val vector_cosine_ops);
DROP TABLE d;

CREATE TABLE d (val vector(2000));
CREATE INDEX ON d USING ivfflat (val) WITH (lists = 1);
DROP TABLE d;

CREATE TABLE d (val vector(2001));
CREATE INDEX ON d USING ivfflat (val) WITH (lists = 1);
CREATE INDEX ON d USING ivfflat (val vector_ip_ops) WITH (lists = 1);
DROP TABLE d;

CREATE TABLE d (val vector(16000));
CREATE INDEX ON d USING ivfflat (val vector_cosine_ops) WITH (lists = 1);
DROP TABLE d;

-- the largest vectors take an index page each
CREATE TABLE big (id int, val vector(2000));
INSERT INTO big SELECT i, array_fill(i, ARRAY[2000]) FROM generate_series(0, 2) i;
CREATE INDEX big_val ON big USING ivfflat (val) WITH (lists = 1);
INSERT INTO big VALUES (3, array_fill(3, ARRAY[2000]));
SELECT id FROM big ORDER BY val <-> array_fill(1.2, ARRAY[2000])::vector;
SELECT pg_relation_size('big_val') / current_setting('block_size')::int AS pages;
DROP TABLE big;

-- one dimension: fine for L2, not for the spherical k-means of inner product and cosine
CREATE TABLE d (id int, val vector(1));
INSERT INTO d VALUES (1, '[5.5]'), (2, '[-1]'), (3, '[2.5]'), (4, NULL);
CREATE INDEX d_l2 ON d USING ivfflat (val vector_l2_ops) WITH (lists = 1);
SELECT id FROM d ORDER BY val <-> '[2]';
CREATE INDEX ON d USING ivfflat (val vector_ip_ops) WITH (lists = 1);
CREATE INDEX ON d USING ivfflat (val vector_cosine_ops) WITH (lists = 1);
TRUNCATE d;
CREATE INDEX ON d USING ivfflat (val vector_ip_ops) WITH (lists = 1);
DROP TABLE d;

-- expression index: a column without dimensions, cast to a fixed number of them
CREATE TABLE e (id int, val vector);
INSERT INTO e VALUES (1, '[1,1]'), (2, '[4,-2]'), (3, '[-3,0.5]'), (4, NULL);
CREATE INDEX e_val ON e USING ivfflat ((val::vector(2)) vector_l2_ops) WITH (lists = 1);
INSERT INTO e VALUES (5, '[0,2.5]');
INSERT INTO e VALUES (6, '[1,2,3]');
SELECT id FROM e ORDER BY val::vector(2) <-> '[0.5,2]';
SELECT COUNT(*) FROM e;
DROP TABLE e;

-- expression index over a computed vector
CREATE TABLE e (id int, x real, y real);
INSERT INTO e SELECT i, i, 10 - i * i FROM generate_series(1, 6) i;
CREATE INDEX e_xy ON e USING ivfflat ((ARRAY[x, y]::vector(2)) vector_l2_ops) WITH (lists = 1);
SELECT id FROM e ORDER BY ARRAY[x, y]::vector(2) <-> '[2.2,5.5]' LIMIT 3;
DROP TABLE e;

-- partial index: used when the query implies its predicate
CREATE TABLE p (id int, val vector(2));
INSERT INTO p SELECT i, ARRAY[i * 0.5, 3 - i]::real[] FROM generate_series(1, 12) i;
CREATE INDEX p_odd ON p USING ivfflat (val vector_l2_ops) WITH (lists = 1) WHERE id % 2 = 1;
SELECT id FROM p WHERE id % 2 = 1 ORDER BY val <-> '[2.6,-2]';
INSERT INTO p VALUES (13, '[2.6,-2]'), (14, '[2.6,-2.1]');
SELECT id FROM p WHERE id % 2 = 1 ORDER BY val <-> '[2.6,-2]' LIMIT 2;
-- without ORDER BY the index is never the plan, even when sequential scans are disabled
SELECT COUNT(*) FROM p WHERE id % 2 = 1;
SELECT id FROM p WHERE id % 2 = 1 AND val <-> '[2.6,-2]' < 1.5 ORDER BY id;
DROP TABLE p;

-- what ivfflat refuses
CREATE TABLE r (id int, val vector(3), sv sparsevec(3), hv halfvec(3), b bit(3));
CREATE INDEX ON r USING ivfflat (sv);
CREATE INDEX ON r USING ivfflat (sv sparsevec_l2_ops);
CREATE INDEX ON r USING ivfflat (sv sparsevec_cosine_ops);
CREATE INDEX ON r USING ivfflat (val vector_l1_ops);
CREATE INDEX ON r USING ivfflat (val halfvec_l2_ops);
CREATE INDEX ON r USING ivfflat (val bit_hamming_ops);
CREATE INDEX ON r USING ivfflat (hv vector_l2_ops);
CREATE INDEX ON r USING ivfflat (id);
CREATE INDEX ON r USING ivfflat (val, id);
CREATE INDEX ON r USING ivfflat (val vector_l2_ops, hv halfvec_l2_ops);
CREATE UNIQUE INDEX ON r USING ivfflat (val);
CREATE INDEX ON r USING ivfflat (val) INCLUDE (id);
CREATE INDEX ON r USING ivfflat (val DESC);
CREATE INDEX ON r USING ivfflat (val NULLS FIRST);
SELECT COUNT(*) FROM pg_class WHERE relname LIKE 'r\_%' AND relkind = 'i';
DROP TABLE r;
