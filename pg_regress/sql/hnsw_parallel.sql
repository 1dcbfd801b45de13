-- Parallel builds: the table's parallel_workers give the build workers, which insert into one
-- graph in shared memory with the leader. What a reader sees does not depend on how the work
-- was shared: every row becomes one element tuple and one neighbor tuple, searches find what
-- they are asked for, and a graph that no longer fits goes on in the pages with pgvector's
-- NOTICE (at once when maintenance_work_mem leaves the graph less than pgvector's 1 MB margin).

CREATE EXTENSION pageinspect;
SET enable_seqscan = off;
SET max_parallel_maintenance_workers = 2;

-- 2000 distinct rows (the three residues determine i)
CREATE TABLE t (id int, val vector(3));
INSERT INTO t SELECT i, ARRAY[i % 101, (i * 7) % 103, (i * 13) % 107]::real[]::vector
  FROM generate_series(1, 2000) i;
ALTER TABLE t SET (parallel_workers = 2);

-- in shared memory
CREATE INDEX t_mem ON t USING hnsw (val vector_l2_ops);
SELECT get_byte(get_raw_page('t_mem', b), lp_off) AS tuple_type, COUNT(*)
  FROM generate_series(1, pg_relation_size('t_mem') / current_setting('block_size')::int - 1) b,
       heap_page_items(get_raw_page('t_mem', b))
  GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[50.5,50.5,50.5]' LIMIT 10) s;
SELECT val FROM t ORDER BY val <-> '[2.1,2.1,2.1]' LIMIT 3;
DROP INDEX t_mem;

-- straight to the pages: 3073kB leaves the graph 1 kB
SET maintenance_work_mem = '3073kB';
CREATE INDEX t_disk ON t USING hnsw (val vector_l2_ops);
RESET maintenance_work_mem;
SELECT get_byte(get_raw_page('t_disk', b), lp_off) AS tuple_type, COUNT(*)
  FROM generate_series(1, pg_relation_size('t_disk') / current_setting('block_size')::int - 1) b,
       heap_page_items(get_raw_page('t_disk', b))
  GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <-> '[50.5,50.5,50.5]' LIMIT 10) s;
SELECT val FROM t ORDER BY val <-> '[2.1,2.1,2.1]' LIMIT 3;
DROP INDEX t_disk;

-- every operator class family: halfvec with cosine, sparsevec, bit
CREATE TABLE h (id int, val halfvec(3), sp sparsevec(5), b bit(8));
INSERT INTO h SELECT i, ARRAY[1 + i % 7, 1 + i % 11, 1 + i % 13]::real[]::halfvec,
    ('{1:' || (1 + i % 7) || ',4:' || (1 + i % 11) || '}/5')::sparsevec,
    (i % 256)::bit(8)
  FROM generate_series(1, 3000) i;
ALTER TABLE h SET (parallel_workers = 2);
CREATE INDEX ON h USING hnsw (val halfvec_cosine_ops);
CREATE INDEX ON h USING hnsw (sp sparsevec_l2_ops);
CREATE INDEX ON h USING hnsw (b bit_hamming_ops);
SELECT COUNT(*) FROM (SELECT id FROM h ORDER BY val <=> '[1,2,3]' LIMIT 10) s;
SELECT sp FROM h ORDER BY sp <-> '{1:3,4:5}/5' LIMIT 1;
SELECT b FROM h ORDER BY b <~> '10101010' LIMIT 1;

-- CREATE INDEX CONCURRENTLY builds in parallel too
CREATE INDEX CONCURRENTLY t_conc ON t USING hnsw (val vector_l2_ops);
SELECT indisvalid FROM pg_index WHERE indexrelid = 't_conc'::regclass;
SELECT val FROM t ORDER BY val <-> '[2.1,2.1,2.1]' LIMIT 3;

DROP TABLE t, h;
DROP EXTENSION pageinspect;
