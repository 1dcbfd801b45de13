-- Index option and settings of ivfflat: lists (1..32768, 100 by default) with malformed, unknown
-- and repeated options; what the meta page records (magic, version, dimensions, lists) and the
-- page count that follows from lists; ALTER INDEX SET/RESET, which takes effect at the next
-- REINDEX; the scan settings ivfflat.probes, ivfflat.iterative_scan and ivfflat.max_probes with
-- their ranges and errors, SET LOCAL and pg_settings; the reserved ivfflat prefix, before and
-- after the library is loaded. Page counts hold because no list outgrows its first page.

-- a fresh session: the library is not loaded yet, so ivfflat.* names are placeholders
\c
SET ivfflat.probes = 3;
SET ivfflat.max_probes = 0;
SET ivfflat.unknown_setting = 'x';
SHOW ivfflat.unknown_setting;
-- loading the library adopts the valid values and drops the rest
SELECT '[1,2,3]'::vector;
SHOW ivfflat.probes;
SHOW ivfflat.max_probes;
SHOW ivfflat.unknown_setting;
-- afterwards the prefix is reserved
SET ivfflat.unknown_setting = 'x';
SET ivfflat.lists = 10;
SET ivfflat.probe = 10;
SHOW ivfflat.probe;
RESET ivfflat.probes;
RESET ivfflat.max_probes;

CREATE EXTENSION pageinspect;

CREATE TABLE t (id int, val vector(3));
INSERT INTO t SELECT i, ARRAY[i, (i * i) % 7, 10 - 2 * i]::real[] FROM generate_series(1, 8) i;

-- lists: range
CREATE INDEX t_l0 ON t USING ivfflat (val) WITH (lists = 0);
CREATE INDEX t_lneg ON t USING ivfflat (val) WITH (lists = -3);
CREATE INDEX t_l32769 ON t USING ivfflat (val) WITH (lists = 32769);
CREATE INDEX t_l1 ON t USING ivfflat (val) WITH (lists = 1);
CREATE INDEX t_l8 ON t USING ivfflat (val) WITH (lists = 8);
-- more lists than rows: built, with a notice
CREATE INDEX t_l9 ON t USING ivfflat (val) WITH (lists = 9);
-- the default is 100
CREATE INDEX t_default ON t USING ivfflat (val);
-- the largest value passes the option check; k-means on it needs more memory than allowed
CREATE INDEX t_l32768 ON t USING ivfflat (val) WITH (lists = 32768);

-- lists: malformed values
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = 'abc');
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = '');
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = 99999999999);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = '2x');
-- a fractional value is rounded, as for any integer option; strings and spaces are accepted
CREATE INDEX t_frac ON t USING ivfflat (val) WITH (lists = 3.4);
CREATE INDEX t_str ON t USING ivfflat (val) WITH (lists = '5');
CREATE INDEX t_space ON t USING ivfflat (val) WITH (lists = ' 6 ');
CREATE INDEX t_upper ON t USING ivfflat (val) WITH (LISTS = 2);

-- unknown and repeated options
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (m = 16);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (probes = 2);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH ("Lists" = 2);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = 2, lists = 3);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (fillfactor = 70);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (ivfflat.lists = 2);
CREATE INDEX t_bad ON t USING ivfflat (val) WITH (lists = 2, ef_construction = 40);

SELECT relname, reloptions FROM pg_class WHERE relname LIKE 't\_%' AND relkind = 'i'
  ORDER BY relname;

-- the meta page: magic number, version, dimensions and lists (little-endian), then the special
-- space (next block, unused, page id); one meta page, the list pages, one page per list
SELECT c.relname,
       substr(get_raw_page(c.relname, 0), 25, 12) AS meta,
       substr(get_raw_page(c.relname, 0), 8185, 8) AS special,
       pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
  FROM pg_class c WHERE c.relname LIKE 't\_%' AND c.relkind = 'i' ORDER BY c.relname;
SELECT lower, upper, special, pagesize, version FROM page_header(get_raw_page('t_l8', 0));

-- every index answers exactly when every list is probed
SET enable_seqscan = off;
SET ivfflat.probes = 100;
SELECT id FROM t ORDER BY val <-> '[4.2,1.9,1.1]';
RESET ivfflat.probes;
RESET enable_seqscan;
DROP INDEX t_l8, t_l9, t_frac, t_str, t_space, t_upper, t_default;

-- more lists than one page of list items holds: the list pages form a chain
CREATE TABLE wide (val vector(3));
CREATE INDEX wide_val ON wide USING ivfflat (val) WITH (lists = 500);
SELECT substr(get_raw_page('wide_val', 0), 25, 12) AS meta,
       pg_relation_size('wide_val') / current_setting('block_size')::int AS pages;
SELECT substr(get_raw_page('wide_val', 1), 8185, 8) AS first_list_page_special;
DROP TABLE wide;

-- ALTER INDEX checks the range at once; the index keeps its lists until it is rebuilt
ALTER INDEX t_l1 SET (lists = 0);
ALTER INDEX t_l1 SET (lists = 32769);
ALTER INDEX t_l1 SET (lists = 'many');
ALTER INDEX t_l1 SET (m = 4);
ALTER INDEX t_l1 SET (lists = 4);
SELECT reloptions FROM pg_class WHERE relname = 't_l1';
SELECT substr(get_raw_page('t_l1', 0), 25, 12) AS meta,
       pg_relation_size('t_l1') / current_setting('block_size')::int AS pages;
REINDEX INDEX t_l1;
SELECT substr(get_raw_page('t_l1', 0), 25, 12) AS meta,
       pg_relation_size('t_l1') / current_setting('block_size')::int AS pages;
SET enable_seqscan = off;
SET ivfflat.probes = 4;
SELECT id FROM t ORDER BY val <-> '[4.2,1.9,1.1]' LIMIT 3;
RESET ivfflat.probes;
RESET enable_seqscan;
ALTER INDEX t_l1 RESET (lists);
SELECT reloptions FROM pg_class WHERE relname = 't_l1';
REINDEX INDEX t_l1;
SELECT substr(get_raw_page('t_l1', 0), 25, 12) AS meta,
       pg_relation_size('t_l1') / current_setting('block_size')::int AS pages;
ALTER INDEX t_l1 SET (lists = 7);
REINDEX TABLE t;
SELECT substr(get_raw_page('t_l1', 0), 25, 12) AS meta;
DROP TABLE t;

-- ivfflat.probes
SHOW ivfflat.probes;
SET ivfflat.probes = 0;
SET ivfflat.probes = -1;
SET ivfflat.probes = 32769;
SET ivfflat.probes = 'two';
SET ivfflat.probes = '';
SET ivfflat.probes = 32768;
SHOW ivfflat.probes;
SET ivfflat.probes = 2.5;
SHOW ivfflat.probes;
SET ivfflat.probes = ' 7';
SHOW ivfflat.probes;
SELECT current_setting('ivfflat.probes');
SELECT set_config('ivfflat.probes', '11', false);
SHOW ivfflat.probes;
RESET ivfflat.probes;
SHOW ivfflat.probes;

-- ivfflat.iterative_scan
SHOW ivfflat.iterative_scan;
SET ivfflat.iterative_scan = on;
SET ivfflat.iterative_scan = strict_order;
SET ivfflat.iterative_scan = relaxed;
SET ivfflat.iterative_scan = 1;
SET ivfflat.iterative_scan = false;
SET ivfflat.iterative_scan = relaxed_order;
SHOW ivfflat.iterative_scan;
SET ivfflat.iterative_scan = 'RELAXED_ORDER';
SHOW ivfflat.iterative_scan;
SET ivfflat.iterative_scan = OFF;
SHOW ivfflat.iterative_scan;
RESET ivfflat.iterative_scan;

-- ivfflat.max_probes
SHOW ivfflat.max_probes;
SET ivfflat.max_probes = 0;
SET ivfflat.max_probes = 32769;
SET ivfflat.max_probes = 'all';
SET ivfflat.max_probes = 1;
SHOW ivfflat.max_probes;
SET ivfflat.max_probes = 32768;
SHOW ivfflat.max_probes;
RESET ivfflat.max_probes;

-- transaction-scoped values
BEGIN;
SET LOCAL ivfflat.probes = 9;
SET LOCAL ivfflat.iterative_scan = relaxed_order;
SHOW ivfflat.probes;
SHOW ivfflat.iterative_scan;
COMMIT;
SHOW ivfflat.probes;
SHOW ivfflat.iterative_scan;
BEGIN;
SET ivfflat.max_probes = 4;
ROLLBACK;
SHOW ivfflat.max_probes;

SELECT name, setting, unit, category, short_desc, extra_desc, context, vartype, source,
       min_val, max_val, enumvals, boot_val, reset_val
  FROM pg_settings WHERE name LIKE 'ivfflat.%' AND name <> 'ivfflat.io_method' ORDER BY name;

DROP EXTENSION pageinspect;
