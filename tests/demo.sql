-- A short tour of the extension, run by `make demo`.
\pset null '(null)'
\echo '== the extension'
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS vector CASCADE;
RESET client_min_messages;
CREATE EXTENSION vector;      -- pgvector 0.8.6's catalog
CREATE EXTENSION vector_rs;   -- this library's additions: scan counters, verifiers, going-back check
SELECT extname, extversion FROM pg_extension WHERE extname LIKE 'vector%' ORDER BY 1;

\echo '== a table of 3-dimensional embeddings'
CREATE TEMP TABLE items (id int PRIMARY KEY, embedding vector(3), half halfvec(3), sparse sparsevec(3));
INSERT INTO items (id, embedding) VALUES
  (1, '[1,2,3]'), (2, '[4,5,6]'), (3, '[1,1,1]'), (4, '[-1,0,2]'), (5, '[0.5,2.5,3]');
UPDATE items SET half = embedding::halfvec(3), sparse = embedding::sparsevec(3);
SELECT * FROM items ORDER BY id;

\echo '== nearest neighbours of [1,2,2] by each distance'
SELECT id, embedding,
       round((embedding <-> '[1,2,2]')::numeric, 4) AS l2,
       round((embedding <#> '[1,2,2]')::numeric, 4) AS neg_inner,
       round((embedding <=> '[1,2,2]')::numeric, 4) AS cosine,
       round((embedding <+> '[1,2,2]')::numeric, 4) AS l1
FROM items ORDER BY embedding <-> '[1,2,2]' LIMIT 3;

\echo '== the same on halfvec and sparsevec'
SELECT id, half <-> '[1,2,2]' AS half_l2, sparse <-> '{1:1,2:2,3:2}/3' AS sparse_l2
FROM items ORDER BY 2 LIMIT 3;

\echo '== functions, aggregates and bit distances'
SELECT vector_dims(embedding) AS dims, avg(embedding), sum(embedding) FROM items GROUP BY 1;
SELECT l2_normalize('[3,4]'::vector), vector_norm('[3,4]'), subvector('[1,2,3,4]'::vector, 2, 2),
       binary_quantize('[1,-2,3]'::vector);
SELECT '101'::bit(3) <~> '111' AS hamming, '101'::bit(3) <%> '111' AS jaccard;

\echo '== an hnsw index: 5,000 rows of 32 dimensions, searched with ORDER BY ... LIMIT'
CREATE TEMP TABLE docs (id int PRIMARY KEY, embedding vector(32));
INSERT INTO docs
SELECT i, (SELECT array_agg(sin(i * 0.37 + k * 1.3)) FROM generate_series(1, 32) k)::vector
FROM generate_series(1, 5000) i;
CREATE INDEX docs_embedding_idx ON docs USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 64);
ANALYZE docs;
SET hnsw.ef_search = 40;
EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY embedding <-> (SELECT embedding FROM docs WHERE id = 42) LIMIT 5;
SELECT id, round((embedding <-> (SELECT embedding FROM docs WHERE id = 42))::numeric, 4) AS distance
FROM docs ORDER BY embedding <-> (SELECT embedding FROM docs WHERE id = 42) LIMIT 5;
\echo '== iterative scan: a filter that few rows pass still returns 5 rows'
SET hnsw.iterative_scan = relaxed_order;
SELECT count(*) FROM (SELECT id FROM docs WHERE id % 100 = 0
                      ORDER BY embedding <-> (SELECT embedding FROM docs WHERE id = 42) LIMIT 5) t;
RESET hnsw.iterative_scan;
\echo '== what the last search did: hops, elements, blocks hit or read, reads overlapped'
SELECT * FROM hnsw_last_scan_stats();
\echo '== the same counters in EXPLAIN (PostgreSQL 18; hnsw.io_method sets how reads overlap)'
LOAD 'vector';
SHOW hnsw.io_method;
EXPLAIN (ANALYZE, HNSW, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM docs ORDER BY embedding <-> (SELECT embedding FROM docs WHERE id = 42) LIMIT 5;

\echo '== a quantized hnsw index: RaBitQ codes in the graph, exact rerank from the full vectors'
SELECT setseed(0.5);
CREATE TEMP TABLE passages (id int PRIMARY KEY, embedding vector(128));
INSERT INTO passages
SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 128) WHERE i > 0)::vector
FROM generate_series(1, 5000) i;
CREATE INDEX passages_embedding_idx ON passages USING hnsw (embedding vector_cosine_ops)
  WITH (quantization = 'rabitq2');
SELECT id, round((embedding <=> (SELECT embedding FROM passages WHERE id = 42))::numeric, 4) AS distance
FROM passages ORDER BY embedding <=> (SELECT embedding FROM passages WHERE id = 42) LIMIT 5;
\echo '== its last search: codes compared (visited), candidates reranked by exact distance, their blocks'
SELECT hops, visited, reranked, rerank_blocks FROM hnsw_last_scan_stats();
\echo '== can this database go back to pgvector? Not with the quantized index as it is'
SELECT status, object, action FROM vector_going_back_check();

\echo '== errors read like pgvector''s'
\set ON_ERROR_STOP 0
SELECT '[1,2'::vector;
SELECT '[1,2]'::vector <-> '[1,2,3]';
CREATE INDEX ON docs USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 16);
\set ON_ERROR_STOP 1
