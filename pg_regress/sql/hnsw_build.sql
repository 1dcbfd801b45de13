-- Building an hnsw index larger than maintenance_work_mem: the build starts in memory and
-- finishes on disk once the graph stops fitting. The NOTICE that says so is hidden: the number of
-- tuples it reports depends on the random levels drawn for the elements. The result is checked
-- through what does not depend on those levels: every row becomes one element tuple and one
-- neighbor tuple, and searches return as many rows as asked for.

CREATE EXTENSION pageinspect;
SET enable_seqscan = off;
SET max_parallel_maintenance_workers = 0;

-- 2000 distinct rows (the three residues determine i)
CREATE TABLE t (id int, val vector(3));
INSERT INTO t SELECT i, ARRAY[i % 101, (i * 7) % 103, (i * 13) % 107]::real[]::vector
  FROM generate_series(1, 2000) i;

-- in memory
CREATE INDEX t_mem ON t USING hnsw (val vector_l2_ops);
SELECT get_byte(get_raw_page('t_mem', b), lp_off) AS tuple_type, COUNT(*)
  FROM generate_series(1, pg_relation_size('t_mem') / current_setting('block_size')::int - 1) b,
       heap_page_items(get_raw_page('t_mem', b))
  GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[50.5,50.5,50.5]' LIMIT 10) s;
DROP INDEX t_mem;

-- in memory, then on disk
SET maintenance_work_mem = '1MB';
SET client_min_messages = warning;
CREATE INDEX t_disk ON t USING hnsw (val vector_l2_ops);
RESET client_min_messages;
RESET maintenance_work_mem;
SELECT get_byte(get_raw_page('t_disk', b), lp_off) AS tuple_type, COUNT(*)
  FROM generate_series(1, pg_relation_size('t_disk') / current_setting('block_size')::int - 1) b,
       heap_page_items(get_raw_page('t_disk', b))
  GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[50.5,50.5,50.5]' LIMIT 10) s;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[3,21,39]' LIMIT 40) s;
INSERT INTO t VALUES (2001, '[50.5,50.5,50.5]');
SELECT id FROM t ORDER BY val <-> '[50.5,50.5,50.5]' LIMIT 1;

-- the options are recorded the same way on both paths
SET maintenance_work_mem = '1MB';
SET client_min_messages = warning;
CREATE INDEX t_disk2 ON t USING hnsw (val vector_l2_ops) WITH (m = 4, ef_construction = 8);
RESET client_min_messages;
RESET maintenance_work_mem;
SELECT substr(get_raw_page('t_disk2', 0), 25, 16) AS meta_head;
DROP TABLE t;

DROP EXTENSION pageinspect;
