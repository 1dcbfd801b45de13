-- avg() and sum() in a parallel plan whose workers all saw no rows: each hands over the
-- initial state {0}, and the combine step must accept two of them. Not in pgvector: 0.8.6
-- fails here with "vector must have at least 1 dimension" (fixed after 0.8.6), and so did
-- a worker that drew no rows of a larger table, now and then. Called directly, the combine
-- functions keep 0.8.6's error (vector_aggregates).
CREATE TABLE agg_empty (id int, v vector(3), h halfvec(3));
INSERT INTO agg_empty SELECT i, ARRAY[i % 7, 1, -1], ARRAY[i % 5, 2, -2] FROM generate_series(1, 5000) i;
ANALYZE agg_empty;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT avg(v), avg(h) FROM agg_empty WHERE id * 0 > 1;
SELECT avg(v), sum(v), avg(h), sum(h), count(*) FROM agg_empty WHERE id * 0 > 1;
SELECT avg(v), avg(h), count(*) FROM agg_empty;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SELECT vector_combine('{0}', '{0}');
SELECT halfvec_combine('{0}', '{0}');
DROP TABLE agg_empty;
