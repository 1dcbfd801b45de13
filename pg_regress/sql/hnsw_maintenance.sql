-- The life of an hnsw index: empty and all-NULL tables, unlogged and temporary tables (the init
-- fork), VACUUM after deletes (including deleting every row, which replaces the entry point),
-- inserts after VACUUM, aborted transactions, REINDEX and REINDEX CONCURRENTLY, CREATE / DROP INDEX
-- CONCURRENTLY, VACUUM FULL, CLUSTER, partitioned tables, and how duplicates are stored. Tables
-- stay below 2 * m rows, where hnsw returns exact results.

CREATE EXTENSION pageinspect;
SET enable_seqscan = off;

-- empty table: the index is a meta page and one empty element page
CREATE TABLE t (id int, val vector(3));
CREATE INDEX t_idx ON t USING hnsw (val vector_l2_ops);
SELECT pg_relation_size('t_idx') / current_setting('block_size')::int AS pages;
SELECT id FROM t ORDER BY val <-> '[1,1,1]';
SELECT substr(get_raw_page('t_idx', 0), 25, 28) AS meta;
INSERT INTO t VALUES (1, '[1,1,1]');
SELECT id FROM t ORDER BY val <-> '[1,1,1]';
INSERT INTO t VALUES (2, '[2,2,2]'), (3, '[0,0,1]');
SELECT id FROM t ORDER BY val <-> '[1.9,1.8,1.7]';
DROP TABLE t;

-- only NULLs: nothing is indexed, later rows are
CREATE TABLE t (id int, val vector(3));
INSERT INTO t VALUES (1, NULL), (2, NULL);
CREATE INDEX t_idx ON t USING hnsw (val vector_l2_ops);
SELECT pg_relation_size('t_idx') / current_setting('block_size')::int AS pages;
SELECT id FROM t ORDER BY val <-> '[1,1,1]';
INSERT INTO t VALUES (3, '[1,2,3]'), (4, NULL);
SELECT id FROM t ORDER BY val <-> '[1,1,1]';
DROP TABLE t;

-- unlogged table: the init fork holds an empty index
CREATE UNLOGGED TABLE u (id int, val vector(3));
INSERT INTO u VALUES (1, '[1,2,3]'), (2, '[3,2,1]'), (3, '[1,1,2.5]');
CREATE INDEX u_idx ON u USING hnsw (val vector_cosine_ops);
SELECT relpersistence FROM pg_class WHERE relname = 'u_idx';
SELECT pg_relation_size('u_idx', 'init') / current_setting('block_size')::int AS init_pages;
SELECT id FROM u ORDER BY val <=> '[1,1,3]';
INSERT INTO u VALUES (4, '[1,1,3.1]');
SELECT id FROM u ORDER BY val <=> '[1,1,3]';
DROP TABLE u;

-- unlogged index on an empty table
CREATE UNLOGGED TABLE u (val vector(3));
CREATE INDEX u_idx ON u USING hnsw (val vector_l2_ops);
SELECT pg_relation_size('u_idx', 'init') / current_setting('block_size')::int AS init_pages;
SELECT pg_relation_size('u_idx', 'main') / current_setting('block_size')::int AS main_pages;
DROP TABLE u;

-- temporary table
CREATE TEMP TABLE tmp (id int, val vector(3));
INSERT INTO tmp VALUES (1, '[1,2,3]'), (2, '[3,2,1]');
CREATE INDEX ON tmp USING hnsw (val vector_l1_ops);
INSERT INTO tmp VALUES (3, '[2,2,2.5]');
SELECT id FROM tmp ORDER BY val <+> '[3,2,0]';
DROP TABLE tmp;

-- VACUUM removes deleted rows from the graph and keeps the rest searchable
CREATE TABLE t (id int, val vector(3));
INSERT INTO t SELECT i, ARRAY[i, (i * 7) % 11, (i * i) % 13]::real[]::vector FROM generate_series(1, 30) i;
CREATE INDEX t_idx ON t USING hnsw (val vector_l2_ops);
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[14.2,3.3,5.1]' LIMIT 10) s;
DELETE FROM t WHERE id % 3 = 0;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[14.2,3.3,5.1]' LIMIT 10) s;
VACUUM t;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[14.2,3.3,5.1]' LIMIT 10) s;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[14.2,3.3,5.1]') s;

-- new rows after VACUUM
INSERT INTO t SELECT i, ARRAY[i - 30, (i * 5) % 11, (i * i) % 7]::real[]::vector FROM generate_series(31, 35) i;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[2.2,3.3,1.1]' LIMIT 10) s;
SET enable_indexscan = off;
RESET enable_seqscan;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[2.2,3.3,1.1]' LIMIT 10) s;
SET enable_seqscan = off;
RESET enable_indexscan;

-- updates of the indexed column leave dead versions behind until VACUUM
UPDATE t SET val = '[100,100,100]' WHERE id = 1;
UPDATE t SET val = '[101,100,100]' WHERE id = 1;
SELECT id FROM t ORDER BY val <-> '[100.9,100,100]' LIMIT 2;
VACUUM t;
SELECT id FROM t ORDER BY val <-> '[100.9,100,100]' LIMIT 2;

-- deleting every row, the entry point included; the index takes new rows afterwards
DELETE FROM t;
VACUUM t;
SELECT id FROM t ORDER BY val <-> '[14.2,3.3,5.1]';
INSERT INTO t VALUES (1, '[1,2,3]'), (2, '[4,5,6]');
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]';
VACUUM t;
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]';

-- rows of aborted transactions are dead to every scan and removed by VACUUM
BEGIN;
INSERT INTO t VALUES (3, '[3.3,4.4,5.5]');
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]' LIMIT 1;
ROLLBACK;
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]';
VACUUM t;
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]';

-- VACUUM variants
VACUUM (INDEX_CLEANUP off) t;
VACUUM (INDEX_CLEANUP on) t;
VACUUM ANALYZE t;
VACUUM FULL t;
SELECT id FROM t ORDER BY val <-> '[3.3,4.4,5.5]';

-- CLUSTER needs an access method that supports clustering
CLUSTER t USING t_idx;
DROP TABLE t;

-- REINDEX, plain and concurrent, of an index with deletes and inserts behind it
CREATE TABLE t (id int, val vector(3));
INSERT INTO t SELECT i, ARRAY[i, (i * 7) % 11, (i * i) % 13]::real[]::vector FROM generate_series(1, 20) i;
CREATE INDEX t_idx ON t USING hnsw (val vector_l2_ops) WITH (m = 8, ef_construction = 20);
DELETE FROM t WHERE id > 15;
INSERT INTO t VALUES (21, '[5.5,5.5,5.5]');
REINDEX INDEX t_idx;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[5.2,5.6,5.9]' LIMIT 5) s;
REINDEX TABLE t;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[5.2,5.6,5.9]' LIMIT 5) s;
REINDEX INDEX CONCURRENTLY t_idx;
REINDEX TABLE CONCURRENTLY t;
SELECT c.relname, c.reloptions, i.indisvalid, i.indisready
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 't'::regclass;
SELECT substr(get_raw_page('t_idx', 0), 25, 16) AS meta_head;
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <-> '[5.2,5.6,5.9]' LIMIT 5) s;

-- CREATE and DROP INDEX CONCURRENTLY
DROP INDEX t_idx;
CREATE INDEX CONCURRENTLY t_cidx ON t USING hnsw (val vector_ip_ops);
SELECT indisvalid, indisready FROM pg_index WHERE indexrelid = 't_cidx'::regclass;
INSERT INTO t VALUES (22, '[20,20,20]');
SELECT array_agg(id) FROM (SELECT id FROM t ORDER BY val <#> '[1,0.5,0.25]' LIMIT 5) s;
DROP INDEX CONCURRENTLY t_cidx;
CREATE INDEX CONCURRENTLY t_cidx ON t USING hnsw (val vector_l2_ops) WITH (m = 1);
CREATE INDEX CONCURRENTLY t_cidx ON t USING hnsw (val vector_l2_ops) WITH (m = 50);
SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = 't'::regclass;
DROP INDEX t_cidx;
-- CREATE INDEX in a transaction that rolls back
BEGIN;
CREATE INDEX t_rolled_back ON t USING hnsw (val vector_l2_ops);
ROLLBACK;
SELECT COUNT(*) FROM pg_class WHERE relname = 't_rolled_back';
DROP TABLE t;

-- duplicates: the build folds equal values into one element with several heap TIDs (at most
-- ten); elements and neighbor tuples can be counted on the first graph page
CREATE TABLE d (id int, val vector(3));
INSERT INTO d SELECT i, '[1,1,1]' FROM generate_series(1, 4) i;
INSERT INTO d VALUES (5, '[2,2,2]'), (6, '[3,3,3]');
CREATE INDEX d_idx ON d USING hnsw (val vector_l2_ops);
SELECT get_byte(get_raw_page('d_idx', 1), lp_off) AS tuple_type, COUNT(*)
  FROM heap_page_items(get_raw_page('d_idx', 1)) GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM d WHERE val = '[1,1,1]';
SET hnsw.ef_search = 1;
SELECT COUNT(*) FROM (SELECT id FROM d ORDER BY val <-> '[1,1,1]') s;
RESET hnsw.ef_search;
DROP TABLE d;

CREATE TABLE d (id int, val vector(3));
INSERT INTO d SELECT i, '[1,1,1]' FROM generate_series(1, 25) i;
CREATE INDEX d_idx ON d USING hnsw (val vector_l2_ops);
SELECT get_byte(get_raw_page('d_idx', 1), lp_off) AS tuple_type, COUNT(*)
  FROM heap_page_items(get_raw_page('d_idx', 1)) GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM d ORDER BY val <-> '[1,1,1]') s;
DELETE FROM d WHERE id <= 12;
VACUUM d;
SELECT COUNT(*) FROM (SELECT id FROM d ORDER BY val <-> '[1,1,1]') s;
SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM d ORDER BY val <-> '[1,1,1]') s;
DROP TABLE d;

-- partitioned table: one hnsw index per partition, merged by the executor
CREATE TABLE parted (id int, val vector(2)) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (1) TO (11);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (11) TO (21);
INSERT INTO parted SELECT i, ARRAY[i, 20 - i * 1.5]::real[]::vector FROM generate_series(1, 20) i;
CREATE INDEX parted_idx ON parted USING hnsw (val vector_l2_ops);
SELECT c.relname, am.amname FROM pg_inherits inh
  JOIN pg_class c ON c.oid = inh.inhrelid JOIN pg_am am ON am.oid = c.relam
  WHERE inh.inhparent = 'parted_idx'::regclass ORDER BY c.relname;
SELECT id FROM parted ORDER BY val <-> '[10.2,3.9]' LIMIT 5;
SELECT id FROM parted WHERE id > 10 ORDER BY val <-> '[10.2,3.9]' LIMIT 3;
CREATE TABLE parted_3 PARTITION OF parted FOR VALUES FROM (21) TO (31);
INSERT INTO parted VALUES (21, '[10.3,3.8]');
SELECT id FROM parted ORDER BY val <-> '[10.2,3.9]' LIMIT 3;
DROP TABLE parted;

DROP EXTENSION pageinspect;
