-- Overlapped reads (hnsw.io_method, hnsw.prefetch_lookahead) change nothing but time: the same
-- ids in the same order, the same blocks asked for. Not in pgvector: expected output is ours.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
RESET client_min_messages;

-- settings and their errors (once the library is loaded; before, any value is a placeholder)
LOAD 'vector';
SET hnsw.io_method = prefetch;
SHOW hnsw.io_method;
SET hnsw.io_method = off;
SHOW hnsw.io_method;
SET hnsw.io_method = read_stream;
SHOW hnsw.io_method;
SET hnsw.io_method = sometimes;
SHOW hnsw.prefetch_lookahead;
SET hnsw.prefetch_lookahead = 0;
SET hnsw.prefetch_lookahead = 64;
SET hnsw.prefetch_lookahead = 65;
SET hnsw.prefetch_lookahead = -1;
RESET hnsw.prefetch_lookahead;
RESET hnsw.io_method;
SHOW hnsw.beam_width;
SET hnsw.beam_width = 16;
SET hnsw.beam_width = 17;
SET hnsw.beam_width = 0;
RESET hnsw.beam_width;

-- no scan yet in this session
SELECT * FROM hnsw_last_scan_stats();

SELECT setseed(0.5);
CREATE TABLE io_items (id int, v vector(32));
INSERT INTO io_items SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 32) WHERE i > 0)
  FROM generate_series(1, 3000) i;
CREATE TABLE io_queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 32)
  WHERE j > 0)::vector(32) AS v FROM generate_series(1, 40) j;
CREATE INDEX ON io_items USING hnsw (v vector_l2_ops);

-- Evicts the index from shared buffers where the server can (PostgreSQL 18), so that the scans
-- read; elsewhere the scans find it in shared buffers, and the results must not differ either.
CREATE FUNCTION io_evict() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regproc('pg_buffercache_evict_relation') IS NOT NULL THEN
    EXECUTE 'SELECT pg_buffercache_evict_relation(''io_items_v_idx'')';
  END IF;
END $$;

CREATE TABLE io_runs (cfg text, qid int, ids int[], hops bigint, visited bigint, blocks bigint,
  hits bigint, reads bigint, prefetched bigint, heap_prefetches bigint);
CREATE FUNCTION io_run(cfg text, method text, lookahead int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q record; found int[];
BEGIN
  PERFORM set_config('hnsw.io_method', method, true);
  PERFORM set_config('hnsw.prefetch_lookahead', lookahead::text, true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM io_evict();
  FOR q IN SELECT * FROM io_queries ORDER BY id LOOP
    found := array(SELECT id FROM io_items ORDER BY v <-> q.v LIMIT 5);
    INSERT INTO io_runs SELECT cfg, q.id, found, s.hops, s.visited, s.blocks, s.hits, s.reads,
      s.prefetched, s.heap_prefetches FROM hnsw_last_scan_stats() s;
  END LOOP;
END $$;

SELECT io_run('off', 'off', 0);
SELECT io_run('prefetch', 'prefetch', 0);
SELECT io_run('prefetch+lookahead', 'prefetch', 4);
SELECT io_run('read_stream', 'read_stream', 0);
SELECT io_run('read_stream+lookahead', 'read_stream', 2);

-- every setting: the same ids in the same order, the same hops and blocks, each block a hit
-- or a read
SELECT r.cfg, count(*) AS queries,
       count(*) FILTER (WHERE r.ids IS DISTINCT FROM o.ids) AS different_ids,
       count(*) FILTER (WHERE (r.hops, r.visited, r.blocks) IS DISTINCT FROM (o.hops, o.visited, o.blocks)) AS different_walks,
       count(*) FILTER (WHERE r.hits + r.reads <> r.blocks) AS unbalanced
  FROM io_runs r JOIN io_runs o ON o.qid = r.qid AND o.cfg = 'off'
 GROUP BY r.cfg ORDER BY r.cfg;
-- plain reads never count as prefetched, nor ask for table blocks ahead; the walk did something
SELECT sum(prefetched) AS prefetched_off, sum(heap_prefetches) AS heap_prefetches_off, bool_and(hops > 0 AND visited >= hops AND blocks > 0) AS walked
  FROM io_runs WHERE cfg = 'off';

-- the counters add up over the rescans of a scan (a correlated subquery rescans its index scan)
SET enable_seqscan = off;
SELECT sum((SELECT i.id FROM io_items i ORDER BY i.v <-> q.v LIMIT 1)) > 0 AS found
  FROM io_queries q WHERE q.id <= 3;
SELECT s.hops = r.hops AS hops_add_up, s.blocks = r.blocks AS blocks_add_up,
       s.blocks = s.hits + s.reads AS balanced,
       num_nulls(s.reranked, s.rerank_blocks, s.rerank_reads) = 3 AS no_rerank
  FROM hnsw_last_scan_stats() s,
       (SELECT sum(hops) AS hops, sum(blocks) AS blocks FROM io_runs WHERE cfg = 'off' AND qid <= 3) r;
RESET enable_seqscan;

-- hnsw.beam_width (opt-in, results may differ from pgvector's): every query still returns its
-- rows nearest first, finds as many of the exact nearest rows, and expands more candidates
SET enable_seqscan = off;
CREATE TABLE io_exact AS SELECT q.id AS qid, array(SELECT i.id FROM io_items i
  ORDER BY i.v <-> q.v LIMIT 5) AS ids FROM io_queries q;
SELECT count(*) FILTER (WHERE ids IS NULL) AS no_exact FROM io_exact;
CREATE FUNCTION io_beam_run(beam int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q record; found int[]; dists float8[];
BEGIN
  PERFORM set_config('hnsw.beam_width', beam::text, true);
  PERFORM io_evict();
  FOR q IN SELECT * FROM io_queries ORDER BY id LOOP
    SELECT array_agg(id ORDER BY n), array_agg(d ORDER BY n) INTO found, dists
      FROM (SELECT id, v <-> q.v AS d, row_number() OVER () AS n FROM
             (SELECT id, v FROM io_items ORDER BY v <-> q.v LIMIT 5) s) t;
    INSERT INTO io_runs SELECT 'beam ' || beam, q.id, found, s.hops, s.visited, s.blocks,
      s.hits, s.reads, s.prefetched, s.heap_prefetches FROM hnsw_last_scan_stats() s
      WHERE dists = (SELECT array_agg(x ORDER BY x) FROM unnest(dists) x);
  END LOOP;
END $$;
SELECT io_beam_run(1);
SELECT io_beam_run(4);
SELECT io_beam_run(16);
SELECT r.cfg, count(*) AS queries_in_order,
       count(*) FILTER (WHERE r.ids IS DISTINCT FROM o.ids) AS different_ids,
       sum((SELECT count(*) FROM unnest(r.ids) x WHERE x = ANY (e.ids))) AS exact_found,
       sum((SELECT count(*) FROM unnest(o.ids) x WHERE x = ANY (e.ids))) AS exact_found_default,
       CASE sign(sum(r.hops) - sum(o.hops)) WHEN 0 THEN 'same' WHEN 1 THEN 'more' ELSE 'fewer' END
         AS hops,
       count(*) FILTER (WHERE r.hits + r.reads <> r.blocks) AS unbalanced
  FROM io_runs r JOIN io_runs o ON o.qid = r.qid AND o.cfg = 'off'
  JOIN io_exact e ON e.qid = r.qid
 WHERE r.cfg LIKE 'beam %' GROUP BY r.cfg ORDER BY r.cfg;
-- an iterative scan with a beam keeps returning rows until enough match the filter, in order
SET hnsw.beam_width = 4;
SET hnsw.iterative_scan = strict_order;
SELECT count(*) AS rows, bool_and(d >= prev) AS in_order FROM (
  SELECT d, lag(d, 1, 0) OVER (ORDER BY n) AS prev FROM (
    SELECT i.v <-> q.v AS d, row_number() OVER () AS n FROM io_queries q,
      LATERAL (SELECT v FROM io_items i WHERE i.id % 50 = 0 ORDER BY i.v <-> q.v LIMIT 20) i
     WHERE q.id = 1) s) t;
RESET hnsw.iterative_scan;
RESET hnsw.beam_width;
RESET enable_seqscan;
DROP FUNCTION io_beam_run(int);
DROP TABLE io_exact;

DROP TABLE io_runs;
DROP FUNCTION io_run(text, text, int);
DROP FUNCTION io_evict();
DROP TABLE io_queries;
DROP TABLE io_items;
