-- sparsevec comparison operators, sparsevec_cmp and the btree operator class.

SELECT '{1:1}/3'::sparsevec = '{1:1}/3', '{1:1}/3'::sparsevec <> '{1:1}/3',
       '{1:1}/3'::sparsevec < '{1:1}/3', '{1:1}/3'::sparsevec <= '{1:1}/3',
       '{1:1}/3'::sparsevec > '{1:1}/3', '{1:1}/3'::sparsevec >= '{1:1}/3';
SELECT '{1:1}/3'::sparsevec = '{1:1}/4', '{1:1}/3'::sparsevec < '{1:1}/4';
SELECT '{}/3'::sparsevec = '{}/3', '{}/3'::sparsevec < '{}/4', '{}/4'::sparsevec > '{}/3';

-- every pair of a set of vectors that differ in values, positions, signs, counts and
-- dimensions; the order must match the dense order of Postgres arrays
CREATE TABLE sc (id int, v sparsevec);
INSERT INTO sc VALUES
  (1, '{}/1'), (2, '{}/2'), (3, '{}/3'), (4, '{1:1}/1'), (5, '{1:-1}/1'),
  (6, '{1:1}/2'), (7, '{2:1}/2'), (8, '{2:-1}/2'), (9, '{1:-1}/2'), (10, '{1:1,2:1}/2'),
  (11, '{1:1,2:-1}/2'), (12, '{1:2}/2'), (13, '{1:1}/3'), (14, '{3:1}/3'), (15, '{3:-1}/3'),
  (16, '{1:1,3:1}/3'), (17, '{1:1,3:-1}/3'), (18, '{2:1,3:1}/3'), (19, '{1:0.5}/2'),
  (20, '{1:1,2:1,3:1}/3'), (21, '{2:2}/3'), (22, '{2:-2}/3'), (23, '{1:-1,2:5}/3'),
  (24, '{1:1,2:1}/3'), (25, '{3:5}/5'), (26, '{5:5}/5'), (27, '{5:-5}/5'), (28, '{1:1,5:1}/5');

SELECT a.id, b.id, sparsevec_cmp(a.v, b.v) AS cmp,
       a.v < b.v AS lt, a.v <= b.v AS le, a.v = b.v AS eq,
       a.v <> b.v AS ne, a.v >= b.v AS ge, a.v > b.v AS gt
FROM sc a CROSS JOIN sc b ORDER BY a.id, b.id;

SELECT id, v FROM sc ORDER BY v, id;
SELECT id, v FROM sc ORDER BY v DESC, id;
SELECT DISTINCT v FROM sc ORDER BY v;

-- the same order through a btree index
CREATE INDEX sc_v ON sc (v);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sc WHERE v = '{1:1}/3';
SELECT id FROM sc WHERE v = '{1:1}/3';
SELECT id FROM sc WHERE v < '{1:1}/2' ORDER BY v, id;
SELECT id FROM sc WHERE v >= '{2:1}/3' ORDER BY v, id;
SELECT id FROM sc WHERE v BETWEEN '{1:-1}/2' AND '{1:1}/2' ORDER BY v, id;
RESET enable_seqscan;

-- equality joins (the operator is not mergejoinable) and sort-based grouping
INSERT INTO sc SELECT id + 100, v FROM sc WHERE id % 3 = 0;
SET enable_hashjoin = off;
SET enable_nestloop = off;
SET enable_hashagg = off;
SELECT oprcanmerge, oprcanhash FROM pg_operator WHERE oprname = '=' AND oprleft = 'sparsevec'::regtype;
SELECT a.id, b.id FROM sc a JOIN sc b ON a.v = b.v WHERE a.id < b.id ORDER BY a.id, b.id;
SELECT v, count(*) FROM sc GROUP BY v HAVING count(*) > 1 ORDER BY v;
RESET enable_hashjoin;
RESET enable_nestloop;
RESET enable_hashagg;
DROP TABLE sc;

-- operator class catalogue entries
SELECT amopopr::regoperator, amopstrategy
FROM pg_amop JOIN pg_opfamily f ON f.oid = amopfamily
WHERE f.opfname = 'sparsevec_ops' ORDER BY amopstrategy;
SELECT oprname, oprcom::regoperator, oprnegate::regoperator, oprrest, oprjoin
FROM pg_operator
WHERE oprleft = 'sparsevec'::regtype AND oprcode::text LIKE 'sparsevec_%'
ORDER BY oprname;
