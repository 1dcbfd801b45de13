-- hnsw.build_placement decides which elements share pages when an index is built: graph
-- neighbors together (the default) or pgvector's order. It moves pages, not results. A serial
-- build after setseed() draws the same levels, so both builds below make the same graph.
-- Not in pgvector: expected output is ours.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
RESET client_min_messages;

-- settings and their errors (once the library is loaded; before, any value is a placeholder)
LOAD 'vector';
SHOW hnsw.build_placement;
SET hnsw.build_placement = insertion;
SHOW hnsw.build_placement;
SET hnsw.build_placement = neighbors;
SHOW hnsw.build_placement;
SET hnsw.build_placement = nearby;
RESET hnsw.build_placement;

SELECT setseed(0.25);
-- 48 dimensions: about 20 elements to a page.
CREATE TABLE pl_items AS SELECT i AS id, (SELECT array_agg(round((random() - 0.5)::numeric, 3))
  FROM generate_series(1, 48) WHERE i > 0)::vector(48) AS v FROM generate_series(1, 3000) i;
INSERT INTO pl_items VALUES (3001, NULL), (3002, NULL), (3003, '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]');
INSERT INTO pl_items SELECT 3003 + id, v FROM pl_items WHERE id <= 20;  -- duplicates
CREATE TABLE pl_queries AS SELECT j AS id, (SELECT array_agg(random() - 0.5)
  FROM generate_series(1, 48) WHERE j > 0)::vector(48) AS v FROM generate_series(1, 30) j;

CREATE TABLE pl_runs (placement text, qid int, ids int[], hops bigint, visited bigint,
  blocks bigint);
CREATE FUNCTION pl_run(placement text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q record; found int[]; s record;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  FOR q IN SELECT * FROM pl_queries ORDER BY id LOOP
    found := array(SELECT id FROM pl_items ORDER BY v <-> q.v LIMIT 10);
    SELECT * INTO s FROM hnsw_last_scan_stats();
    INSERT INTO pl_runs VALUES (placement, q.id, found, s.hops, s.visited, s.blocks);
  END LOOP;
END $$;

SET max_parallel_maintenance_workers = 0;
SET hnsw.build_placement = insertion;
SELECT setseed(0.5);
CREATE INDEX pl_idx ON pl_items USING hnsw (v vector_l2_ops) WITH (m = 8);
SELECT pl_run('insertion');
SELECT hnsw_index_check('pl_idx', heapallindexed => true);
DROP INDEX pl_idx;

SET hnsw.build_placement = neighbors;
SELECT setseed(0.5);
CREATE INDEX pl_idx ON pl_items USING hnsw (v vector_l2_ops) WITH (m = 8);
SELECT pl_run('neighbors');
SELECT hnsw_index_check('pl_idx', heapallindexed => true);

-- the same ids in the same order, the same hops and elements visited ...
SELECT count(*) AS queries, count(*) FILTER (WHERE a.ids = b.ids AND a.hops = b.hops
  AND a.visited = b.visited) AS identical
  FROM pl_runs a JOIN pl_runs b USING (qid)
  WHERE a.placement = 'insertion' AND b.placement = 'neighbors';
SELECT count(*) FROM pl_runs WHERE cardinality(ids) <> 10;
-- ... on fewer blocks: each hop finds more of its neighbors on one page
SELECT sum(b.blocks) < sum(a.blocks) AS fewer_blocks
  FROM pl_runs a JOIN pl_runs b USING (qid)
  WHERE a.placement = 'insertion' AND b.placement = 'neighbors';

-- a placed index takes inserts and VACUUM as any other
DELETE FROM pl_items WHERE id % 5 = 0;
INSERT INTO pl_items SELECT id + 10000, v FROM pl_items WHERE id <= 300;
VACUUM pl_items;
SELECT hnsw_index_check('pl_idx', heapallindexed => true);
SELECT count(*) FROM (SELECT id FROM pl_items ORDER BY v <-> (SELECT v FROM pl_queries WHERE id = 1) LIMIT 10) t;

-- setseed() makes a serial build reproducible: the same graph twice
SELECT setseed(0.5);
REINDEX INDEX pl_idx;
DELETE FROM pl_runs;
SELECT pl_run('first');
SELECT setseed(0.5);
REINDEX INDEX pl_idx;
SELECT pl_run('second');
SELECT count(*) FILTER (WHERE a.ids = b.ids AND a.hops = b.hops AND a.visited = b.visited
  AND a.blocks = b.blocks) AS identical
  FROM pl_runs a JOIN pl_runs b USING (qid)
  WHERE a.placement = 'first' AND b.placement = 'second';

DROP TABLE pl_items, pl_queries, pl_runs;
DROP FUNCTION pl_run(text);
RESET max_parallel_maintenance_workers;
RESET hnsw.build_placement;
