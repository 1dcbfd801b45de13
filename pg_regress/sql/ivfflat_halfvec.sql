-- ivfflat over halfvec: halfvec_l2_ops, halfvec_ip_ops and halfvec_cosine_ops (none is the
-- default for halfvec), each built over existing rows and fed by inserts afterwards; NULL rows;
-- zero vectors; NULL and zero query values; rescans; query values of the wrong dimension; the
-- dimension checks (4000 at most, more than one for the spherical operator classes); the memory
-- check; expression indexes that cast vector to halfvec. Every value is exact in half
-- precision, every scan reads all the lists, and no two distances to a query point tie.

SET enable_seqscan = off;

CREATE TABLE t (id int, val halfvec(3));
INSERT INTO t VALUES
  (1, '[1.5,-2,0.25]'), (2, '[0,0,0]'), (3, NULL), (4, '[4,1,-1]'), (5, '[-3,2.5,2]'),
  (6, '[0.5,0.75,3]');
INSERT INTO t VALUES (7, '[2,2,2]'), (8, '[-1,-0.5,-4]');

-- no default operator class
CREATE INDEX ON t USING ivfflat (val);

-- L2
CREATE INDEX t_l2 ON t USING ivfflat (val halfvec_l2_ops) WITH (lists = 2);
INSERT INTO t VALUES (9, '[1,1,-2]'), (10, NULL), (11, '[-6,-6,1]');
SET ivfflat.probes = 2;
SELECT id, val FROM t ORDER BY val <-> '[1,0.5,1]';
SELECT id FROM t ORDER BY val <-> '[-2,2,1]' LIMIT 4;
SELECT id, round((val <-> '[1,0.5,1]')::numeric, 5) AS distance
  FROM t ORDER BY val <-> '[1,0.5,1]' LIMIT 3;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> (SELECT NULL::halfvec)) s;
SELECT id FROM t ORDER BY val <-> '[1,2]' LIMIT 1;
SET ivfflat.probes = 100;
SELECT id FROM t ORDER BY val <-> '[1,0.5,1]' LIMIT 5;
SET ivfflat.probes = 2;
DROP INDEX t_l2;

-- inner product: the zero vector is indexed
CREATE INDEX t_ip ON t USING ivfflat (val halfvec_ip_ops) WITH (lists = 1);
SELECT id, val FROM t ORDER BY val <#> '[1,0.5,1]';
SELECT id FROM t ORDER BY val <#> '[-2,2,1]' LIMIT 4;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <#> (SELECT NULL::halfvec)) s;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <#> '[0,0,0]') s;
DROP INDEX t_ip;

-- cosine: the zero vectors are left out
CREATE INDEX t_cos ON t USING ivfflat (val halfvec_cosine_ops) WITH (lists = 2);
INSERT INTO t VALUES (12, '[0,0,0]'), (13, '[0.5,-3,1]');
SELECT id, val FROM t ORDER BY val <=> '[1,0.5,1]';
SELECT id FROM t ORDER BY val <=> '[-2,2,1]' LIMIT 4;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <=> (SELECT NULL::halfvec)) s;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <=> '[0,0,0]') s;
SELECT id FROM t ORDER BY val <=> '[1,0.5,1,0]' LIMIT 1;
SELECT reltuples FROM pg_class WHERE relname = 't_cos';
REINDEX INDEX t_cos;
SELECT reltuples FROM pg_class WHERE relname = 't_cos';

-- one index scan per outer row
CREATE TABLE q (qid int, qv halfvec(3));
INSERT INTO q VALUES (1, '[0,0,1]'), (2, '[1,-1,0]'), (3, '[-1,1,0.5]');
SELECT qid, n.id FROM q CROSS JOIN LATERAL (
  SELECT id FROM t ORDER BY val <=> q.qv LIMIT 1) n ORDER BY qid;
DROP TABLE t, q;

-- dimensions
CREATE TABLE d (val halfvec);
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops);
DROP TABLE d;

CREATE TABLE d (val halfvec(4000));
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops) WITH (lists = 1);
DROP TABLE d;

-- the largest vectors take an index page each
CREATE TABLE big (id int, val halfvec(4000));
INSERT INTO big SELECT i, array_fill(i, ARRAY[4000]) FROM generate_series(0, 2) i;
CREATE INDEX big_val ON big USING ivfflat (val halfvec_l2_ops) WITH (lists = 1);
INSERT INTO big VALUES (3, array_fill(3, ARRAY[4000]));
SELECT id FROM big ORDER BY val <-> array_fill(1.25, ARRAY[4000])::halfvec;
SELECT pg_relation_size('big_val') / current_setting('block_size')::int AS pages;
DROP TABLE big;

CREATE TABLE d (val halfvec(4001));
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops) WITH (lists = 1);
CREATE INDEX ON d USING ivfflat (val halfvec_cosine_ops) WITH (lists = 1);
DROP TABLE d;

CREATE TABLE d (id int, val halfvec(1));
INSERT INTO d VALUES (1, '[3]'), (2, '[-0.5]'), (3, '[1.25]');
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops) WITH (lists = 1);
SELECT id FROM d ORDER BY val <-> '[1]';
CREATE INDEX ON d USING ivfflat (val halfvec_ip_ops) WITH (lists = 1);
CREATE INDEX ON d USING ivfflat (val halfvec_cosine_ops) WITH (lists = 1);
DROP TABLE d;

-- memory: 4000 dimensions take as much room per center as 2000 of vector
SET maintenance_work_mem = '1MB';
CREATE TABLE d (val halfvec(4000));
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops) WITH (lists = 140);
CREATE INDEX ON d USING ivfflat (val halfvec_l2_ops) WITH (lists = 120);
DROP TABLE d;
RESET maintenance_work_mem;

-- expression index: vector cast to halfvec
CREATE TABLE e (id int, val vector(2));
INSERT INTO e VALUES (1, '[1,1]'), (2, '[2.5,-1]'), (3, '[-2,0.5]'), (4, '[0.1,0.3]');
CREATE INDEX e_half ON e USING ivfflat ((val::halfvec(2)) halfvec_l2_ops) WITH (lists = 1);
INSERT INTO e VALUES (5, '[3,2]');
SELECT id FROM e ORDER BY val::halfvec(2) <-> '[2,2.2]';
CREATE INDEX e_half_cos ON e USING ivfflat ((val::halfvec(2)) halfvec_cosine_ops) WITH (lists = 1);
SELECT id FROM e ORDER BY val::halfvec(2) <=> '[1,-0.25]' LIMIT 2;
DROP TABLE e;
