-- Cold-list read-ahead (ivfflat.io_method) changes nothing but time: the same ids in the same
-- order, the same pages read. EXPLAIN (ANALYZE, IVFFLAT) (PostgreSQL 18) and
-- ivfflat_last_scan_stats() say what a scan read. Not in pgvector: expected output is ours.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
RESET client_min_messages;

-- the setting and its errors (once the library is loaded)
LOAD 'vector';
SHOW ivfflat.io_method;
SET ivfflat.io_method = off;
SHOW ivfflat.io_method;
SET ivfflat.io_method = read_stream;
SET ivfflat.io_method = sometimes;
RESET ivfflat.io_method;

-- no ivfflat scan yet in this session
SELECT * FROM ivfflat_last_scan_stats();

SELECT setseed(0.25);
CREATE TABLE fio_items (id int, v vector(32));
INSERT INTO fio_items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 32) WHERE i > 0)
  FROM generate_series(1, 4000) i;
CREATE TABLE fio_queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 32)
  WHERE j > 0)::vector(32) AS v FROM generate_series(1, 30) j;
CREATE INDEX fio_idx ON fio_items USING ivfflat (v vector_l2_ops) WITH (lists = 20);

-- Evicts the index where the server can (PostgreSQL 18), so that the scans read.
CREATE FUNCTION fio_evict() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regproc('pg_buffercache_evict_relation') IS NOT NULL THEN
    EXECUTE 'SELECT pg_buffercache_evict_relation(''fio_idx'')';
  END IF;
END $$;

CREATE TABLE fio_runs (cfg text, qid int, ids int[], lists bigint, pages bigint, hits bigint,
  reads bigint, heap_prefetches bigint);
CREATE FUNCTION fio_run(cfg text, method text, probes int, iterative text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE q record; found int[];
BEGIN
  PERFORM set_config('ivfflat.io_method', method, true);
  PERFORM set_config('ivfflat.probes', probes::text, true);
  PERFORM set_config('ivfflat.iterative_scan', iterative, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM fio_evict();
  FOR q IN SELECT * FROM fio_queries ORDER BY id LOOP
    found := array(SELECT id FROM fio_items ORDER BY v <-> q.v LIMIT 5);
    INSERT INTO fio_runs SELECT cfg, q.id, found, s.lists, s.pages, s.hits, s.reads,
      s.heap_prefetches FROM ivfflat_last_scan_stats() s;
  END LOOP;
END $$;

SELECT fio_run('off', 'off', 3, 'off');
SELECT fio_run('prefetch', 'prefetch', 3, 'off');
SELECT fio_run('off all lists', 'off', 20, 'off');
SELECT fio_run('prefetch all lists', 'prefetch', 20, 'off');
SELECT fio_run('off iterative', 'off', 1, 'relaxed_order');
SELECT fio_run('prefetch iterative', 'prefetch', 1, 'relaxed_order');

-- each prefetch run against the off run of the same probes: the same ids in the same order,
-- the same lists and pages, each page a hit or a read
SELECT r.cfg, count(*) AS queries,
       count(*) FILTER (WHERE r.ids IS DISTINCT FROM o.ids) AS different_ids,
       count(*) FILTER (WHERE (r.lists, r.pages) IS DISTINCT FROM (o.lists, o.pages)) AS different_reads,
       count(*) FILTER (WHERE r.hits + r.reads <> r.pages) AS unbalanced
  FROM fio_runs r JOIN fio_runs o ON o.qid = r.qid AND o.cfg = replace(r.cfg, 'prefetch', 'off')
 WHERE r.cfg LIKE 'prefetch%'
 GROUP BY r.cfg ORDER BY r.cfg;
-- lists probed is the probes setting; reading every list reads every list page each time
SELECT cfg, min(lists) AS min_lists, max(lists) AS max_lists, bool_and(pages > 0) AS read_pages,
       cfg NOT LIKE '%all lists' OR count(DISTINCT pages) = 1 AS same_pages_when_all_read
  FROM fio_runs WHERE cfg NOT LIKE '%iterative' GROUP BY cfg ORDER BY cfg;
-- an iterative scan probes more lists as it runs out of rows (5 rows from one probe, at most)
SELECT bool_and(lists >= 1) AS probed FROM fio_runs WHERE cfg LIKE '%iterative';
-- plain reads never ask for table blocks ahead
SELECT sum(heap_prefetches) AS heap_prefetches_off FROM fio_runs WHERE cfg LIKE 'off%';

-- the counters add up over the rescans of a scan (a correlated subquery rescans its index scan)
SET enable_seqscan = off;
SET ivfflat.probes = 3;
SELECT sum((SELECT i.id FROM fio_items i ORDER BY i.v <-> q.v LIMIT 1)) > 0 AS found
  FROM fio_queries q WHERE q.id <= 3;
SELECT s.lists AS lists, s.pages = r.pages AS pages_add_up, s.pages = s.hits + s.reads AS balanced
  FROM ivfflat_last_scan_stats() s,
       (SELECT sum(pages) AS pages FROM fio_runs WHERE cfg = 'off' AND qid <= 3) r;

-- EXPLAIN (ANALYZE, IVFFLAT) with the numbers masked (PostgreSQL 18 only)
CREATE FUNCTION fio_explain(options text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (' || options || ', COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
      SELECT id FROM fio_items ORDER BY v <-> array_fill(0.1, ARRAY[32])::vector LIMIT 3' LOOP
    IF line ~ 'IVFFlat:' THEN
      line := regexp_replace(line, '=[0-9.]+', '=#', 'g');
    END IF;
    RETURN NEXT line;
  END LOOP;
END $$;
SELECT * FROM fio_explain('ANALYZE, IVFFLAT');
SELECT * FROM fio_explain('IVFFLAT');
SELECT * FROM fio_explain('ANALYZE, IVFFLAT false');
SELECT * FROM fio_explain('ANALYZE, HNSW');
CREATE FUNCTION fio_json() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, IVFFLAT, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
           SELECT id FROM fio_items ORDER BY v <-> array_fill(0.1, ARRAY[32])::vector LIMIT 3'
    INTO plan;
  RETURN plan -> 0 -> 'Plan' -> 'Plans' -> 0 -> 'IVFFlat';
END $$;
SELECT array_agg(k ORDER BY k) AS keys FROM jsonb_object_keys(fio_json()) k;
SELECT (j ->> 'Lists Probed')::int = 3 AS probed_setting,
       (j ->> 'Pages')::bigint = s.pages AND (j ->> 'Lists Probed')::bigint = s.lists AS same_as_function
  FROM fio_json() j, ivfflat_last_scan_stats() s;
RESET ivfflat.probes;
RESET enable_seqscan;

DROP FUNCTION fio_json();
DROP FUNCTION fio_explain(text);
DROP TABLE fio_runs;
DROP FUNCTION fio_run(text, text, int, text);
DROP FUNCTION fio_evict();
DROP TABLE fio_queries;
DROP TABLE fio_items;
