-- Index options of hnsw (m 2..100, ef_construction 4..1000, ef_construction >= 2 * m), malformed
-- and unknown options, ALTER INDEX SET/RESET followed by REINDEX, the options as the meta page
-- records them, and the scan GUCs with their ranges and errors.

CREATE EXTENSION pageinspect;

CREATE TABLE t (id int, val vector(3));
INSERT INTO t VALUES (1, '[1,2,3]'), (2, '[4,5,6]'), (3, '[7,8,9]');

-- m
CREATE INDEX t_m0 ON t USING hnsw (val vector_l2_ops) WITH (m = 0);
CREATE INDEX t_m1 ON t USING hnsw (val vector_l2_ops) WITH (m = 1);
CREATE INDEX t_mneg ON t USING hnsw (val vector_l2_ops) WITH (m = -16);
CREATE INDEX t_m2 ON t USING hnsw (val vector_l2_ops) WITH (m = 2);
CREATE INDEX t_m100 ON t USING hnsw (val vector_l2_ops) WITH (m = 100, ef_construction = 200);
CREATE INDEX t_m101 ON t USING hnsw (val vector_l2_ops) WITH (m = 101);

-- ef_construction
CREATE INDEX t_ef3 ON t USING hnsw (val vector_l2_ops) WITH (ef_construction = 3);
CREATE INDEX t_ef4 ON t USING hnsw (val vector_l2_ops) WITH (m = 2, ef_construction = 4);
CREATE INDEX t_ef1000 ON t USING hnsw (val vector_l2_ops) WITH (ef_construction = 1000);
CREATE INDEX t_ef1001 ON t USING hnsw (val vector_l2_ops) WITH (ef_construction = 1001);

-- ef_construction must be at least 2 * m (checked at build time, after the range checks)
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 16, ef_construction = 31);
CREATE INDEX t_m16_ef32 ON t USING hnsw (val vector_l2_ops) WITH (m = 16, ef_construction = 32);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 33);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (ef_construction = 31);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 100);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 101, ef_construction = 4);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 3, ef_construction = 5);
CREATE INDEX t_m32 ON t USING hnsw (val vector_l2_ops) WITH (m = 32);

-- the 2 * m rule also applies to an empty table
CREATE TABLE empty (val vector(3));
CREATE INDEX ON empty USING hnsw (val vector_l2_ops) WITH (m = 40, ef_construction = 79);
DROP TABLE empty;

-- malformed values
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 'abc');
-- a fractional value is rounded, as for any integer reloption
CREATE INDEX t_frac ON t USING hnsw (val vector_l2_ops) WITH (m = 1.5);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = '');
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 99999999999);
CREATE INDEX t_space ON t USING hnsw (val vector_l2_ops) WITH (ef_construction = '64 ');
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m);
CREATE INDEX t_str ON t USING hnsw (val vector_l2_ops) WITH (m = '8', ef_construction = ' 20');

-- unknown and repeated options
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (lists = 100);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (ef_search = 10);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH ("M" = 8);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (m = 4, m = 8);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (fillfactor = 50);
CREATE INDEX t_bad ON t USING hnsw (val vector_l2_ops) WITH (hnsw.m = 8);
CREATE INDEX t_upper ON t USING hnsw (val vector_l2_ops) WITH (M = 8, EF_CONSTRUCTION = 16);

SELECT relname, reloptions FROM pg_class WHERE relname LIKE 't\_%' AND relkind = 'i' ORDER BY relname;

-- every index built above answers exactly on three rows
SET enable_seqscan = off;
SELECT id FROM t ORDER BY val <-> '[6,6,6]';
RESET enable_seqscan;

-- the meta page records the options: magic, version, dimensions, m, ef_construction
-- (little-endian), then the special space ends with the page id
SELECT c.relname,
       substr(get_raw_page(c.relname, 0), 25, 16) AS meta_head,
       substr(get_raw_page(c.relname, 0), 8185, 8) AS special
  FROM pg_class c WHERE c.relname LIKE 't\_%' AND c.relkind = 'i' ORDER BY c.relname;
SELECT lower, upper, special, pagesize, version FROM page_header(get_raw_page('t_m2', 0));

-- ALTER INDEX validates ranges at once; the 2 * m rule waits for the next build
ALTER INDEX t_m2 SET (m = 101);
ALTER INDEX t_m2 SET (ef_construction = 1001);
ALTER INDEX t_m2 SET (lists = 4);
ALTER INDEX t_m2 SET (m = 40);
SELECT reloptions FROM pg_class WHERE relname = 't_m2';
SELECT substr(get_raw_page('t_m2', 0), 25, 16) AS meta_head;
REINDEX INDEX t_m2;
ALTER INDEX t_m2 SET (ef_construction = 80);
REINDEX INDEX t_m2;
SELECT reloptions FROM pg_class WHERE relname = 't_m2';
SELECT substr(get_raw_page('t_m2', 0), 25, 16) AS meta_head;
ALTER INDEX t_m2 RESET (m, ef_construction);
REINDEX INDEX t_m2;
SELECT reloptions FROM pg_class WHERE relname = 't_m2';
SELECT substr(get_raw_page('t_m2', 0), 25, 16) AS meta_head;

DROP TABLE t;

-- scan GUCs: defaults, ranges and errors
SHOW hnsw.ef_search;
SET hnsw.ef_search = 0;
SET hnsw.ef_search = 1001;
SET hnsw.ef_search = -1;
SET hnsw.ef_search = 'forty';
SET hnsw.ef_search = 1;
SHOW hnsw.ef_search;
SET hnsw.ef_search = 1000;
SHOW hnsw.ef_search;
SET hnsw.ef_search = 10.4;
SHOW hnsw.ef_search;
RESET hnsw.ef_search;
SHOW hnsw.ef_search;

SHOW hnsw.iterative_scan;
SET hnsw.iterative_scan = on;
SET hnsw.iterative_scan = true;
SET hnsw.iterative_scan = 1;
SET hnsw.iterative_scan = relaxed;
SET hnsw.iterative_scan = relaxed_order;
SHOW hnsw.iterative_scan;
SET hnsw.iterative_scan = 'STRICT_ORDER';
SHOW hnsw.iterative_scan;
SET hnsw.iterative_scan = off;
SHOW hnsw.iterative_scan;
RESET hnsw.iterative_scan;

SHOW hnsw.max_scan_tuples;
SET hnsw.max_scan_tuples = 0;
SET hnsw.max_scan_tuples = -1;
SET hnsw.max_scan_tuples = 2147483648;
SET hnsw.max_scan_tuples = 1;
SHOW hnsw.max_scan_tuples;
SET hnsw.max_scan_tuples = 2147483647;
SHOW hnsw.max_scan_tuples;
RESET hnsw.max_scan_tuples;

SHOW hnsw.scan_mem_multiplier;
SET hnsw.scan_mem_multiplier = 0;
SET hnsw.scan_mem_multiplier = 0.99;
SET hnsw.scan_mem_multiplier = 1001;
SET hnsw.scan_mem_multiplier = 'lots';
SET hnsw.scan_mem_multiplier = 2.5;
SHOW hnsw.scan_mem_multiplier;
SET hnsw.scan_mem_multiplier = 1000;
SHOW hnsw.scan_mem_multiplier;
RESET hnsw.scan_mem_multiplier;

-- the hnsw prefix is reserved for the extension
SET hnsw.ef_searc = 10;
SET hnsw.m = 16;

-- GUC values are transaction-scoped with SET LOCAL
BEGIN;
SET LOCAL hnsw.ef_search = 7;
SHOW hnsw.ef_search;
COMMIT;
SHOW hnsw.ef_search;

SELECT name, setting, unit, category, context, vartype, source,
       min_val, max_val, enumvals, boot_val, reset_val
  FROM pg_settings WHERE name LIKE 'hnsw.%'
   AND name NOT IN ('hnsw.io_method', 'hnsw.prefetch_lookahead', 'hnsw.build_placement', 'hnsw.beam_width', 'hnsw.vacuum_repair', 'hnsw.rerank_candidates', 'hnsw.descent_ef', 'hnsw.build_regions') -- ours: see hnsw_io, hnsw_placement, hnsw_vacuum_repair, hnsw_quantized, hnsw_io_explain
 ORDER BY name;

DROP EXTENSION pageinspect;
