-- ivfflat over bit: bit_hamming_ops (not the default for bit; there is no Jaccard operator class
-- for ivfflat), built over existing rows and fed by inserts afterwards, NULL rows, NULL query
-- values, query values of another length, varbit (refused), expression indexes that cast varbit
-- to a fixed length (bit without a length is bit(1)), the 64000-bit limit and the memory
-- check. Every scan reads all the lists. Hamming distances are small integers: the queries that
-- print rows in scan order have no ties, the others group the rows by distance.

SET enable_seqscan = off;

CREATE TABLE t (id int, val bit(6));
INSERT INTO t VALUES
  (1, B'101010'), (2, B'101011'), (3, B'100011'), (4, B'110011'), (5, B'010011'),
  (6, B'010101'), (7, NULL);

-- no default operator class, and no Jaccard
CREATE INDEX ON t USING ivfflat (val);
CREATE INDEX ON t USING ivfflat (val bit_jaccard_ops);

CREATE INDEX t_one ON t USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
INSERT INTO t VALUES (8, B'010001'), (9, NULL);
SELECT id, val, val <~> B'101010' AS distance FROM t ORDER BY val <~> B'101010';
SELECT distance, array_agg(id ORDER BY id) AS ids FROM (
  SELECT id, val <~> B'111111' AS distance FROM t ORDER BY val <~> B'111111') s
  GROUP BY distance ORDER BY distance;
SELECT COUNT(*) FROM (SELECT id FROM t ORDER BY val <~> (SELECT NULL::bit(6))) s;
SELECT id FROM t ORDER BY val <~> B'101' LIMIT 1;
SELECT id FROM t ORDER BY val <~> B'1010101' LIMIT 1;
DROP INDEX t_one;

-- two lists, both probed
CREATE INDEX t_two ON t USING ivfflat (val bit_hamming_ops) WITH (lists = 2);
INSERT INTO t VALUES (10, B'111110');
SET ivfflat.probes = 2;
SELECT distance, array_agg(id ORDER BY id) AS ids FROM (
  SELECT id, val <~> B'101010' AS distance FROM t ORDER BY val <~> B'101010') s
  GROUP BY distance ORDER BY distance;
SELECT distance, COUNT(*) FROM (
  SELECT val <~> B'000000' AS distance FROM t ORDER BY val <~> B'000000' LIMIT 3) s
  GROUP BY distance ORDER BY distance;
SET ivfflat.probes = 1;
SELECT COUNT(*) <= 8 AS at_most_all FROM (SELECT id FROM t ORDER BY val <~> B'101010') s;
DROP TABLE t;

-- more rows: 64-bit values from an integer sequence, four lists, all probed
CREATE TABLE w (id int, val bit(64));
INSERT INTO w SELECT i, ((i * 40503) # (i << 17))::bit(64) FROM generate_series(1, 300) i;
CREATE INDEX w_val ON w USING ivfflat (val bit_hamming_ops) WITH (lists = 4);
INSERT INTO w SELECT i, ((i * 40503) # (i << 17))::bit(64) FROM generate_series(301, 330) i;
SET ivfflat.probes = 4;
SELECT val <~> (12345::bigint)::bit(64) AS distance, COUNT(*)
  FROM (SELECT val FROM w ORDER BY val <~> (12345::bigint)::bit(64) LIMIT 25) s
  GROUP BY 1 ORDER BY 1;
SELECT COUNT(*) FROM (SELECT id FROM w ORDER BY val <~> (0::bigint)::bit(64)) s;
SELECT id, val <~> ((7 * 40503) # (7 << 17))::bit(64) AS distance
  FROM w ORDER BY val <~> ((7 * 40503) # (7 << 17))::bit(64) LIMIT 1;
SET ivfflat.probes = 1;
DROP TABLE w;

-- varbit has no fixed length
CREATE TABLE v (id int, val varbit(6));
INSERT INTO v VALUES (1, B'1100'), (2, B'111111'), (3, B'000001'), (4, NULL);
CREATE INDEX ON v USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
CREATE INDEX ON v USING ivfflat ((val::bit) bit_hamming_ops) WITH (lists = 1);
CREATE INDEX ON v USING ivfflat ((val::bit(64001)) bit_hamming_ops) WITH (lists = 1);
CREATE INDEX v_fixed ON v USING ivfflat ((val::bit(6)) bit_hamming_ops) WITH (lists = 1);
SELECT id FROM v ORDER BY val::bit(6) <~> B'110000';
DROP TABLE v;

-- length
CREATE TABLE d (val bit(64000));
CREATE INDEX ON d USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
DROP TABLE d;

-- the longest values take an index page each
CREATE TABLE big (id int, val bit(64000));
INSERT INTO big SELECT n, (repeat('1', n) || repeat('0', 64000 - n))::bit(64000)
  FROM unnest(ARRAY[0, 10, 30]) n;
CREATE INDEX big_val ON big USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
INSERT INTO big VALUES (100, (repeat('1', 100) || repeat('0', 63900))::bit(64000));
SELECT id, val <~> (repeat('1', 12) || repeat('0', 63988))::bit(64000) AS distance
  FROM big ORDER BY val <~> (repeat('1', 12) || repeat('0', 63988))::bit(64000);
SELECT pg_relation_size('big_val') / current_setting('block_size')::int AS pages;
DROP TABLE big;

CREATE TABLE d (val bit(64001));
CREATE INDEX ON d USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
DROP TABLE d;

CREATE TABLE d (id int, val bit(1));
INSERT INTO d VALUES (1, B'1'), (2, B'0'), (3, NULL);
CREATE INDEX ON d USING ivfflat (val bit_hamming_ops) WITH (lists = 1);
SELECT id FROM d ORDER BY val <~> B'1';
DROP TABLE d;

-- memory: 64000 bits take as much room per center as 2000 dimensions of vector
SET maintenance_work_mem = '1MB';
CREATE TABLE d (val bit(64000));
CREATE INDEX ON d USING ivfflat (val bit_hamming_ops) WITH (lists = 140);
CREATE INDEX ON d USING ivfflat (val bit_hamming_ops) WITH (lists = 120);
DROP TABLE d;
RESET maintenance_work_mem;
