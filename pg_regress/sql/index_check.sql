-- hnsw_index_check, hnsw_index_parent_check, ivfflat_index_check, ivfflat_index_parent_check
-- (this library's verifiers; pgvector has none).
-- The NOTICE of unreachable elements depends on the random levels of the build: not shown.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
CREATE TABLE t (id int, v vector(3), h halfvec(3), b bit(5), s sparsevec(5));
INSERT INTO t SELECT i,
    ARRAY[i % 7, (i * 3) % 11, (i * 5) % 13]::vector,
    ARRAY[i % 5, (i * 2) % 7, 1]::halfvec,
    (i % 32)::bit(5),
    format('{%s:%s,%s:1}/5', 1 + i % 4, 1 + i % 9, 5)::sparsevec
    FROM generate_series(1, 400) i;
INSERT INTO t VALUES (1000, NULL, NULL, NULL, NULL), (1001, '[0,0,0]', '[0,0,0]', '00000', '{}/5');
CREATE INDEX t_v_l2 ON t USING hnsw (v vector_l2_ops) WITH (m = 4, ef_construction = 16);
CREATE INDEX t_v_cos ON t USING hnsw (v vector_cosine_ops);
CREATE INDEX t_h_ip ON t USING hnsw (h halfvec_ip_ops);
CREATE INDEX t_b_ham ON t USING hnsw (b bit_hamming_ops);
CREATE INDEX t_s_l2 ON t USING hnsw (s sparsevec_l2_ops);
CREATE INDEX t_expr ON t USING hnsw (((v + '[1,1,1]')::vector(3)) vector_l2_ops) WHERE id % 2 = 0;

SELECT hnsw_index_check('t_v_l2');
SELECT hnsw_index_check('t_v_l2', heapallindexed => true);
SELECT hnsw_index_parent_check('t_v_l2', true);
SELECT i, hnsw_index_check(i, true), hnsw_index_parent_check(i, true)
    FROM unnest(ARRAY['t_v_cos', 't_h_ip', 't_b_ham', 't_s_l2', 't_expr']::regclass[]) i;

-- After deletes, vacuum and inserts into the freed slots.
DELETE FROM t WHERE id % 3 = 0;
SELECT hnsw_index_parent_check('t_v_l2', true);
VACUUM t;
INSERT INTO t SELECT i, ARRAY[i % 3, i % 5, 2]::vector FROM generate_series(2000, 2100) i;
SELECT i, hnsw_index_parent_check(i, true)
    FROM unnest(ARRAY['t_v_l2', 't_v_cos', 't_h_ip', 't_b_ham', 't_s_l2', 't_expr']::regclass[]) i;

-- An empty index.
CREATE TABLE e (v vector(2));
CREATE INDEX e_idx ON e USING hnsw (v vector_l2_ops);
SELECT hnsw_index_parent_check('e_idx', true);

-- Not an hnsw index.
SELECT hnsw_index_check('t');
CREATE INDEX t_id ON t (id);
SELECT hnsw_index_check('t_id');
CREATE INDEX t_ivf ON t USING ivfflat (v vector_l2_ops) WITH (lists = 2);
SELECT hnsw_index_parent_check('t_ivf');
SELECT hnsw_index_check(NULL);
SELECT ivfflat_index_check('t_v_l2');

-- ivfflat indexes, every type and a normalized one, after changes too.
CREATE INDEX t_ivf_cos ON t USING ivfflat (v vector_cosine_ops) WITH (lists = 3);
CREATE INDEX t_ivf_h ON t USING ivfflat (h halfvec_ip_ops) WITH (lists = 4);
CREATE INDEX t_ivf_b ON t USING ivfflat (b bit_hamming_ops) WITH (lists = 2);
SELECT i, ivfflat_index_check(i, true), ivfflat_index_parent_check(i, true)
    FROM unnest(ARRAY['t_ivf', 't_ivf_cos', 't_ivf_h', 't_ivf_b']::regclass[]) i;
DELETE FROM t WHERE id % 5 = 0;
VACUUM t;
INSERT INTO t SELECT i, ARRAY[i % 4, i % 6, 3]::vector, ARRAY[1, i % 3, 2]::halfvec, (i % 8)::bit(5)
    FROM generate_series(3000, 3100) i;
SELECT i, ivfflat_index_parent_check(i, true)
    FROM unnest(ARRAY['t_ivf', 't_ivf_cos', 't_ivf_h', 't_ivf_b']::regclass[]) i;
CREATE TABLE e2 (v vector(2));
CREATE INDEX e2_idx ON e2 USING ivfflat (v vector_l2_ops) WITH (lists = 3);
SELECT ivfflat_index_parent_check('e2_idx', true);

-- Not for PUBLIC, as amcheck's functions.
CREATE ROLE regress_vector_checker;
GRANT SELECT ON t TO regress_vector_checker;
SET ROLE regress_vector_checker;
SELECT hnsw_index_check('t_v_l2');
RESET ROLE;
GRANT EXECUTE ON FUNCTION hnsw_index_check(regclass, boolean) TO regress_vector_checker;
SET ROLE regress_vector_checker;
SELECT hnsw_index_check('t_v_l2', true);
RESET ROLE;

DROP TABLE t, e, e2;
REVOKE EXECUTE ON FUNCTION hnsw_index_check(regclass, boolean) FROM regress_vector_checker;
DROP ROLE regress_vector_checker;
