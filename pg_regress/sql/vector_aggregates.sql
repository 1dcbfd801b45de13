-- avg(vector) and sum(vector), their support functions, and parallel aggregation.

CREATE TABLE vector_agg_t (id int, g int, v vector);
INSERT INTO vector_agg_t VALUES
  (1, 1, '[1,2,3]'), (2, 1, '[4,5,6]'), (3, 1, NULL), (4, 2, '[0.1,0.2,0.3]'),
  (5, 2, '[0.3,0.2,0.1]'), (6, 3, '[-1,1,-1]');
SELECT avg(v), sum(v) FROM vector_agg_t;
SELECT g, avg(v), sum(v), count(v) FROM vector_agg_t GROUP BY g ORDER BY g;
SELECT avg(v), sum(v) FROM vector_agg_t WHERE false;
SELECT avg(v), sum(v) FROM vector_agg_t WHERE v IS NULL;
SELECT avg(v ORDER BY id DESC), sum(v ORDER BY id DESC) FROM vector_agg_t;
SELECT avg(v) FILTER (WHERE id > 1), sum(v) FILTER (WHERE id < 3) FROM vector_agg_t;
SELECT id, avg(v) OVER (ORDER BY id), sum(v) OVER (ORDER BY id) FROM vector_agg_t ORDER BY id;
SELECT avg(v) FROM (VALUES ('[1e38,1e38]'::vector), ('[1e38,1e38]'), ('[1e38,1e38]')) x(v);
SELECT avg(v) FROM (VALUES ('[3e38]'::vector), ('[3e38]')) x(v);
SELECT avg(v) FROM (VALUES ('[0.1]'::vector), ('[0.2]'), ('[0.3]')) x(v);
SELECT avg(v) FROM (VALUES ('[1e-45]'::vector), ('[0]')) x(v);
SELECT sum(v) FROM (VALUES ('[3e38]'::vector), ('[3e38]')) x(v);
SELECT avg(v) FROM (VALUES ('[1,2]'::vector), ('[1,2,3]')) x(v);
SELECT sum(v) FROM (VALUES ('[1,2]'::vector), ('[1,2,3]')) x(v);
SELECT avg(v) = array_fill(2.5, ARRAY[16000])::vector, sum(v) = array_fill(10, ARRAY[16000])::vector
FROM (SELECT array_fill(i, ARRAY[16000])::vector FROM generate_series(1, 4) i) x(v);

-- support functions called directly
SELECT vector_accum('{0}', '[1,2]');
SELECT vector_accum('{1,1,2}', '[3,4]');
SELECT vector_accum('{1,1,2}', '[3,4,5]');
SELECT vector_accum('{1,1e308}', '[1e38]');
SELECT vector_accum('{1,1.7976931348623157e308}', '[3e38]');
SELECT vector_accum('{}', '[1]');
SELECT vector_accum('{{0}}', '[1]');
SELECT vector_accum('{NULL}', '[1]');
SELECT vector_accum('{0,NULL}', '[1]');
SELECT vector_avg('{0}');
SELECT vector_avg('{0,1,2}');
SELECT vector_avg('{2,1,3}');
SELECT vector_avg('{4,-1,0.5,1e-30}');
SELECT vector_avg('{1}');
SELECT vector_avg('{0.5,1e38}');
SELECT vector_avg('{1,NaN}');
SELECT vector_avg('{1,Infinity}');
SELECT vector_avg('{}');
SELECT vector_avg('{1,2}'::float8[] || array_fill(1::float8, ARRAY[16000]));
SELECT vector_combine('{0}', '{0}');
SELECT vector_combine('{0}', '{2,3,4}');
SELECT vector_combine('{2,3,4}', '{0}');
SELECT vector_combine('{2,3,4}', '{1,1,1}');
SELECT vector_combine('{2,3,4}', '{1,1,1,1}');
SELECT vector_combine('{1}', '{1}');
SELECT vector_combine('{1,1.7976931348623157e308}', '{1,1.7976931348623157e308}');
SELECT vector_combine('{}', '{1,2}');
SELECT vector_combine('{1,2}', '{{1,2}}');

-- aggregate catalog properties
SELECT a.aggfnoid::regprocedure, a.aggkind, a.aggtransfn, a.aggfinalfn, a.aggcombinefn,
       a.aggserialfn, a.aggdeserialfn, a.aggtranstype::regtype, a.agginitval,
       a.aggfinalmodify, p.proparallel
FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
WHERE a.aggfnoid IN ('avg(vector)'::regprocedure, 'sum(vector)'::regprocedure)
ORDER BY 1::text;

-- parallel aggregation (integer values keep the float sums exact in any order)
CREATE TABLE vector_agg_big (v vector(3));
INSERT INTO vector_agg_big
  SELECT ARRAY[i % 7, -(i % 11), i % 3]::vector FROM generate_series(1, 30000) i;
ANALYZE vector_agg_big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT avg(v), sum(v) FROM vector_agg_big;
SELECT avg(v), sum(v) FROM vector_agg_big;
SELECT count(*), avg(v), sum(v) FROM vector_agg_big WHERE v IS NULL;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET parallel_leader_participation;
SELECT avg(v), sum(v) FROM vector_agg_big;

DROP TABLE vector_agg_t, vector_agg_big;
