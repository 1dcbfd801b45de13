-- Iterative index scans (hnsw.iterative_scan = relaxed_order / strict_order) against the plain
-- scan that stops after hnsw.ef_search elements: filters that reject most rows, LIMITs larger
-- than what one pass finds, hnsw.max_scan_tuples, memory limits, rescans, duplicates, NULL and
-- zero query vectors, dead rows, and empty indexes. The tables stay below 2 * m rows: every
-- element is visited in the first pass, so which rows come back and in which order does not
-- depend on the random levels of the graph.

SET enable_seqscan = off;

CREATE TABLE items (id int, cat int, val vector(2));
INSERT INTO items SELECT i, i % 3, ARRAY[i, (i * i) % 17]::real[]::vector
  FROM generate_series(1, 30) i;
CREATE INDEX items_val ON items USING hnsw (val vector_l2_ops);

-- the exact order, for reference
SELECT array_agg(id) FROM (SELECT id FROM items ORDER BY val <-> '[10.3,4.7]') s;

-- without iterative scans a scan stops after ef_search elements
SET hnsw.ef_search = 5;
SELECT array_agg(id) FROM (SELECT id FROM items ORDER BY val <-> '[10.3,4.7]') s;
SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SELECT id FROM items WHERE cat = 5 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;

-- strict order: results come back in distance order until the filter is satisfied
SET hnsw.iterative_scan = strict_order;
SELECT array_agg(id) FROM (SELECT id FROM items ORDER BY val <-> '[10.3,4.7]') s;
SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SELECT id FROM items WHERE cat = 1 ORDER BY val <-> '[25.2,11.9]' LIMIT 20;
SELECT id FROM items WHERE cat = 5 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SELECT COUNT(*) FROM (SELECT id FROM items WHERE id > 20 ORDER BY val <-> '[10.3,4.7]') s;

-- relaxed order: the same rows, re-sorted by the caller when the order matters
SET hnsw.iterative_scan = relaxed_order;
SELECT array_agg(id) FROM (SELECT id FROM items ORDER BY val <-> '[10.3,4.7]') s;
SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
WITH nearest AS MATERIALIZED (
  SELECT id, val <-> '[25.2,11.9]' AS distance FROM items WHERE cat = 1
  ORDER BY val <-> '[25.2,11.9]' LIMIT 4
) SELECT id FROM nearest ORDER BY distance;
SELECT id FROM items WHERE cat = 5 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SELECT COUNT(*) FROM (SELECT id FROM items WHERE id > 20 ORDER BY val <-> '[10.3,4.7]') s;

-- ef_search = 1, the smallest batch
SET hnsw.ef_search = 1;
SET hnsw.iterative_scan = off;
SELECT id FROM items WHERE cat = 2 ORDER BY val <-> '[10.3,4.7]' LIMIT 3;
SET hnsw.iterative_scan = strict_order;
SELECT id FROM items WHERE cat = 2 ORDER BY val <-> '[10.3,4.7]' LIMIT 3;
SET hnsw.iterative_scan = relaxed_order;
SELECT id FROM items WHERE cat = 2 ORDER BY val <-> '[10.3,4.7]' LIMIT 3;
SET hnsw.ef_search = 5;

-- max_scan_tuples: once reached, the scan only hands out the candidates it already holds
SET hnsw.max_scan_tuples = 1;
SET hnsw.iterative_scan = strict_order;
SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SET hnsw.iterative_scan = relaxed_order;
SELECT COUNT(*) FROM (SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]') s;
RESET hnsw.max_scan_tuples;

-- a small memory budget for the scan
SET work_mem = '64kB';
SET hnsw.scan_mem_multiplier = 1;
SELECT COUNT(*) FROM (SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]') s;
SET hnsw.scan_mem_multiplier = 2.5;
SELECT COUNT(*) FROM (SELECT id FROM items WHERE cat = 0 ORDER BY val <-> '[10.3,4.7]') s;
RESET hnsw.scan_mem_multiplier;
RESET work_mem;

-- one iterative scan per outer row
CREATE TABLE queries (qid int, cat int, q vector(2));
INSERT INTO queries VALUES (1, 0, '[10.3,4.7]'), (2, 1, '[25.2,11.9]'), (3, 2, '[3.3,15.4]'),
  (4, 5, '[1.1,1.6]');
SET hnsw.iterative_scan = strict_order;
SELECT qid, (SELECT array_agg(id) FROM (SELECT id FROM items i WHERE i.cat = queries.cat
                                        ORDER BY i.val <-> queries.q LIMIT 3) s) AS nearest
  FROM queries ORDER BY qid;
SET hnsw.iterative_scan = relaxed_order;
SELECT qid, n.id FROM queries
  CROSS JOIN LATERAL (SELECT id FROM items i WHERE i.cat = queries.cat ORDER BY i.val <-> queries.q LIMIT 2) n
  ORDER BY qid, n.id;

-- a NULL query value
SELECT COUNT(*) FROM (SELECT id FROM items WHERE cat = 0 ORDER BY val <-> (SELECT NULL::vector)) s;

-- dead rows are skipped and the scan goes on to find live ones
DELETE FROM items WHERE id BETWEEN 8 AND 13;
SET hnsw.iterative_scan = strict_order;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SET hnsw.iterative_scan = off;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
VACUUM items;
SET hnsw.iterative_scan = strict_order;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SET hnsw.iterative_scan = off;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;

-- empty index
TRUNCATE items;
SET hnsw.iterative_scan = strict_order;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;
SET hnsw.iterative_scan = relaxed_order;
SELECT id FROM items ORDER BY val <-> '[10.3,4.7]' LIMIT 5;

DROP TABLE items;
DROP TABLE queries;

-- duplicates share an element with several heap TIDs; every copy comes back
CREATE TABLE d (id int, val vector(3));
INSERT INTO d SELECT i, '[1,1,1]' FROM generate_series(1, 4) i;
INSERT INTO d VALUES (5, '[2,2,2]'), (6, '[3,3,3]');
CREATE INDEX ON d USING hnsw (val vector_l2_ops);
SET hnsw.ef_search = 1;
SET hnsw.iterative_scan = off;
SELECT COUNT(*) FROM (SELECT id FROM d ORDER BY val <-> '[1,1,1]') s;
SELECT COUNT(*) FROM (SELECT id FROM d ORDER BY val <-> '[3.1,3.1,3.1]') s;
INSERT INTO d SELECT i, '[1,1,1]' FROM generate_series(7, 8) i;
INSERT INTO d SELECT i, '[3,3,3]' FROM generate_series(9, 10) i;
SET hnsw.iterative_scan = strict_order;
SELECT val, COUNT(*) FROM (SELECT val FROM d ORDER BY val <-> '[1.1,1.1,1.1]') s GROUP BY val ORDER BY val;
SELECT id, val FROM d WHERE id % 2 = 1 ORDER BY val <-> '[3.1,3.1,3.1]', id LIMIT 3;
SET hnsw.iterative_scan = relaxed_order;
SELECT COUNT(*) FROM (SELECT id FROM d WHERE id > 5 ORDER BY val <-> '[2,2,2]') s;
DROP TABLE d;

-- cosine: zero vectors are not in the index, iterative scans or not
CREATE TABLE z (id int, val vector(2));
INSERT INTO z VALUES (1, '[0,0]'), (2, '[1,0.5]'), (3, '[0,0]'), (4, '[-1,2]'), (5, '[0.25,1]');
CREATE INDEX ON z USING hnsw (val vector_cosine_ops);
SET hnsw.iterative_scan = strict_order;
SELECT id FROM z ORDER BY val <=> '[1,0.1]';
SELECT COUNT(*) FROM (SELECT id FROM z ORDER BY val <=> '[0,0]') s;
DROP TABLE z;

RESET hnsw.iterative_scan;
RESET hnsw.ef_search;
