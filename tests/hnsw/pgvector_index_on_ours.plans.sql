-- Planner, settings, options and catalog behaviour, run on both servers by
-- pgvector_index_on_ours.sh after the generated queries (output must be identical).
RESET ALL;
SET max_parallel_workers_per_gather = 0;
SET client_min_messages = warning;
SELECT '[1]'::vector;  -- loads the library, so the hnsw.* settings exist

-- Settings: definitions and errors.
SELECT name, setting, unit, category, short_desc, extra_desc, context, vartype, min_val, max_val,
       enumvals, boot_val, reset_val
FROM pg_settings WHERE name LIKE 'hnsw.%'
  -- ours only (read settings; pgvector has no equivalent)
  AND name NOT IN ('hnsw.io_method', 'hnsw.prefetch_lookahead', 'hnsw.build_placement', 'hnsw.beam_width', 'hnsw.vacuum_repair', 'hnsw.rerank_candidates', 'hnsw.descent_ef', 'hnsw.build_regions')
ORDER BY name;
SET hnsw.ef_search = 0;
SET hnsw.ef_search = 1001;
SET hnsw.ef_search = 'abc';
SET hnsw.iterative_scan = 'on';
SET hnsw.max_scan_tuples = 0;
SET hnsw.scan_mem_multiplier = 0.5;
SET hnsw.scan_mem_multiplier = 1001;
SET hnsw.not_a_setting = 1;
SET hnsw.iterative_scan = strict_order;
SHOW hnsw.iterative_scan;
RESET hnsw.iterative_scan;

-- Index options: errors from CREATE INDEX and ALTER INDEX (raised before any build).
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (m = 1);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (m = 101);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (ef_construction = 3);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (ef_construction = 1001);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (m = 'x');
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) WITH (lists = 10);
CREATE INDEX ON v_l2_16 USING hnsw (v);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops, cat);
CREATE UNIQUE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops) INCLUDE (cat);
CREATE INDEX ON v_l2_16 USING hnsw (cat);
ALTER INDEX v_l2_16_v_idx SET (m = 0);
ALTER INDEX v_l2_16_v_idx SET (ef_construction = 5000);
ALTER INDEX v_l2_16_v_idx SET (foo = 1);
BEGIN;
ALTER INDEX v_l2_16_v_idx SET (m = 20, ef_construction = 70);
SELECT reloptions FROM pg_class WHERE relname = 'v_l2_16_v_idx';
ROLLBACK;

-- Capabilities declared by the handler.
SELECT p, pg_indexam_has_property(a.oid, p)
FROM pg_am a, unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude',
                           'can_include']) p
WHERE a.amname = 'hnsw';
SELECT p, pg_index_has_property('v_l2_16_v_idx'::regclass, p)
FROM unnest(ARRAY['clusterable', 'index_scan', 'bitmap_scan', 'backward_scan']) p;
SELECT p, pg_index_column_has_property('v_l2_16_v_idx'::regclass, 1, p)
FROM unnest(ARRAY['asc', 'desc', 'nulls_first', 'nulls_last', 'orderable', 'distance_orderable',
                  'returnable', 'search_array', 'search_nulls']) p;
SELECT opc.opcname, amvalidate(opc.oid)
FROM pg_opclass opc JOIN pg_am a ON a.oid = opc.opcmethod
WHERE a.amname = 'hnsw' ORDER BY 1;
CLUSTER v_l2_16 USING v_l2_16_v_idx;

-- Plans with costs: the planner must choose (or skip) the index as with pgvector.
SET enable_seqscan = on;
SET hnsw.ef_search = 40;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> (SELECT v FROM v_l2_16 WHERE id = 1) LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 1000;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]';
EXPLAIN SELECT id FROM v_l2_16 WHERE cat = 3 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 WHERE id < 100 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <#> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 WHERE v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' < 1;
EXPLAIN SELECT count(*) FROM v_l2_16;
SET hnsw.ef_search = 1;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
SET hnsw.ef_search = 400;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 2000;
SET hnsw.ef_search = 1000;
EXPLAIN SELECT id FROM v_l2_4 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 100;
EXPLAIN SELECT id FROM v_l1_24 ORDER BY v <+> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 100;
RESET hnsw.ef_search;
EXPLAIN SELECT id FROM v_l2_4 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 5;
EXPLAIN SELECT id FROM v_cos_16 ORDER BY v <=> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 5;
EXPLAIN SELECT id FROM h_ip_6 ORDER BY v <#> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 5;
EXPLAIN SELECT id FROM b_jac_8 ORDER BY v <%> repeat('10', 32)::bit(64) LIMIT 5;
EXPLAIN SELECT id FROM s_cos_5 ORDER BY v <=> '{1:1,50:2}/100' LIMIT 5;
EXPLAIN SELECT id FROM v_big_40 ORDER BY v <-> (SELECT v FROM v_big_40 WHERE id = 9) LIMIT 5;
EXPLAIN SELECT q.id, (SELECT t.id FROM v_ip_8 t ORDER BY t.v <#> q.v LIMIT 1) FROM v_ip_8 q WHERE q.cat = 1;
SET random_page_cost = 1.1;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 300;
EXPLAIN SELECT id FROM v_big_40 ORDER BY v <-> (SELECT v FROM v_big_40 WHERE id = 9) LIMIT 100;
RESET random_page_cost;
SET enable_seqscan = off;
EXPLAIN SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]';
EXPLAIN SELECT count(*) FROM v_l2_16;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM v_l2_16 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 3;
RESET enable_seqscan;

-- Empty graphs (no entry point), with and without iterative scans.
SET enable_seqscan = off;
SELECT array(SELECT id FROM v_empty ORDER BY v <-> '[1,2,3]' LIMIT 5);
SELECT array(SELECT id FROM v_gone ORDER BY v <-> '[1,2,3]' LIMIT 5);
SET hnsw.iterative_scan = strict_order;
SELECT array(SELECT id FROM v_empty ORDER BY v <-> '[1,2,3]' LIMIT 5);
SELECT array(SELECT id FROM v_gone WHERE cat = 1 ORDER BY v <-> '[1,2,3]' LIMIT 5);
RESET hnsw.iterative_scan;
RESET enable_seqscan;

-- Scans that end without amendscan: cursors of aborted transactions, errors in the middle of a
-- scan caught by a subtransaction. Nothing may leak or warn; the next scans work as before.
SET enable_seqscan = off;
SET hnsw.iterative_scan = relaxed_order;
BEGIN;
DECLARE c1 CURSOR FOR SELECT id FROM v_l2_16 WHERE cat = 2 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]';
FETCH 3 FROM c1;
ROLLBACK;
BEGIN;
DECLARE c2 CURSOR FOR SELECT id FROM h_cos_12 ORDER BY v <=> '[1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0]';
FETCH 2 FROM c2;
SELECT 1 / 0;
ROLLBACK;
-- Settings changed between fetches apply to the rest of the scan.
BEGIN;
SET LOCAL hnsw.ef_search = 10;
SET LOCAL hnsw.iterative_scan = relaxed_order;
DECLARE c4 CURSOR FOR SELECT id FROM v_l2_16 WHERE cat = 4 ORDER BY v <-> '[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]';
FETCH 5 FROM c4;
SET LOCAL hnsw.ef_search = 3;
FETCH 5 FROM c4;
SET LOCAL hnsw.iterative_scan = strict_order;
FETCH 5 FROM c4;
SET LOCAL hnsw.max_scan_tuples = 10;
FETCH 5 FROM c4;
SET LOCAL hnsw.iterative_scan = off;
FETCH 5 FROM c4;
COMMIT;
BEGIN;
DECLARE c3 CURSOR FOR SELECT id FROM s_l1_16 ORDER BY v <+> '{1:1,2:2}/100';
FETCH 4 FROM c3;
FETCH 4 FROM c3;
COMMIT;
DO $$
BEGIN
  PERFORM array(SELECT id FROM v_l2_16 ORDER BY v <-> '[1,2]' LIMIT 3);
EXCEPTION WHEN data_exception THEN
  RAISE WARNING 'caught: %', SQLERRM;
END $$;
SELECT array(SELECT id FROM v_l2_16 WHERE cat = 2 ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 5);
RESET hnsw.iterative_scan;
RESET enable_seqscan;

-- Index scans counted in the statistics (reset at the start of the run).
SELECT pg_stat_force_next_flush();
SELECT relname, indexrelname, idx_scan, idx_tup_read FROM pg_stat_user_indexes ORDER BY 2;
