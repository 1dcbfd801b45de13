-- EXPLAIN (ANALYZE, HNSW) prints what each hnsw index scan's walk did (PostgreSQL 18; older
-- servers have no extension EXPLAIN options and use hnsw_last_scan_stats()). Not in pgvector:
-- expected output is ours.
LOAD 'vector';
SELECT setseed(0.25);
CREATE TABLE ex_items (id int, v vector(16));
INSERT INTO ex_items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 16) WHERE i > 0)
  FROM generate_series(1, 2000) i;
CREATE INDEX ex_idx ON ex_items USING hnsw (v vector_l2_ops);
SET enable_seqscan = off;

-- The index was just built, so every block is a hit (reads=0, nothing prefetched).
EXPLAIN (ANALYZE, HNSW, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_items ORDER BY v <-> (SELECT v FROM ex_items WHERE id = 1) LIMIT 3;

-- Without ANALYZE nothing ran: no counters.
EXPLAIN (HNSW, COSTS OFF)
SELECT id FROM ex_items ORDER BY v <-> (SELECT v FROM ex_items WHERE id = 1) LIMIT 3;

-- HNSW off, and the counters in a structured format.
EXPLAIN (ANALYZE, HNSW false, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_items ORDER BY v <-> (SELECT v FROM ex_items WHERE id = 1) LIMIT 3;
CREATE FUNCTION ex_json() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, HNSW, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
           SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3'
    INTO plan;
  RETURN plan;
END $$;
SELECT jsonb_pretty(ex_json() -> 0 -> 'Plan' -> 'Plans' -> 0 -> 'HNSW');

DROP FUNCTION ex_json();
DROP TABLE ex_items;
