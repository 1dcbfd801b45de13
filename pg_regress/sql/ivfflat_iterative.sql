-- Iterative ivfflat scans (ivfflat.iterative_scan = relaxed_order) against plain scans that read
-- ivfflat.probes lists and stop: filters that need more lists than probes, LIMITs larger than
-- what the probed lists hold, ivfflat.max_probes (never below probes, never above lists),
-- batches of probes lists sorted on their own (the relaxed order), NULL query values, rescans,
-- and deleted rows. The table holds four groups of identical rows on a line: k-means++ gives a
-- sample identical to a chosen center no weight, so every build, whatever its random draws,
-- takes the four group points as centers, and each list holds one group. Which lists a scan reads
-- is then fixed by the query point; the queries print counts per group, or the order of rows
-- whose distances do not tie.

SET enable_seqscan = off;

CREATE TABLE g (id int, val vector(2)) WITH (autovacuum_enabled = off);
INSERT INTO g SELECT i, ARRAY[(ARRAY[0, 10, 30, 60])[i % 4 + 1], 0]::real[]
  FROM generate_series(1, 100) i;
CREATE INDEX g_val ON g USING ivfflat (val) WITH (lists = 4);

-- the groups, and the rows the filter id % 5 = 0 keeps in each
SELECT (val::real[])[1] AS grp, COUNT(*), COUNT(*) FILTER (WHERE id % 5 = 0) AS filtered
  FROM g GROUP BY 1 ORDER BY 1;

-- without iterative scans: the probes nearest lists, then stop
SHOW ivfflat.iterative_scan;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]' LIMIT 12) s GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 30) s;
SET ivfflat.probes = 2;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]' LIMIT 12) s GROUP BY 1 ORDER BY 1;
-- max_probes only counts for iterative scans
SET ivfflat.max_probes = 4;
SELECT COUNT(*) FROM (SELECT id FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s;
RESET ivfflat.max_probes;
SET ivfflat.probes = 1;
-- the list of the query point is the nearest center, not the nearest row
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g ORDER BY val <-> '[21,0]' LIMIT 40) s GROUP BY 1 ORDER BY 1;

-- relaxed order: more lists until the LIMIT is met or max_probes lists are read
SET ivfflat.iterative_scan = relaxed_order;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]' LIMIT 12) s GROUP BY 1 ORDER BY 1;
SELECT string_agg((val::real[])[1]::text, ',') AS groups_in_scan_order FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]' LIMIT 12) s;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s GROUP BY 1 ORDER BY 1;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g ORDER BY val <-> '[1,0]' LIMIT 30) s GROUP BY 1 ORDER BY 1;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g ORDER BY val <-> '[58,0]' LIMIT 60) s GROUP BY 1 ORDER BY 1;
-- a filter only the farthest list satisfies, and one nothing satisfies
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 4 = 3 ORDER BY val <-> '[1,0]' LIMIT 10) s GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM g WHERE id > 1000 ORDER BY val <-> '[1,0]') s;

-- max_probes limits the lists read
SET ivfflat.max_probes = 2;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (
  SELECT id FROM g WHERE id % 4 = 3 ORDER BY val <-> '[1,0]' LIMIT 10) s;
SET ivfflat.max_probes = 3;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s GROUP BY 1 ORDER BY 1;
-- below probes, probes wins
SET ivfflat.max_probes = 1;
SET ivfflat.probes = 3;
SELECT (val::real[])[1] AS grp, COUNT(*) FROM (
  SELECT val FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s GROUP BY 1 ORDER BY 1;
-- above the number of lists, every list once
SET ivfflat.probes = 1;
SET ivfflat.max_probes = 500;
SELECT COUNT(*) FROM (SELECT id FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s;
SET ivfflat.probes = 7;
SELECT COUNT(*) FROM (SELECT id FROM g WHERE id % 5 = 0 ORDER BY val <-> '[1,0]') s;
SET ivfflat.probes = 1;
RESET ivfflat.max_probes;

-- a NULL query value puts every list at distance zero: the first lists read are any, each holds
-- 25 rows
SET ivfflat.iterative_scan = off;
SELECT COUNT(*) FROM (SELECT id FROM g ORDER BY val <-> (SELECT NULL::vector)) s;
SET ivfflat.iterative_scan = relaxed_order;
SET ivfflat.max_probes = 2;
SELECT COUNT(*) FROM (SELECT id FROM g ORDER BY val <-> (SELECT NULL::vector)) s;
RESET ivfflat.max_probes;
SELECT COUNT(*) FROM (SELECT id FROM g ORDER BY val <-> (SELECT NULL::vector)) s;

-- rescans: one iterative scan per outer row
CREATE TABLE q (qid int, qv vector(2));
INSERT INTO q VALUES (1, '[2,0]'), (2, '[12,0]'), (3, '[33,0]'), (4, '[70,0]');
SELECT qid, (SELECT COUNT(*) FROM (
  SELECT id FROM g WHERE id % 5 = 0 ORDER BY val <-> q.qv LIMIT 7) s) AS found
  FROM q ORDER BY qid;
SET ivfflat.iterative_scan = off;
SELECT qid, (SELECT COUNT(*) FROM (
  SELECT id FROM g WHERE id % 5 = 0 ORDER BY val <-> q.qv LIMIT 7) s) AS found
  FROM q ORDER BY qid;
SET ivfflat.iterative_scan = relaxed_order;
DROP TABLE q;

-- relaxed order: each batch of probes lists is sorted on its own. Row 101 goes to the list of
-- group 0 and row 102 to the list of group 10, yet 102 is nearer to the query point.
INSERT INTO g VALUES (101, '[-5,0]'), (102, '[5.1,0]');
SELECT id, round((val <-> '[1,0]')::numeric, 2) AS distance FROM g WHERE id > 100
  ORDER BY id;
SELECT string_agg(id::text, ',') FILTER (WHERE id > 100) AS scan_order, COUNT(*) FROM (
  SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 28) s;
-- re-sorting by the caller (+ 0: Postgres 17 and later would otherwise trust the index order)
WITH n AS MATERIALIZED (
  SELECT id, val <-> '[1,0]' AS distance FROM g ORDER BY val <-> '[1,0]' LIMIT 28
) SELECT id FROM n WHERE id > 100 ORDER BY distance + 0;
-- two lists per batch: both rows in the first batch, sorted together
SET ivfflat.probes = 2;
SELECT string_agg(id::text, ',') FILTER (WHERE id > 100) AS scan_order, COUNT(*) FROM (
  SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 28) s;
SET ivfflat.probes = 1;
-- without iterative scans the second list is not read
SET ivfflat.iterative_scan = off;
SELECT string_agg(id::text, ',') FILTER (WHERE id > 100) AS scan_order, COUNT(*) FROM (
  SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 28) s;

-- deleted rows are skipped; an iterative scan goes on to the next lists
DELETE FROM g WHERE id % 4 = 0;
SELECT array_agg(id) FROM (SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 5) s;
SET ivfflat.iterative_scan = relaxed_order;
SELECT string_agg(id::text, ',') FILTER (WHERE id > 100) AS scan_order, COUNT(*) FROM (
  SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 5) s;
VACUUM g;
SELECT string_agg(id::text, ',') FILTER (WHERE id > 100) AS scan_order, COUNT(*) FROM (
  SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 5) s;
SET ivfflat.iterative_scan = off;
SELECT array_agg(id) FROM (SELECT id FROM g ORDER BY val <-> '[1,0]' LIMIT 5) s;

-- an empty table
TRUNCATE g;
SET ivfflat.iterative_scan = relaxed_order;
SELECT COUNT(*) FROM (SELECT id FROM g ORDER BY val <-> '[1,0]') s;
INSERT INTO g VALUES (1, '[3,4]');
SELECT id FROM g ORDER BY val <-> '[1,0]';
RESET ivfflat.iterative_scan;
DROP TABLE g;
