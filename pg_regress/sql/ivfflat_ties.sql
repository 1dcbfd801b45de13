-- ivfflat scans whose distances tie. Equal distances come out of pgvector in the order its
-- tuplesort leaves them, which depends on where the entries stand in the lists; ours must
-- give the same order (it sorts only what a scan reads, and hands any batch with equal
-- distances to that same sort). One list holds every row, whatever k-means does, and the
-- ids are printed in scan order. A sort that spills past work_mem merges ties in another
-- order on PostgreSQL 15 (ivfflat_ties_1.out, our output there: no pgvector for 15 here).

SET enable_seqscan = off;

-- Few distinct values: ties everywhere, in the built part of the list and after inserts.
CREATE TABLE ties (id int, val vector(2));
INSERT INTO ties SELECT i, ARRAY[i % 5, (i * 7) % 3]::vector FROM generate_series(1, 200) i;
CREATE INDEX ON ties USING ivfflat (val) WITH (lists = 1);
INSERT INTO ties SELECT i, ARRAY[i % 4, i % 2]::vector FROM generate_series(201, 260) i;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM ties ORDER BY val <-> '[1,1]') s;
SELECT id FROM ties ORDER BY val <-> '[2,1]' LIMIT 12;
SELECT id FROM ties ORDER BY val <-> '[4,2]' LIMIT 1;

-- Distinct distances first and ties further on: the rows before the first tie, then the
-- tied ones in the sort's order.
CREATE TABLE near_ties (id int, val vector(2));
INSERT INTO near_ties SELECT i, ARRAY[i, 0]::vector FROM generate_series(1, 100) i;
INSERT INTO near_ties SELECT 100 + i, ARRAY[70 + (i % 3), 0]::vector FROM generate_series(1, 60) i;
CREATE INDEX ON near_ties USING ivfflat (val) WITH (lists = 1);
SELECT string_agg(id::text, ',') FROM (SELECT id FROM near_ties ORDER BY val <-> '[0,0]' LIMIT 130) s;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM near_ties ORDER BY val <-> '[100.5,0]' LIMIT 40) s;

-- 0 and -0 are equal distances (negative inner products of orthogonal values).
CREATE TABLE zero_ties (id int, val vector(2));
INSERT INTO zero_ties VALUES (1, '[0,0]'), (2, '[1,-1]'), (3, '[0,0]'), (4, '[-1,1]'), (5, '[2,3]'),
  (6, '[3,-3]'), (7, '[-2,-2]');
CREATE INDEX ON zero_ties USING ivfflat (val vector_ip_ops) WITH (lists = 1);
SELECT id, val <#> '[1,1]' AS distance FROM zero_ties ORDER BY val <#> '[1,1]';

-- A batch larger than work_mem: the sort spills, ties and all.
CREATE TABLE spill (id int, val vector(2));
INSERT INTO spill SELECT i, ARRAY[(i * 37) % 1000, (i % 7) * 0.5]::vector FROM generate_series(1, 20000) i;
CREATE INDEX ON spill USING ivfflat (val) WITH (lists = 1);
SET work_mem = '64kB';
SELECT count(*), md5(string_agg(id::text, ',')) FROM (SELECT id FROM spill ORDER BY val <-> '[500,1]') s;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM spill ORDER BY val <-> '[500,1]' LIMIT 25) s;
RESET work_mem;
SELECT count(*), md5(string_agg(id::text, ',')) FROM (SELECT id FROM spill ORDER BY val <-> '[500,1]') s;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM spill ORDER BY val <-> '[250.25,0.75]' LIMIT 25) s;

DROP TABLE ties, near_ties, zero_ties, spill;
