-- EXPLAIN (ANALYZE, HNSW) prints what each hnsw index scan's walk did (PostgreSQL 18; older
-- servers have no extension EXPLAIN options and use hnsw_last_scan_stats()). Not in pgvector:
-- expected output is ours. Graph levels are random, so the counts are masked and checked by
-- their relations.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
RESET client_min_messages;
LOAD 'vector';
CREATE TABLE ex_items (id int, v vector(16));
INSERT INTO ex_items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 16) WHERE i > 0)
  FROM generate_series(1, 2000) i;
CREATE INDEX ex_idx ON ex_items USING hnsw (v vector_l2_ops);
SET enable_seqscan = off;

-- EXPLAIN with the numbers of the HNSW line masked.
CREATE FUNCTION ex_explain(options text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (' || options || ', COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
      SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3' LOOP
    IF line ~ 'HNSW:' THEN
      line := regexp_replace(line, '=[0-9.]+', '=#', 'g');
    END IF;
    RETURN NEXT line;
  END LOOP;
END $$;

SELECT * FROM ex_explain('ANALYZE, HNSW');
-- without ANALYZE nothing ran: no counters
SELECT * FROM ex_explain('HNSW');
SELECT * FROM ex_explain('ANALYZE, HNSW false');

-- The index was just built, so every block is a hit; the counts agree with each other and
-- with hnsw_last_scan_stats().
CREATE FUNCTION ex_json() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, HNSW, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
           SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3'
    INTO plan;
  RETURN plan -> 0 -> 'Plan' -> 'Plans' -> 0 -> 'HNSW';
END $$;
SELECT array_agg(k ORDER BY k) AS keys FROM jsonb_object_keys(ex_json()) k;
SELECT (h ->> 'Hops')::int > 0 AS walked,
       (h ->> 'Visited')::int >= (h ->> 'Blocks')::int AS visited_all_blocks,
       (h ->> 'Hits')::int = (h ->> 'Blocks')::int AS all_hits,
       (h ->> 'Reads')::int = 0 AS no_reads,
       (h ->> 'Prefetched Reads')::int = 0 AS nothing_prefetched,
       (h ->> 'Heap Prefetches')::int = 0 AND s.heap_prefetches = 0 AS no_table_prefetch,
       (h ->> 'Hops')::bigint = s.hops AND (h ->> 'Blocks')::bigint = s.blocks AS same_as_function
  FROM ex_json() h, hnsw_last_scan_stats() s;

-- A quantized index adds its reranks: candidates reranked (hnsw.rerank_candidates at a time,
-- 16 by default, until the rows are certain; at most the walk's queue, which for 4-bit codes
-- is 45 at ef_search 40), the vector blocks they were read from and how many of those missed
-- shared buffers. The rows are random, so how many batches a scan needs is checked, not
-- counted.
DROP INDEX ex_idx;
CREATE INDEX ex_idx ON ex_items USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
SELECT * FROM ex_explain('ANALYZE, HNSW');
SELECT (h ->> 'Reranked')::int IN (16, 32, 45) AS reranked_in_batches,
       (h ->> 'Rerank Blocks')::int BETWEEN 1 AND 45 AS rerank_blocks,
       (h ->> 'Rerank Reads')::int = 0 AS rerank_reads,
       (h ->> 'Visited')::int > 40 AS codes_compared
  FROM ex_json() h;
SET hnsw.rerank_candidates = 10;
SELECT (h ->> 'Reranked')::int IN (10, 20, 30, 40, 45) AS reranked_in_batches FROM ex_json() h;
-- 0 reranks the whole queue: a walk over 4-bit codes keeps 9/8 of ef_search (counted with
-- hnsw_last_scan_stats(), which every server version has).
SET hnsw.rerank_candidates = 0;
SELECT count(*) FROM (SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3) s;
SELECT reranked AS reranked_all FROM hnsw_last_scan_stats();
SET hnsw.ef_search = 100;
SELECT count(*) FROM (SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3) s;
SELECT reranked AS reranked_all FROM hnsw_last_scan_stats();
RESET hnsw.ef_search;
RESET hnsw.rerank_candidates;

-- hnsw.descent_ef: the queue of the search on the layers above 0. The default, -1, is a
-- quarter of hnsw.ef_search on a quantized index (10 at 40) and pgvector's greedy descent (1)
-- on pgvector's format, whose scans then do what pgvector's do. Counted by the elements a
-- scan visits, upper layers included.
SHOW hnsw.descent_ef;
SET hnsw.descent_ef = 1001;
SET hnsw.descent_ef = -2;
CREATE FUNCTION ex_visited(descent int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM set_config('hnsw.descent_ef', descent::text, true);
  PERFORM count(*) FROM (SELECT id FROM ex_items ORDER BY v <-> array_fill(0.1, ARRAY[16])::vector LIMIT 3) s;
  SELECT visited INTO n FROM hnsw_last_scan_stats();
  PERFORM set_config('hnsw.descent_ef', '-1', true);
  RETURN n;
END $$;
SELECT ex_visited(-1) = ex_visited(10) AS quarter_of_ef_search,
       ex_visited(1) < ex_visited(10) AS wider_than_greedy,
       ex_visited(0) = ex_visited(1) AS zero_is_greedy
  FROM ex_items LIMIT 1;
DROP INDEX ex_idx;
CREATE INDEX ex_idx ON ex_items USING hnsw (v vector_l2_ops);
SELECT ex_visited(-1) = ex_visited(1) AS greedy_on_pgvector_format,
       ex_visited(1) < ex_visited(10) AS wider_when_set
  FROM ex_items LIMIT 1;
DROP FUNCTION ex_visited(int);

DROP FUNCTION ex_json();
DROP FUNCTION ex_explain(text);
DROP TABLE ex_items;
