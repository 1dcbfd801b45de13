-- Plans the optimizer makes with ivfflat indexes, which depend on the access method's cost
-- estimate: ORDER BY distance with and without LIMIT, filters, an operator of another operator
-- class, descending order, distance conditions without ORDER BY (never an ivfflat scan),
-- ivfflat.probes, which sets the share of the index read before the first row (up to all of it
-- once probes reaches lists), small tables, parameters, joins, expression and partial indexes.
-- Plan shapes are shown (COSTS OFF) only where the estimates are far apart, so that the page
-- counts, which vary a little with the centers, do not matter; estimates are shown only where
-- the page counts are fixed; and no plan shown has a node an enable_* setting disables (the
-- output reads the same on every supported server version).

CREATE TABLE items (id int PRIMARY KEY, cat int, val vector(3), emb halfvec(3), bits bit(8));
INSERT INTO items
  SELECT i, i % 10, ARRAY[i % 97, (i * 7) % 89, (i * 13) % 83]::real[]::vector,
         ARRAY[sin(i), cos(i), sin(i * 0.3)]::real[]::halfvec, (i % 256)::bit(8)
  FROM generate_series(1, 10000) i;
CREATE INDEX items_val_l2 ON items USING ivfflat (val vector_l2_ops) WITH (lists = 50);
CREATE INDEX items_val_cos ON items USING ivfflat (val vector_cosine_ops) WITH (lists = 50);
CREATE INDEX items_emb_ip ON items USING ivfflat (emb halfvec_ip_ops) WITH (lists = 50);
CREATE INDEX items_bits ON items USING ivfflat (bits bit_hamming_ops) WITH (lists = 20);
CREATE INDEX items_cat ON items (cat);
ANALYZE items;

-- nearest neighbors with LIMIT use the index of the matching operator class
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <=> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY emb <#> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY bits <~> B'10101010' LIMIT 5;
EXPLAIN (COSTS OFF)
  SELECT id, val <-> '[10,20,30]' AS distance FROM items ORDER BY distance LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[10,20,30]' LIMIT 500;

-- without LIMIT: still the index here, where a full sort of every row costs more
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[10,20,30]';

-- operators no ivfflat index orders by
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <#> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <+> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY emb <-> '[0.1,0.2,0.3]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY bits <%> B'10101010' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[10,20,30]'::halfvec LIMIT 5;

-- descending distance; distance conditions without ORDER BY
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val <-> '[10,20,30]' DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE val <-> '[10,20,30]' < 5;
EXPLAIN (COSTS OFF) SELECT COUNT(*) FROM items WHERE val <=> '[10,20,30]' < 0.1;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE val <-> '[10,20,30]' < 5
  ORDER BY val <-> '[10,20,30]' LIMIT 5;

-- filters: checked on the rows the index returns, unless another index finds few rows
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat = 3 ORDER BY val <-> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE id > 10 ORDER BY val <-> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE id < 50 ORDER BY val <-> '[10,20,30]' LIMIT 5;

-- iterative scans do not change the plan
SET ivfflat.iterative_scan = relaxed_order;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat = 3 ORDER BY val <-> '[10,20,30]' LIMIT 5;
RESET ivfflat.iterative_scan;

-- query vector from a parameter, custom and generic plans
PREPARE nearest(vector) AS SELECT id FROM items ORDER BY val <-> $1 LIMIT 5;
EXPLAIN (COSTS OFF) EXECUTE nearest('[10,20,30]');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE nearest('[10,20,30]');
RESET plan_cache_mode;
DEALLOCATE nearest;

-- one index scan per outer row
CREATE TABLE queries (qid int, q vector(3));
INSERT INTO queries VALUES (1, '[1,2,3]'), (2, '[40,50,60]'), (3, '[90,5,70]');
ANALYZE queries;
EXPLAIN (COSTS OFF) SELECT qid, n.id FROM queries
  CROSS JOIN LATERAL (SELECT id FROM items ORDER BY val <-> queries.q LIMIT 3) n;

-- expression and partial indexes
CREATE INDEX items_val_half ON items USING ivfflat ((val::halfvec(3)) halfvec_l2_ops)
  WITH (lists = 50);
CREATE INDEX items_val_cat ON items USING ivfflat (val vector_ip_ops) WITH (lists = 20)
  WHERE cat <> 7;
ANALYZE items;
EXPLAIN (COSTS OFF) SELECT id FROM items ORDER BY val::halfvec(3) <-> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat <> 7 ORDER BY val <#> '[10,20,30]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM items WHERE cat <> 6 ORDER BY val <#> '[10,20,30]' LIMIT 5;

-- ivfflat.probes: the index reads probes / lists of itself before its first row. With rows
-- as wide as these the index is larger than the table, and once every list is probed a
-- sequential scan and a sort cost less, with or without LIMIT.
CREATE TABLE wide (id int, val vector(64));
INSERT INTO wide SELECT i, ARRAY(SELECT sin(i * j)::real FROM generate_series(1, 64) j)
  FROM generate_series(1, 3000) i;
CREATE INDEX wide_val ON wide USING ivfflat (val) WITH (lists = 30);
ANALYZE wide;
CREATE TABLE wq (q vector(64));
INSERT INTO wq VALUES (array_fill(0.5, ARRAY[64]));
ANALYZE wq;
SET ivfflat.probes = 1;
EXPLAIN (COSTS OFF) SELECT n.id FROM wq
  CROSS JOIN LATERAL (SELECT id FROM wide ORDER BY val <-> wq.q LIMIT 5) n;
SET ivfflat.probes = 10;
EXPLAIN (COSTS OFF) SELECT n.id FROM wq
  CROSS JOIN LATERAL (SELECT id FROM wide ORDER BY val <-> wq.q LIMIT 5) n;
SET ivfflat.probes = 30;
EXPLAIN (COSTS OFF) SELECT n.id FROM wq
  CROSS JOIN LATERAL (SELECT id FROM wide ORDER BY val <-> wq.q LIMIT 5) n;
SET ivfflat.probes = 1000;
EXPLAIN (COSTS OFF) SELECT n.id FROM wq
  CROSS JOIN LATERAL (SELECT id FROM wide ORDER BY val <-> wq.q LIMIT 5) n;
SET ivfflat.probes = 1;
EXPLAIN (COSTS OFF) SELECT n.id FROM wq
  CROSS JOIN LATERAL (SELECT id FROM wide ORDER BY val <-> wq.q) n;
RESET ivfflat.probes;

-- estimates, shown where the page counts are fixed: the tables hold groups of identical rows,
-- one group per list (see ivfflat_iterative), so every list has a known number of pages. Sorts
-- are disabled so that the plan is the index scan, whose estimate is shown. In the second table
-- the vectors are stored out of line, the index is much larger than the table's main fork, and
-- the estimate before the first row is lowered (pgvector's correction for TOAST).
CREATE TABLE grouped (id int, val vector(3));
INSERT INTO grouped SELECT i, ARRAY[(i % 4) * 10, i % 4, 0]::real[] FROM generate_series(1, 4000) i;
CREATE INDEX grouped_val ON grouped USING ivfflat (val) WITH (lists = 4);
ANALYZE grouped;
CREATE TABLE toasted (id int, val vector(1000));
INSERT INTO toasted SELECT i, array_fill((i % 4) * 10, ARRAY[1000]) FROM generate_series(1, 40) i;
CREATE INDEX toasted_val ON toasted USING ivfflat (val) WITH (lists = 4);
ANALYZE toasted;
SELECT c.relname, pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
  FROM pg_class c WHERE c.relname IN ('grouped', 'grouped_val', 'toasted', 'toasted_val')
  ORDER BY c.relname;
CREATE TABLE gq (q3 vector(3), q1000 vector(1000));
INSERT INTO gq VALUES ('[1,2,3]', array_fill(1, ARRAY[1000]));
ANALYZE gq;
SET enable_sort = off;
SET ivfflat.probes = 1;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM grouped ORDER BY val <-> gq.q3 LIMIT 3) n;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM toasted ORDER BY val <-> gq.q1000 LIMIT 3) n;
SET ivfflat.probes = 2;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM grouped ORDER BY val <-> gq.q3 LIMIT 3) n;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM toasted ORDER BY val <-> gq.q1000 LIMIT 3) n;
SET ivfflat.probes = 4;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM grouped ORDER BY val <-> gq.q3 LIMIT 3) n;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM toasted ORDER BY val <-> gq.q1000 LIMIT 3) n;
-- a filter scales the rows, not the pages
SET ivfflat.probes = 1;
EXPLAIN SELECT n.id FROM gq
  CROSS JOIN LATERAL (SELECT id FROM grouped WHERE id % 2 = 0 ORDER BY val <-> gq.q3 LIMIT 3) n;
RESET ivfflat.probes;
RESET enable_sort;
DROP TABLE grouped, toasted, gq;

-- a small table: a sequential scan and a sort
CREATE TABLE small (id int, val vector(3));
INSERT INTO small SELECT i, ARRAY[i, 2 * i, 10 - i]::real[] FROM generate_series(1, 10) i;
CREATE INDEX small_val ON small USING ivfflat (val) WITH (lists = 1);
ANALYZE small;
EXPLAIN (COSTS OFF) SELECT id FROM small ORDER BY val <-> '[1,2,3]' LIMIT 3;

-- an empty table that was never analyzed
CREATE TABLE empty (val vector(3));
CREATE INDEX empty_val ON empty USING ivfflat (val) WITH (lists = 1);
EXPLAIN (COSTS OFF) SELECT * FROM empty ORDER BY val <-> '[1,2,3]' LIMIT 5;

DROP TABLE items, queries, wide, wq, small, empty;
