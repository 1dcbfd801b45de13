-- The btree operator class halfvec_ops: sorting, DISTINCT, grouping, btree indexes, merge joins.

CREATE TABLE btree_halfvec (id int, v halfvec);
INSERT INTO btree_halfvec VALUES
  (1, '[1,2,3]'), (2, '[1,2]'), (3, '[1,2,3,0]'), (4, '[-1,5]'), (5, '[0]'), (6, '[-0]'),
  (7, '[65504]'), (8, '[-65504]'), (9, '[5.9604645e-08]'), (10, NULL), (11, '[1,2,3]'),
  (12, '[0.1]'), (13, '[0.099975586]'), (14, '[2,1]'), (15, '[1,1.9990234]');

SELECT id, v FROM btree_halfvec ORDER BY v, id;
SELECT id, v FROM btree_halfvec ORDER BY v DESC NULLS LAST, id;
SELECT DISTINCT v FROM btree_halfvec ORDER BY v;
SELECT v, count(*) FROM btree_halfvec GROUP BY v ORDER BY v;
SELECT min(id), max(id) FROM btree_halfvec GROUP BY v HAVING count(*) > 1 ORDER BY 1;

-- an index on halfvec
CREATE INDEX btree_halfvec_idx ON btree_halfvec (v);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM btree_halfvec WHERE v = '[1,2,3]';
SELECT id FROM btree_halfvec WHERE v = '[1,2,3]' ORDER BY id;
SELECT id FROM btree_halfvec WHERE v = '[0]' ORDER BY id;
SELECT id FROM btree_halfvec WHERE v < '[1,2]' ORDER BY v, id;
SELECT id FROM btree_halfvec WHERE v <= '[1,2]' ORDER BY v, id;
SELECT id FROM btree_halfvec WHERE v > '[1,2]' ORDER BY v, id;
SELECT id FROM btree_halfvec WHERE v >= '[1,2]' ORDER BY v, id;
SELECT id FROM btree_halfvec WHERE v BETWEEN '[0]' AND '[1,2,3]' ORDER BY v, id;
EXPLAIN (COSTS OFF) SELECT v FROM btree_halfvec ORDER BY v LIMIT 3;
SELECT v FROM btree_halfvec ORDER BY v LIMIT 3;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- a unique index treats -0 and 0 as equal
CREATE TABLE btree_halfvec_unique (v halfvec PRIMARY KEY);
INSERT INTO btree_halfvec_unique VALUES ('[0,1]');
INSERT INTO btree_halfvec_unique VALUES ('[-0,1]');
INSERT INTO btree_halfvec_unique VALUES ('[0.1]'), ('[0.1001]');
INSERT INTO btree_halfvec_unique VALUES ('[0.099975586]');
INSERT INTO btree_halfvec_unique VALUES ('[0,1,0]');
SELECT * FROM btree_halfvec_unique ORDER BY v;
DROP TABLE btree_halfvec_unique;

-- equality joins (the operator is neither MERGES nor HASHES, as in pgvector)
SET enable_hashjoin = off;
SET enable_nestloop = off;
SELECT oprcanmerge, oprcanhash FROM pg_operator WHERE oprname = '=' AND oprleft = 'halfvec'::regtype;
SELECT a.id, b.id FROM btree_halfvec a JOIN btree_halfvec b ON a.v = b.v ORDER BY 1, 2;
RESET enable_hashjoin;
RESET enable_nestloop;

-- many rows through an index
CREATE TABLE btree_halfvec_many AS
  SELECT i, ('[' || (i % 17) || ',' || (i % 5) - 2 || ']')::halfvec AS v FROM generate_series(1, 2000) i;
CREATE INDEX ON btree_halfvec_many (v);
ANALYZE btree_halfvec_many;
SET enable_seqscan = off;
SELECT v, count(*) FROM btree_halfvec_many WHERE v >= '[16]' GROUP BY v ORDER BY v;
SELECT count(*) FROM btree_halfvec_many WHERE v = '[3,-1]';
RESET enable_seqscan;
DROP TABLE btree_halfvec_many;

DROP TABLE btree_halfvec;
