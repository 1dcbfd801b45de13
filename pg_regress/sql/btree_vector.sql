-- The btree operator class vector_ops: sorting, grouping, unique indexes and index scans.

CREATE TABLE btree_vector_t (id int, v vector);
INSERT INTO btree_vector_t VALUES
  (1, '[1,2,3]'), (2, '[1,2]'), (3, '[0,5]'), (4, '[1,2,3]'), (5, '[-1.5]'), (6, NULL),
  (7, '[1,2,3,0]'), (8, '[1,1,9]'), (9, '[-0]'), (10, '[0]');
SELECT id, v FROM btree_vector_t ORDER BY v, id;
SELECT id, v FROM btree_vector_t ORDER BY v DESC NULLS LAST, id;
SELECT DISTINCT v FROM btree_vector_t ORDER BY v;
SELECT v, count(*) FROM btree_vector_t GROUP BY v ORDER BY v;
SELECT count(DISTINCT v) FROM btree_vector_t;

CREATE INDEX btree_vector_idx ON btree_vector_t (v);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM btree_vector_t WHERE v = '[1,2,3]';
SELECT id FROM btree_vector_t WHERE v = '[1,2,3]' ORDER BY id;
SELECT id FROM btree_vector_t WHERE v < '[1,2]' ORDER BY v, id;
SELECT id FROM btree_vector_t WHERE v <= '[1,2]' ORDER BY v, id;
SELECT id FROM btree_vector_t WHERE v > '[1,2,3]' ORDER BY v, id;
SELECT id FROM btree_vector_t WHERE v >= '[1,2,3]' ORDER BY v, id;
SELECT id FROM btree_vector_t WHERE v BETWEEN '[0]' AND '[1,2]' ORDER BY v, id;
EXPLAIN (COSTS OFF) SELECT v FROM btree_vector_t ORDER BY v;
SELECT v FROM btree_vector_t ORDER BY v;
SELECT v FROM btree_vector_t WHERE v IS NULL;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- joins on equality
SELECT a.id, b.id FROM btree_vector_t a JOIN btree_vector_t b ON a.v = b.v ORDER BY a.id, b.id;

-- unique index
CREATE TABLE btree_vector_u (v vector(2) UNIQUE);
INSERT INTO btree_vector_u VALUES ('[1,2]'), ('[2,1]');
INSERT INTO btree_vector_u VALUES ('[1,2]');
INSERT INTO btree_vector_u VALUES ('[0,0]'), ('[-0,0]');
INSERT INTO btree_vector_u VALUES ('[3,3]') ON CONFLICT (v) DO NOTHING;
INSERT INTO btree_vector_u VALUES ('[3,3]') ON CONFLICT (v) DO NOTHING;
SELECT * FROM btree_vector_u ORDER BY v;

-- a larger index, checked against a sort
CREATE TABLE btree_vector_big AS
  SELECT i AS id, ARRAY[i % 13, i % 7, (i * 7) % 5]::vector AS v FROM generate_series(1, 2000) i;
CREATE INDEX ON btree_vector_big (v);
SET enable_seqscan = off;
SELECT count(*) FROM btree_vector_big WHERE v = '[3,3,1]';
SELECT count(*) FROM btree_vector_big WHERE v < '[1,0,0]';
SELECT v FROM btree_vector_big WHERE v > '[12,6,3]' ORDER BY v LIMIT 5;
RESET enable_seqscan;
SELECT count(*) FROM btree_vector_big WHERE v = '[3,3,1]';
SELECT count(*) FROM btree_vector_big WHERE v < '[1,0,0]';

-- operator class catalog
SELECT opc.opcname, opc.opcdefault, am.amname, opc.opcintype::regtype
FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
WHERE opc.opcintype = 'vector'::regtype AND am.amname = 'btree';
SELECT amop.amopstrategy, amop.amopopr::regoperator
FROM pg_amop amop JOIN pg_opfamily f ON f.oid = amop.amopfamily
WHERE f.opfname = 'vector_ops' AND f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')
ORDER BY 1;
SELECT amproc.amprocnum, amproc.amproc::regprocedure
FROM pg_amproc amproc JOIN pg_opfamily f ON f.oid = amproc.amprocfamily
WHERE f.opfname = 'vector_ops' AND f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')
ORDER BY 1;

DROP TABLE btree_vector_t, btree_vector_u, btree_vector_big;
