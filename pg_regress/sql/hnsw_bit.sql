-- hnsw over bit: bit_hamming_ops and bit_jaccard_ops built over existing rows and fed by inserts
-- afterwards, NULL rows and NULL queries, all-zero strings, varbit columns, binary quantization
-- of a vector column, and the 64000-bit limit. Rows are prefixes of ones of distinct lengths so
-- that no two distances to a query tie.

SET enable_seqscan = off;

CREATE TABLE t (id int, val bit(12));
INSERT INTO t VALUES
  (1, B'000000000000'), (2, B'100000000000'), (3, B'110000000000'), (4, NULL),
  (5, B'111000000000'), (6, B'111110000000'), (7, B'111111000000');
CREATE INDEX t_hamming ON t USING hnsw (val bit_hamming_ops);
CREATE INDEX t_jaccard ON t USING hnsw (val bit_jaccard_ops);
INSERT INTO t VALUES (8, B'111111110000'), (9, B'111111111000'), (10, NULL), (11, B'111111111110');

-- hamming
SELECT id, val FROM t ORDER BY val <~> B'111111111111';
SELECT id FROM t ORDER BY val <~> B'000000000000';
SELECT id, val <~> B'111111111111' AS distance FROM t ORDER BY val <~> B'111111111111' LIMIT 3;

-- jaccard (all-zero strings are indexed too)
SELECT id, val FROM t ORDER BY val <%> B'111111111111';
SELECT id FROM t ORDER BY val <%> B'111111111110';
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <%> B'000000000000') s;

-- NULL queries
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <~> (SELECT NULL::bit)) s;
SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY val <%> (SELECT NULL::bit)) s;
SELECT COUNT(*) FROM t;

-- a query of another length
SELECT id FROM t ORDER BY val <~> B'111';
SELECT id FROM t ORDER BY val <%> B'1111111111111';

-- one index scan per outer row
SELECT t.id, (SELECT t2.id FROM t t2 ORDER BY t2.val <~> t.val LIMIT 1) AS nearest
  FROM t WHERE t.val IS NOT NULL ORDER BY t.id;

TRUNCATE t;
SELECT id FROM t ORDER BY val <~> B'111111111111';
INSERT INTO t VALUES (1, B'100000000000'), (2, B'111000000000'), (3, NULL);
SELECT id FROM t ORDER BY val <~> B'111111111111';
SELECT id FROM t ORDER BY val <%> B'111111111111';

DROP TABLE t;

-- varbit columns need a cast to a fixed length
CREATE TABLE t (id int, val varbit(12));
INSERT INTO t VALUES (1, B'1010'), (2, B'1110'), (3, B'0000');
CREATE INDEX ON t USING hnsw (val bit_hamming_ops);
CREATE INDEX ON t USING hnsw ((val::bit(4)) bit_hamming_ops);
CREATE INDEX ON t USING hnsw ((val::bit(64001)) bit_hamming_ops);
SELECT id FROM t ORDER BY val::bit(4) <~> B'1111';
DROP TABLE t;

-- binary quantization of a vector column
CREATE TABLE v (id int, val vector(6));
INSERT INTO v VALUES (1, '[1,-1,-1,-1,-1,-1]'), (2, '[1,2,-3,-4,-5,-6]'), (3, '[1,2,3,4,-5,-6]'),
  (4, '[1,2,3,4,5,-6]'), (5, '[-1,-2,-3,-4,-5,-6]');
CREATE INDEX ON v USING hnsw ((binary_quantize(val)::bit(6)) bit_hamming_ops);
CREATE INDEX ON v USING hnsw ((binary_quantize(val)::bit(6)) bit_jaccard_ops);
SELECT id FROM v ORDER BY binary_quantize(val)::bit(6) <~> binary_quantize('[1,1,1,1,1,1]'::vector);
SELECT id FROM v ORDER BY binary_quantize(val)::bit(6) <%> B'111111';
DROP TABLE v;

-- what CREATE INDEX refuses
CREATE TABLE t (val bit(3));
CREATE INDEX ON t USING hnsw (val);
CREATE INDEX ON t USING hnsw (val vector_l2_ops);
DROP TABLE t;

-- length limit: 64000
CREATE TABLE t (val bit(64000));
CREATE INDEX ON t USING hnsw (val bit_hamming_ops);
CREATE INDEX ON t USING hnsw (val bit_jaccard_ops);
INSERT INTO t SELECT (repeat('1', i * 1000) || repeat('0', 64000 - i * 1000))::bit(64000)
  FROM generate_series(1, 3) i;
SELECT length(replace(val::text, '0', '')) AS ones
  FROM t ORDER BY val <~> (repeat('1', 2100) || repeat('0', 61900))::bit(64000);
SELECT length(replace(val::text, '0', '')) AS ones
  FROM t ORDER BY val <%> (repeat('1', 2900) || repeat('0', 61100))::bit(64000);
DROP TABLE t;

CREATE TABLE t (val bit(64001));
CREATE INDEX ON t USING hnsw (val bit_hamming_ops);
CREATE INDEX ON t USING hnsw (val bit_jaccard_ops);
DROP TABLE t;
