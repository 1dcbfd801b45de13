-- Quantized hnsw indexes: WITH (quantization = 'rabitq1' | 'rabitq2' | 'rabitq4' | 'rabitq8')
-- walks RaBitQ codes and reranks the candidates by exact distance from full vectors kept on
-- vector pages. Not in pgvector: expected output is ours. Answers are exact here because the
-- tables are no larger than hnsw.ef_search (every element is a candidate and every candidate
-- is reranked), or they are compared with a sequential scan; builds after setseed() are
-- repeatable (levels and the rotation come from random()).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
RESET client_min_messages;
CREATE EXTENSION pageinspect;
SET enable_seqscan = off;

-- The option: its values, case, errors, and what ALTER INDEX does with it.
CREATE TABLE q (id int, v vector(3));
INSERT INTO q VALUES (1, '[1,2,3]'), (2, '[4,5,6]'), (3, '[7,8,9]'), (4, NULL), (5, '[0,0,0]'),
  (6, '[1,2,3]'), (7, '[-1,0.5,2]');
CREATE INDEX q_none ON q USING hnsw (v vector_l2_ops) WITH (quantization = 'none');
CREATE INDEX q_1 ON q USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq1');
CREATE INDEX q_2 ON q USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq2');
CREATE INDEX q_4 ON q USING hnsw (v vector_l2_ops) WITH (quantization = 'RaBitQ4');
CREATE INDEX q_8 ON q USING hnsw (v vector_l2_ops) WITH (quantization = rabitq8, m = 4, ef_construction = 8);
CREATE INDEX q_bad ON q USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq3');
CREATE INDEX q_bad ON q USING hnsw (v vector_l2_ops) WITH (quantization = '');
CREATE INDEX q_bad ON q USING hnsw (v vector_l2_ops) WITH (quantization = 4);
CREATE INDEX q_bad ON q USING hnsw (v vector_l2_ops) WITH (quantization);
CREATE INDEX q_bad ON q USING ivfflat (v vector_l2_ops) WITH (quantization = 'rabitq1');
SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'q\_%' AND relkind = 'i' ORDER BY relname;

-- The metapage says which format an index has (pgvector's magic number, or ours).
SELECT c.relname, encode(substring(get_raw_page(c.relname, 0) FROM 25 FOR 4), 'hex') AS magic
  FROM pg_class c WHERE c.relname LIKE 'q\_%' AND c.relkind = 'i' ORDER BY c.relname;

-- Every width answers exactly, with exact distances; NULL is not indexed, equal rows share an
-- element.
CREATE FUNCTION q_answer(idx text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  others text[];
  r text;
BEGIN
  SELECT array_agg(indexrelid::regclass::text) INTO others FROM pg_index
    WHERE indrelid = (SELECT indrelid FROM pg_index WHERE indexrelid = idx::regclass)
      AND indexrelid <> idx::regclass;
  -- only the index under test may answer
  EXECUTE format('UPDATE pg_index SET indisvalid = false WHERE indexrelid = ANY(%L::regclass[])', others);
  EXECUTE query INTO r;
  EXECUTE format('UPDATE pg_index SET indisvalid = true WHERE indexrelid = ANY(%L::regclass[])', others);
  RETURN r;
END $$;
-- (equal distances listed by id: an element's rows come in no set order)
SELECT idx, q_answer(idx, $$SELECT string_agg(id || ':' || round((v <-> '[1,2,2]')::numeric, 4), ' '
    ORDER BY v <-> '[1,2,2]', id) FROM (SELECT id, v FROM q ORDER BY v <-> '[1,2,2]' LIMIT 10) s$$)
  FROM unnest(ARRAY['q_none', 'q_1', 'q_2', 'q_4', 'q_8']) idx;

-- ALTER INDEX changes the option; the index keeps its format until REINDEX.
ALTER INDEX q_8 SET (quantization = 'none');
SELECT encode(substring(get_raw_page('q_8', 0) FROM 25 FOR 4), 'hex') AS magic;
REINDEX INDEX q_8;
SELECT encode(substring(get_raw_page('q_8', 0) FROM 25 FOR 4), 'hex') AS magic;
ALTER INDEX q_8 RESET (quantization);
ALTER INDEX q_none SET (quantization = 'rabitq4');
REINDEX INDEX q_none;
SELECT encode(substring(get_raw_page('q_none', 0) FROM 25 FOR 4), 'hex') AS magic;
SELECT q_answer('q_none', $$SELECT string_agg(id::text, ' ') FROM (SELECT id FROM q ORDER BY v <-> '[7,8,8]' LIMIT 3) s$$);
DROP TABLE q CASCADE;

-- Operator classes: l2, inner product and cosine of vector and halfvec, against a sequential
-- scan.
CREATE TABLE o (id int, v vector(8), h halfvec(8));
INSERT INTO o SELECT i, ARRAY[sin(i), cos(i), sin(2 * i), cos(3 * i), sin(5 * i), 0.3, cos(7 * i), i / 40.0],
    ARRAY[sin(i), cos(i), sin(2 * i), cos(3 * i), sin(5 * i), 0.3, cos(7 * i), i / 40.0]
  FROM generate_series(1, 36) i;
CREATE FUNCTION o_same(col text, op text, opclass text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  q text := '[0.5,-0.2,0.1,0.9,-0.3,0.3,0.2,0.4]';
  by_index text;
  by_scan text;
BEGIN
  EXECUTE format('CREATE INDEX o_idx ON o USING hnsw (%I %s) WITH (quantization = %L)', col, opclass, 'rabitq1');
  SET LOCAL enable_seqscan = off;
  EXECUTE format('SELECT string_agg(id::text, %L) FROM (SELECT id FROM o ORDER BY %I %s %L LIMIT 36) s', ' ', col, op, q) INTO by_index;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_seqscan = on;
  EXECUTE format('SELECT string_agg(id::text, %L) FROM (SELECT id FROM o ORDER BY %I %s %L LIMIT 36) s', ' ', col, op, q) INTO by_scan;
  DROP INDEX o_idx;
  RETURN CASE WHEN by_index = by_scan THEN 'same: ' || left(by_index, 20) ELSE 'index ' || by_index || ' scan ' || by_scan END;
END $$;
SELECT o_same('v', '<->', 'vector_l2_ops');
SELECT o_same('v', '<#>', 'vector_ip_ops');
SELECT o_same('v', '<=>', 'vector_cosine_ops');
SELECT o_same('h', '<->', 'halfvec_l2_ops');
SELECT o_same('h', '<#>', 'halfvec_ip_ops');
SELECT o_same('h', '<=>', 'halfvec_cosine_ops');

-- Operator classes the codes do not serve.
CREATE INDEX ON o USING hnsw (v vector_l1_ops) WITH (quantization = 'rabitq4');
CREATE INDEX ON o USING hnsw (h halfvec_l1_ops) WITH (quantization = 'rabitq1');
CREATE TABLE ob (b bit(16), s sparsevec(8));
CREATE INDEX ON ob USING hnsw (b bit_hamming_ops) WITH (quantization = 'rabitq1');
CREATE INDEX ON ob USING hnsw (b bit_jaccard_ops) WITH (quantization = 'rabitq1');
CREATE INDEX ON ob USING hnsw (s sparsevec_l2_ops) WITH (quantization = 'rabitq1');
DROP TABLE ob;

-- A query of other dimensions, and a NULL query.
CREATE INDEX o_q ON o USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
SELECT id FROM o ORDER BY v <-> '[1,2,3]' LIMIT 1;
SELECT count(*) FROM (SELECT id FROM o ORDER BY v <-> NULL LIMIT 100) s;

-- Cosine: zero vectors are not indexed; the rest come back by exact distance.
CREATE TABLE z (id int, v vector(4));
CREATE INDEX z_idx ON z USING hnsw (v vector_cosine_ops) WITH (quantization = 'rabitq2');
SELECT count(*) FROM (SELECT id FROM z ORDER BY v <=> '[1,1,1,1]' LIMIT 5) s;
INSERT INTO z VALUES (1, '[0,0,0,0]'), (2, '[1,1,1,1]'), (3, '[2,2,2,2]'), (4, '[1,0,0,0]'), (5, NULL),
  (6, '[0,1,1,1]'), (7, '[-1,-1,-1,-1]');
SELECT id, round((v <=> '[1,1,1,1]')::numeric, 4) FROM z ORDER BY v <=> '[1,1,1,1]' LIMIT 10;
-- The last scan's counters include its rerank (NULL for an index that is not quantized).
SELECT hops > 0 AS walked, reranked > 0 AS reranked, rerank_blocks > 0 AS read_vectors,
       rerank_reads BETWEEN 0 AND rerank_blocks AS reads_counted
  FROM hnsw_last_scan_stats();
SELECT hnsw_index_parent_check('z_idx', true);
DROP TABLE z;

-- The planner's estimate: a quantized search reads its graph and ef_search vectors, a smaller
-- share of its index than a search of pgvector's format reads of its own.
CREATE TABLE pc (id int, v vector(256));
INSERT INTO pc SELECT i, (SELECT array_agg(random()) FROM generate_series(1, 256) WHERE i > 0)::vector
  FROM generate_series(1, 3000) i;
ANALYZE pc;
CREATE FUNCTION pc_startup() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) SELECT id FROM pc ORDER BY v <-> array_fill(0.5::real, ARRAY[256])::vector LIMIT 5'
    INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Startup Cost')::float8;
END $$;
CREATE INDEX pc_idx ON pc USING hnsw (v vector_l2_ops);
SELECT pc_startup() AS plain_cost \gset
DROP INDEX pc_idx;
CREATE INDEX pc_idx ON pc USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
SELECT pc_startup() < :plain_cost AS quantized_costs_less,
       pc_startup() > 0.5 * :plain_cost AS not_free;
DROP TABLE pc;
DROP FUNCTION pc_startup();

-- Iterative scans with filters, relaxed and strict, and the rerank breadth.
SELECT setseed(0.5);
CREATE TABLE it (id int, v vector(16));
INSERT INTO it SELECT i, (SELECT array_agg(sin(i * j + j)) FROM generate_series(1, 16) j)
  FROM generate_series(1, 1500) i;
CREATE INDEX it_idx ON it USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
CREATE FUNCTION it_rows(lim int) RETURNS TABLE (n bigint, in_order bool, exact bool) LANGUAGE sql AS $$
  WITH found AS (
    SELECT id, v <-> '[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]' AS d,
           row_number() OVER () AS rn
      FROM (SELECT * FROM it WHERE id % 10 = 3
            ORDER BY v <-> '[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]' LIMIT lim) s
  )
  SELECT count(*), bool_and(d >= coalesce(prev, d)), bool_and(d = exact_d)
    FROM (SELECT d, lag(d) OVER (ORDER BY rn) AS prev,
                 (SELECT v <-> '[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]' FROM it WHERE it.id = found.id) AS exact_d
            FROM found) s
$$;
SET hnsw.iterative_scan = off;
SELECT * FROM it_rows(20);
SET hnsw.iterative_scan = relaxed_order;
SELECT n, exact FROM it_rows(20);
SET hnsw.iterative_scan = strict_order;
SELECT * FROM it_rows(20);
SET hnsw.rerank_candidates = 5;
SELECT * FROM it_rows(20);
SET hnsw.max_scan_tuples = 50;
SELECT n <= 20 FROM it_rows(20);
RESET hnsw.max_scan_tuples;
RESET hnsw.rerank_candidates;
RESET hnsw.iterative_scan;
SET hnsw.rerank_candidates = 1001;
SET hnsw.rerank_candidates = -1;
SHOW hnsw.rerank_candidates;
SELECT name, setting, min_val, max_val, boot_val FROM pg_settings WHERE name = 'hnsw.rerank_candidates';

-- Inserts, deletes, VACUUM (freed vector slots are taken by later inserts), REINDEX.
DELETE FROM it WHERE id % 3 = 0;
VACUUM it;
SELECT hnsw_index_parent_check('it_idx', true);
SELECT pg_relation_size('it_idx') AS size_before \gset
INSERT INTO it SELECT i, (SELECT array_agg(cos(i * j)) FROM generate_series(1, 16) j)
  FROM generate_series(2001, 2300) i;
SELECT pg_relation_size('it_idx') - :size_before AS grown;
SELECT hnsw_index_parent_check('it_idx', true);
SELECT * FROM it_rows(10);
REINDEX INDEX it_idx;
SELECT hnsw_index_parent_check('it_idx', true);
SELECT * FROM it_rows(10);
DROP TABLE it;

-- Unlogged tables, and a graph past maintenance_work_mem (the build goes on in the pages).
SELECT setseed(0.25);
CREATE UNLOGGED TABLE u (id int, v halfvec(64));
INSERT INTO u SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 64) WHERE i > 0)
  FROM generate_series(1, 3000) i;
SET maintenance_work_mem = '1MB';
CREATE INDEX u_idx ON u USING hnsw (v halfvec_l2_ops) WITH (quantization = 'rabitq1');
RESET maintenance_work_mem;
SELECT hnsw_index_parent_check('u_idx', true);
SET hnsw.ef_search = 100;
SELECT id FROM u ORDER BY v <-> (SELECT v FROM u WHERE id = 1234) LIMIT 3;
DROP TABLE u;

-- Regions: codes are taken around the nearest of one centroid per 2,000 rows (k-means on a
-- sample), kept where they halve the rows' squared distance to their centroid. 9,000 rows in
-- 4 clusters: 4 regions, on centroid pages (format 2). The verifier's
-- NOTICE of unreachable elements depends on the build's random levels: not shown.
SET client_min_messages = warning;
SELECT setseed(0.5);
CREATE TABLE rg (id int, v vector(8));
INSERT INTO rg SELECT i, (SELECT array_agg((i % 4 = j - 1)::int * 4 + random() * 0.5)
  FROM generate_series(1, 8) j) FROM generate_series(1, 9000) i;
CREATE TABLE rg_queries AS SELECT id, v FROM rg WHERE id % 1000 = 7;
CREATE FUNCTION rg_exact_matches() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM rg_queries q
  WHERE array(SELECT id FROM rg ORDER BY v <-> q.v, id LIMIT 10)
      = array(SELECT id FROM rg ORDER BY v <-> q.v LIMIT 10) $$;
CREATE INDEX rg_idx ON rg USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq2');
SELECT get_byte(p, 56) AS format, get_byte(p, 96) + 256 * get_byte(p, 97) AS regions
  FROM get_raw_page('rg_idx', 0) p;
SELECT hnsw_index_parent_check('rg_idx', true);
SET hnsw.ef_search = 100;
SET enable_seqscan = off;
SELECT rg_exact_matches() AS queries_answered_exactly, count(*) AS queries FROM rg_queries;
-- Inserts take the nearest region; a parallel build makes the same regions' worth.
INSERT INTO rg SELECT i, (SELECT array_agg((i % 4 = j - 1)::int * 4 + random() * 0.5)
  FROM generate_series(1, 8) j) FROM generate_series(9001, 10000) i;
SELECT hnsw_index_parent_check('rg_idx', true);
SELECT rg_exact_matches() AS queries_answered_exactly;
DROP INDEX rg_idx;
ALTER TABLE rg SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
CREATE INDEX rg_idx ON rg USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
RESET max_parallel_maintenance_workers;
SELECT get_byte(p, 96) + 256 * get_byte(p, 97) AS regions FROM get_raw_page('rg_idx', 0) p;
SELECT hnsw_index_parent_check('rg_idx', true);
SELECT rg_exact_matches() AS queries_answered_exactly;
-- hnsw.build_regions: how many (never more than the rows); 0 is one per 2,000 rows.
DROP INDEX rg_idx;
SET hnsw.build_regions = 8;
CREATE INDEX rg_idx ON rg USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
SELECT get_byte(p, 96) + 256 * get_byte(p, 97) AS regions FROM get_raw_page('rg_idx', 0) p;
SELECT hnsw_index_parent_check('rg_idx', true);
SELECT rg_exact_matches() AS queries_answered_exactly;
SET hnsw.build_regions = 257;
SET hnsw.build_regions = -1;
SET hnsw.build_regions = 100;
CREATE TABLE rg_few (v vector(8));
INSERT INTO rg_few SELECT '[1,2,3,4,5,6,7,8]' FROM generate_series(1, 5);
INSERT INTO rg_few SELECT '[0,0,0,0,0,0,0,1]' FROM generate_series(1, 55);
CREATE INDEX rg_few_idx ON rg_few USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
RESET hnsw.build_regions;
SELECT get_byte(p, 96) + 256 * get_byte(p, 97) AS regions FROM get_raw_page('rg_few_idx', 0) p;
SELECT hnsw_index_parent_check('rg_few_idx', true);
SELECT v, count(*) FROM (SELECT v FROM rg_few ORDER BY v <-> '[1,2,3,4,5,6,7,7]' LIMIT 7) s GROUP BY v ORDER BY v;
-- A cloud without clusters keeps one centroid: its 2 regions would not halve the distances.
CREATE TABLE rg_cloud AS SELECT i AS id,
  (SELECT array_agg(random()) FROM generate_series(1, 8) WHERE i > 0)::vector(8) AS v
  FROM generate_series(1, 5000) i;
CREATE INDEX rg_cloud_idx ON rg_cloud USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq2');
SELECT get_byte(p, 56) AS format, get_byte(p, 96) + 256 * get_byte(p, 97) AS regions
  FROM get_raw_page('rg_cloud_idx', 0) p;
SELECT hnsw_index_parent_check('rg_cloud_idx', true);
-- Values beyond half precision's range: the stored centroids are held within it.
CREATE TABLE rg_big AS SELECT i AS id, ARRAY[i * 1e5, -i * 1e5, 1]::vector(3) AS v
  FROM generate_series(1, 100) i;
CREATE INDEX rg_big_idx ON rg_big USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq4');
SELECT hnsw_index_parent_check('rg_big_idx', true);
SELECT id FROM rg_big ORDER BY v <-> '[5010000,-5010000,1]' LIMIT 3;
RESET client_min_messages;
RESET enable_seqscan;
RESET hnsw.ef_search;
DROP TABLE rg, rg_queries, rg_few, rg_cloud, rg_big;
DROP FUNCTION rg_exact_matches();

DROP TABLE o CASCADE;
DROP EXTENSION pageinspect;
