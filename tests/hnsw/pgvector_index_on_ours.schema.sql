-- Tables and hnsw indexes built by pristine pgvector 0.8.6 for pgvector_index_on_ours.sh.
-- Deterministic data (setseed); after the builds some rows are deleted, vacuumed and new rows
-- inserted, so the indexes also hold deleted, reused and multi-TID elements.
CREATE EXTENSION vector;
SET maintenance_work_mem = '256MB';
SET max_parallel_maintenance_workers = 0;
SELECT setseed(0.4242);

-- Base rows: 16-dimensional values in a few clusters, plus duplicates, NULLs and zero vectors.
CREATE TABLE base (id int PRIMARY KEY, cat int, x real[]);
INSERT INTO base
SELECT g, g % 10, a
FROM generate_series(1, 2400) g,
LATERAL (SELECT array_agg(((g % 7) * 0.3 + random() * 0.6 - 0.3)::real ORDER BY d) a
         FROM generate_series(1, 16) d WHERE g > 0) s;
-- Duplicates of the first 60 values (several heap TIDs per element).
INSERT INTO base SELECT 2400 + id, cat, x FROM base WHERE id <= 60;
INSERT INTO base SELECT 2460 + id, cat, x FROM base WHERE id <= 15;

-- Vector tables, one per (operator class, m, ef_construction).
CREATE TABLE v_l2_16 AS SELECT id, cat, x::vector(16) v FROM base;
CREATE TABLE v_l2_4 AS SELECT id, cat, x::vector(16) v FROM base;
CREATE TABLE v_ip_8 AS SELECT id, cat, x::vector(16) v FROM base;
CREATE TABLE v_cos_16 AS SELECT id, cat, x::vector(16) v FROM base;
CREATE TABLE v_l1_24 AS SELECT id, cat, x::vector(16) v FROM base;
INSERT INTO v_l2_16 VALUES (9001, 1, NULL);
INSERT INTO v_cos_16 VALUES (9001, 1, array_fill(0, ARRAY[16])::vector(16)), (9002, 2, NULL);
CREATE INDEX ON v_l2_16 USING hnsw (v vector_l2_ops);
CREATE INDEX ON v_l2_4 USING hnsw (v vector_l2_ops) WITH (m = 4, ef_construction = 10);
CREATE INDEX ON v_ip_8 USING hnsw (v vector_ip_ops) WITH (m = 8, ef_construction = 32);
CREATE INDEX ON v_cos_16 USING hnsw (v vector_cosine_ops);
CREATE INDEX ON v_l1_24 USING hnsw (v vector_l1_ops) WITH (m = 24, ef_construction = 100);

-- halfvec.
CREATE TABLE h_l2_16 AS SELECT id, cat, x::halfvec(16) v FROM base;
CREATE TABLE h_ip_6 AS SELECT id, cat, x::halfvec(16) v FROM base;
CREATE TABLE h_cos_12 AS SELECT id, cat, x::halfvec(16) v FROM base;
CREATE TABLE h_l1_16 AS SELECT id, cat, x::halfvec(16) v FROM base;
INSERT INTO h_cos_12 VALUES (9001, 1, array_fill(0, ARRAY[16])::halfvec(16));
CREATE INDEX ON h_l2_16 USING hnsw (v halfvec_l2_ops);
CREATE INDEX ON h_ip_6 USING hnsw (v halfvec_ip_ops) WITH (m = 6, ef_construction = 20);
CREATE INDEX ON h_cos_12 USING hnsw (v halfvec_cosine_ops) WITH (m = 12, ef_construction = 40);
CREATE INDEX ON h_l1_16 USING hnsw (v halfvec_l1_ops);

-- bit(64): sign bits of four shifted copies of the values.
CREATE TABLE b_ham_16 AS
SELECT id, cat, (SELECT string_agg(CASE WHEN e > (k * 0.25 - 0.1) THEN '1' ELSE '0' END, '' ORDER BY k, d)
                 FROM unnest(x) WITH ORDINALITY u(e, d), generate_series(0, 3) k)::bit(64) v
FROM base;
CREATE TABLE b_jac_8 AS SELECT * FROM b_ham_16;
CREATE INDEX ON b_ham_16 USING hnsw (v bit_hamming_ops);
CREATE INDEX ON b_jac_8 USING hnsw (v bit_jaccard_ops) WITH (m = 8, ef_construction = 16);

-- sparsevec(100): the 16 values spread over 100 dimensions, smallest ones dropped.
CREATE TABLE s_base AS
SELECT id, cat, (SELECT array_agg(CASE WHEN d % 6 = id % 6 OR abs(x[1 + d % 16]) > 0.9
                                       THEN x[1 + d % 16] ELSE 0 END ORDER BY d)
                 FROM generate_series(0, 99) d)::vector(100)::sparsevec(100) v
FROM base;
CREATE TABLE s_l2_16 AS SELECT * FROM s_base;
CREATE TABLE s_ip_16 AS SELECT * FROM s_base;
CREATE TABLE s_cos_5 AS SELECT * FROM s_base;
CREATE TABLE s_l1_16 AS SELECT * FROM s_base;
INSERT INTO s_cos_5 VALUES (9001, 1, '{}/100');
CREATE INDEX ON s_l2_16 USING hnsw (v sparsevec_l2_ops);
CREATE INDEX ON s_ip_16 USING hnsw (v sparsevec_ip_ops);
CREATE INDEX ON s_cos_5 USING hnsw (v sparsevec_cosine_ops) WITH (m = 5, ef_construction = 10);
CREATE INDEX ON s_l1_16 USING hnsw (v sparsevec_l1_ops);

-- Large values: element and neighbor tuples on different pages.
CREATE TABLE v_big_40 AS
SELECT id, cat, (SELECT array_agg(x[1 + d % 16] + d * 0.001 ORDER BY d) FROM generate_series(0, 1499) d)::vector(1500) v
FROM base WHERE id <= 300;
CREATE INDEX ON v_big_40 USING hnsw (v vector_l2_ops) WITH (m = 40, ef_construction = 80);

-- A larger graph for iterative scans that run into hnsw.max_scan_tuples or the memory limit
-- with the default settings.
CREATE TABLE v_many AS
SELECT g id, g % 10 cat,
       (SELECT array_agg(random()::real) FROM generate_series(1, 16) d WHERE g > 0)::vector(16) v
FROM generate_series(1, 30000) g;
CREATE INDEX ON v_many USING hnsw (v vector_l2_ops);

-- Empty graphs: an empty table, and one whose rows were all deleted and vacuumed.
CREATE TABLE v_empty (id int, cat int, v vector(3));
CREATE INDEX ON v_empty USING hnsw (v vector_l2_ops);
CREATE TABLE v_gone AS SELECT g id, g % 10 cat, ARRAY[g, g % 7, 1]::vector(3) v FROM generate_series(1, 200) g;
CREATE INDEX ON v_gone USING hnsw (v vector_l2_ops) WITH (m = 4, ef_construction = 8);
DELETE FROM v_gone;

-- Maintenance by pgvector: delete, vacuum (repairs the graph, frees slots), insert again.
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid
           JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am a ON a.oid = ic.relam
           WHERE a.amname = 'hnsw' LOOP
    EXECUTE format('DELETE FROM %I WHERE id %% 9 = 4', t);
  END LOOP;
END $$;
VACUUM;
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid
           JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am a ON a.oid = ic.relam
           WHERE a.amname = 'hnsw' LOOP
    EXECUTE format('INSERT INTO %I SELECT id + 5000, cat, v FROM %I WHERE id %% 9 = 5 AND id < 1000', t, t);
  END LOOP;
END $$;
ANALYZE;

-- Query values: existing rows, and points between clusters.
CREATE TABLE queries AS
SELECT q, x FROM (
  SELECT row_number() OVER (ORDER BY id) q, x FROM base WHERE id IN (3, 250, 777, 1203, 2405)
  UNION ALL
  SELECT 5 + g, (SELECT array_agg((random() * 2 - 0.3)::real) FROM generate_series(1, 16) d WHERE g > 0)
  FROM generate_series(1, 5) g) s;
