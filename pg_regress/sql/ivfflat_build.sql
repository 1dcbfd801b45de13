-- Building and maintaining ivfflat indexes: empty tables and tables with fewer sampled rows than
-- lists (the little-data notice; NULL rows are never sampled, zero vectors not under the
-- spherical operator classes); the memory check on the centers, the samples and k-means;
-- unlogged tables and their init fork, SET LOGGED / SET UNLOGGED; REINDEX, also CONCURRENTLY;
-- CREATE and DROP INDEX CONCURRENTLY; a parallel build; VACUUM after deletes (the space is
-- reused by later inserts); VACUUM FULL; CLUSTER (refused); TRUNCATE, also rolled back; values
-- stored compressed or out of line; the index scan statistics. Every scan reads all the lists;
-- page and tuple counts are shown only where they do not depend on the centers (one list, or
-- lists that each fit on their first page).

CREATE EXTENSION pageinspect;
SET enable_seqscan = off;

-- an empty table: random centers, and a notice
CREATE TABLE e (id int, val vector(3));
CREATE INDEX e_val ON e USING ivfflat (val) WITH (lists = 3);
SELECT pg_relation_size('e_val') / current_setting('block_size')::int AS pages;
SELECT id FROM e ORDER BY val <-> '[1,1,1]';
INSERT INTO e SELECT i, ARRAY[i, -i, i % 4]::real[] FROM generate_series(1, 12) i;
SET ivfflat.probes = 3;
SELECT id FROM e ORDER BY val <-> '[5.2,-4.9,1]' LIMIT 4;
SELECT COUNT(*) FROM (SELECT id FROM e ORDER BY val <-> '[0,0,0]') s;
DROP INDEX e_val;
CREATE INDEX e_cos ON e USING ivfflat (val vector_cosine_ops) WITH (lists = 12);
CREATE INDEX e_cos13 ON e USING ivfflat (val vector_cosine_ops) WITH (lists = 13);
DROP TABLE e;

-- rows that are not sampled: NULLs, and zero vectors under inner product and cosine
CREATE TABLE s (id int, val vector(2));
INSERT INTO s VALUES (1, NULL), (2, NULL);
CREATE INDEX ON s USING ivfflat (val) WITH (lists = 1);
INSERT INTO s VALUES (3, '[1,2]'), (4, '[-2,1]'), (5, '[0.5,-3]'), (6, '[0,0]'), (7, '[0,0]');
CREATE INDEX s_l2_5 ON s USING ivfflat (val vector_l2_ops) WITH (lists = 5);
CREATE INDEX s_l2_6 ON s USING ivfflat (val vector_l2_ops) WITH (lists = 6);
CREATE INDEX s_ip_3 ON s USING ivfflat (val vector_ip_ops) WITH (lists = 3);
CREATE INDEX s_ip_4 ON s USING ivfflat (val vector_ip_ops) WITH (lists = 4);
CREATE INDEX s_cos_3 ON s USING ivfflat (val vector_cosine_ops) WITH (lists = 3);
CREATE INDEX s_cos_4 ON s USING ivfflat (val vector_cosine_ops) WITH (lists = 4);
-- the index tuples: every non-NULL row, except zero vectors under cosine
SELECT relname, reltuples FROM pg_class WHERE relname LIKE 's\_%' AND relkind = 'i'
  ORDER BY relname;
DROP TABLE s;

-- memory: the centers alone
SET maintenance_work_mem = '1MB';
CREATE TABLE m (val vector(2000));
CREATE INDEX ON m USING ivfflat (val) WITH (lists = 140);
CREATE INDEX ON m USING ivfflat (val) WITH (lists = 1000);
-- the centers and the samples (one block of rows gives room for 291 samples)
INSERT INTO m VALUES (array_fill(1, ARRAY[2000])::vector);
CREATE INDEX ON m USING ivfflat (val) WITH (lists = 1);
SET maintenance_work_mem = '3MB';
CREATE INDEX m_val ON m USING ivfflat (val) WITH (lists = 1);
DROP TABLE m;
-- k-means: the distance bounds grow with samples times lists
SET maintenance_work_mem = '1MB';
CREATE TABLE m (id int, val vector(3)) WITH (autovacuum_enabled = off);
INSERT INTO m SELECT i, ARRAY[i % 13, i % 17, i % 19]::real[] FROM generate_series(1, 3000) i;
CREATE INDEX ON m USING ivfflat (val) WITH (lists = 150);
SET maintenance_work_mem = '2MB';
CREATE INDEX ON m USING ivfflat (val) WITH (lists = 150);
SET maintenance_work_mem = '4MB';
CREATE INDEX m_val ON m USING ivfflat (val) WITH (lists = 150);
RESET maintenance_work_mem;
SET ivfflat.probes = 150;
SELECT id FROM m ORDER BY val <-> '[3.13,5.27,7.41]' LIMIT 3;
SELECT COUNT(*) FROM (SELECT id FROM m ORDER BY val <-> '[3.13,5.27,7.41]') s;
DROP TABLE m;

-- unlogged: the init fork holds an empty index with the same shape
CREATE UNLOGGED TABLE u (id int, val vector(3));
INSERT INTO u SELECT i, ARRAY[i * 0.5, 10 - i, (i * i) % 9]::real[] FROM generate_series(1, 20) i;
CREATE INDEX u_val ON u USING ivfflat (val) WITH (lists = 2);
SELECT relpersistence FROM pg_class WHERE relname = 'u_val';
SELECT pg_relation_size('u_val') / current_setting('block_size')::int AS main_pages,
       pg_relation_size('u_val', 'init') / current_setting('block_size')::int AS init_pages;
SELECT substr(get_raw_page('u_val', 'init', 0), 25, 12) AS init_meta;
SET ivfflat.probes = 2;
SELECT id FROM u ORDER BY val <-> '[3,4,2]' LIMIT 3;
INSERT INTO u VALUES (21, '[3,4,2]');
SELECT id FROM u ORDER BY val <-> '[3,4,2]' LIMIT 2;
ALTER TABLE u SET LOGGED;
SELECT relpersistence FROM pg_class WHERE relname = 'u_val';
SELECT pg_relation_size('u_val', 'init') AS init_bytes;
SELECT id FROM u ORDER BY val <-> '[3,4,2]' LIMIT 2;
ALTER TABLE u SET UNLOGGED;
SELECT relpersistence FROM pg_class WHERE relname = 'u_val';
SELECT pg_relation_size('u_val', 'init') / current_setting('block_size')::int AS init_pages;
SELECT id FROM u ORDER BY val <-> '[3,4,2]' LIMIT 2;
REINDEX INDEX u_val;
SELECT COUNT(*) FROM (SELECT id FROM u ORDER BY val <-> '[3,4,2]') s;
CREATE UNLOGGED TABLE ue (val vector(3));
CREATE INDEX ue_val ON ue USING ivfflat (val vector_cosine_ops) WITH (lists = 5);
SELECT pg_relation_size('ue_val') / current_setting('block_size')::int AS main_pages,
       pg_relation_size('ue_val', 'init') / current_setting('block_size')::int AS init_pages;
DROP TABLE u, ue;

-- REINDEX and concurrent builds
CREATE TABLE r (id int, val vector(2));
INSERT INTO r SELECT i, ARRAY[i, (i * 7) % 23]::real[] FROM generate_series(1, 40) i;
CREATE INDEX CONCURRENTLY r_val ON r USING ivfflat (val) WITH (lists = 4);
SELECT indisvalid, indisready FROM pg_index WHERE indexrelid = 'r_val'::regclass;
SET ivfflat.probes = 4;
SELECT id FROM r ORDER BY val <-> '[20.2,11.1]' LIMIT 3;
INSERT INTO r VALUES (41, '[20,11]');
REINDEX INDEX r_val;
SELECT id FROM r ORDER BY val <-> '[20.2,11.1]' LIMIT 3;
REINDEX INDEX CONCURRENTLY r_val;
SELECT id FROM r ORDER BY val <-> '[20.2,11.1]' LIMIT 3;
REINDEX TABLE r;
REINDEX TABLE CONCURRENTLY r;
SELECT COUNT(*) FROM (SELECT id FROM r ORDER BY val <-> '[20.2,11.1]') s;
SELECT relname FROM pg_class WHERE relname LIKE 'r\_val%' ORDER BY relname;
DROP INDEX CONCURRENTLY r_val;
CREATE INDEX CONCURRENTLY r_val_cos ON r USING ivfflat (val vector_cosine_ops) WITH (lists = 3);
SELECT id FROM r ORDER BY val <=> '[0.3,1]' LIMIT 2;
DROP TABLE r;

-- a parallel build gives the same index as a serial one
CREATE TABLE pb (id int, val vector(4)) WITH (autovacuum_enabled = off);
INSERT INTO pb SELECT i, ARRAY[i % 31, i % 37, i % 41, (i * i) % 43]::real[]
  FROM generate_series(1, 20000) i;
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
CREATE INDEX pb_val ON pb USING ivfflat (val) WITH (lists = 10);
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
SELECT reltuples FROM pg_class WHERE relname = 'pb_val';
SET ivfflat.probes = 10;
SELECT id FROM pb ORDER BY val <-> '[7.1,8.2,9.3,10.4]' LIMIT 3;
SELECT COUNT(*) FROM (SELECT id FROM pb ORDER BY val <-> '[7.1,8.2,9.3,10.4]') s;
DROP TABLE pb;

-- VACUUM: one list, so the page layout does not depend on the centers
CREATE TABLE v (id int, val vector(3)) WITH (autovacuum_enabled = off);
INSERT INTO v SELECT i, ARRAY[i % 17, i % 11, i % 5]::real[] FROM generate_series(1, 600) i;
CREATE INDEX v_val ON v USING ivfflat (val) WITH (lists = 1);
CREATE VIEW v_pages AS
  SELECT COUNT(*) AS entry_pages, SUM((p.lower - 24) / 4) AS items
    FROM generate_series(2, pg_relation_size('v_val') / current_setting('block_size')::int - 1) b,
         LATERAL page_header(get_raw_page('v_val', b::int)) p;
SELECT * FROM v_pages;
DELETE FROM v WHERE id % 3 = 0;
SELECT * FROM v_pages;
SELECT id FROM v ORDER BY val <-> '[6.2,5.9,1.3]' LIMIT 3;
VACUUM v;
SELECT * FROM v_pages;
SELECT reltuples FROM pg_class WHERE relname = 'v_val';
SELECT id FROM v ORDER BY val <-> '[6.2,5.9,1.3]' LIMIT 3;
SELECT COUNT(*) FROM (SELECT id FROM v ORDER BY val <-> '[6,6,1]') s;
-- the freed space takes new rows before the list grows
INSERT INTO v SELECT i, ARRAY[i % 17, i % 11, i % 5 + 0.5]::real[] FROM generate_series(601, 900) i;
SELECT * FROM v_pages;
SELECT id FROM v ORDER BY val <-> '[6.2,5.9,1.7]' LIMIT 3;
-- deleting everything leaves empty pages, still chained
DELETE FROM v;
VACUUM v;
SELECT * FROM v_pages;
SELECT id FROM v ORDER BY val <-> '[6,6,1]';
INSERT INTO v VALUES (1, '[1,2,3]');
SELECT * FROM v_pages;
SELECT id FROM v ORDER BY val <-> '[6,6,1]';
DROP VIEW v_pages;
DROP TABLE v;

-- VACUUM with several lists: counts only
CREATE TABLE vl (id int, val vector(2)) WITH (autovacuum_enabled = off);
INSERT INTO vl SELECT i, ARRAY[i % 29, i % 31]::real[] FROM generate_series(1, 500) i;
CREATE INDEX vl_val ON vl USING ivfflat (val) WITH (lists = 5);
DELETE FROM vl WHERE id <= 300;
VACUUM vl;
SELECT reltuples FROM pg_class WHERE relname = 'vl_val';
SET ivfflat.probes = 5;
SELECT COUNT(*) FROM (SELECT id FROM vl ORDER BY val <-> '[1,1]') s;
SELECT id FROM vl ORDER BY val <-> '[10.1,15.2]' LIMIT 2;
VACUUM FULL vl;
SELECT id FROM vl ORDER BY val <-> '[10.1,15.2]' LIMIT 2;
CLUSTER vl USING vl_val;
DROP TABLE vl;

-- TRUNCATE builds the index again over no rows
CREATE TABLE tr (id int, val vector(3));
INSERT INTO tr VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]');
CREATE INDEX tr_val ON tr USING ivfflat (val) WITH (lists = 2);
SET ivfflat.probes = 2;
BEGIN;
TRUNCATE tr;
SELECT id FROM tr ORDER BY val <-> '[1,0,0]';
ROLLBACK;
SELECT id FROM tr ORDER BY val <-> '[1,0.1,0]';
TRUNCATE tr;
SELECT id FROM tr ORDER BY val <-> '[1,0,0]';
SELECT substr(get_raw_page('tr_val', 0), 25, 12) AS meta,
       pg_relation_size('tr_val') / current_setting('block_size')::int AS pages;
INSERT INTO tr VALUES (4, '[2,2,2]'), (5, '[-1,0,3]');
SELECT id FROM tr ORDER BY val <-> '[1,1,1]';
DROP TABLE tr;

-- values stored compressed in the table, query values stored out of line: the build, inserts,
-- updates that insert new index entries, and scans all work on the plain values
CREATE TABLE tb (id int, val vector(2000));
ALTER TABLE tb ALTER COLUMN val SET STORAGE EXTENDED;
INSERT INTO tb SELECT i, array_fill(i, ARRAY[1000]) || array_fill(3 - i, ARRAY[1000])
  FROM generate_series(0, 3) i;
SELECT id, pg_column_size(val) < 1000 AS compressed FROM tb ORDER BY id;
CREATE INDEX tb_l2 ON tb USING ivfflat (val) WITH (lists = 2);
CREATE INDEX tb_cos ON tb USING ivfflat (val vector_cosine_ops) WITH (lists = 1);
CREATE INDEX tb_id ON tb (id);
INSERT INTO tb VALUES (4, (array_fill(4, ARRAY[1000]) || array_fill(-1, ARRAY[1000]))::vector);
CREATE TABLE tq (qid int, q vector(2000));
INSERT INTO tq VALUES
  (1, array_fill(0.3, ARRAY[1000]) || array_fill(2.6, ARRAY[1000])),
  (2, array_fill(1.4, ARRAY[1000]) || array_fill(1.7, ARRAY[1000])),
  (3, array_fill(3.8, ARRAY[1000]) || array_fill(-0.7, ARRAY[1000]));
SELECT qid, pg_column_size(q) > 8000 AS out_of_line FROM tq ORDER BY qid;
SET ivfflat.probes = 2;
SELECT qid, n.id FROM tq
  CROSS JOIN LATERAL (SELECT id FROM tb ORDER BY val <-> tq.q LIMIT 1) n ORDER BY qid;
SELECT qid, n.id FROM tq
  CROSS JOIN LATERAL (SELECT id FROM tb ORDER BY val <=> tq.q LIMIT 1) n ORDER BY qid;
UPDATE tb SET id = id + 10;
SELECT qid, n.ids FROM tq CROSS JOIN LATERAL (
  SELECT array_agg(id) AS ids FROM (SELECT id FROM tb ORDER BY val <-> tq.q LIMIT 2) s) n
  ORDER BY qid;
SELECT qid, n.ids FROM tq CROSS JOIN LATERAL (
  SELECT array_agg(id) AS ids FROM (SELECT id FROM tb ORDER BY val <=> tq.q LIMIT 2) s) n
  ORDER BY qid;
SELECT COUNT(*) FROM (SELECT id FROM tb ORDER BY val <=> (SELECT q FROM tq WHERE qid = 1)) s;
DROP TABLE tb, tq;

-- statistics: one index scan per scan started (rescans included), one tuple read per row
-- returned
CREATE TABLE st (id int, val vector(2));
INSERT INTO st VALUES (1, '[1,1]'), (2, '[2,3]'), (3, '[-1,4]'), (4, '[5,0]'), (5, NULL);
CREATE INDEX st_val ON st USING ivfflat (val) WITH (lists = 2);
SET ivfflat.probes = 2;
SELECT id FROM st ORDER BY val <-> '[2,2]' LIMIT 2;
SELECT q.n, (SELECT id FROM st ORDER BY val <-> q.v LIMIT 1) AS nearest
  FROM (VALUES (1, '[0,5]'::vector), (2, '[6,0]'::vector), (3, '[1,1.5]'::vector)) q(n, v)
  ORDER BY q.n;
SELECT COUNT(*) FROM (SELECT id FROM st ORDER BY val <-> '[0,0]') s;
SELECT pg_stat_force_next_flush();
SELECT idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes
  WHERE indexrelname = 'st_val';
DROP TABLE st;

DROP EXTENSION pageinspect;
