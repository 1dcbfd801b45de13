-- avg(halfvec) and sum(halfvec), and their support functions called directly.

CREATE TABLE halfvec_agg (g int, v halfvec);
INSERT INTO halfvec_agg VALUES
  (1, '[1,2,3]'), (1, '[3,4,5]'), (1, NULL), (1, '[0.1,0.2,0.3]'),
  (2, '[65504,-65504]'), (2, '[65504,-65504]'), (2, '[65504,-65504]'),
  (3, NULL),
  (4, '[1,2]'), (4, '[1,2,3]');

SELECT avg(v), sum(v) FROM halfvec_agg WHERE g = 1;
SELECT avg(v) FROM halfvec_agg WHERE g = 2;
SELECT sum(v) FROM halfvec_agg WHERE g = 2;
SELECT avg(v), sum(v) FROM halfvec_agg WHERE g = 3;
SELECT avg(v), sum(v) FROM halfvec_agg WHERE false;
SELECT avg(v) FROM halfvec_agg WHERE g = 4;
SELECT sum(v) FROM halfvec_agg WHERE g = 4;
SELECT g, avg(v), sum(v) FROM halfvec_agg WHERE g IN (1, 3) GROUP BY g ORDER BY g;

-- averages round to the nearest half
SELECT avg(v) FROM (VALUES ('[1,0]'::halfvec), ('[2,0]'), ('[2,5.9604645e-08]')) t(v);
SELECT avg(v) FROM (VALUES ('[0.1]'::halfvec), ('[0.2]'), ('[0.4]')) t(v);
SELECT avg(v) FROM (VALUES ('[-0]'::halfvec), ('[-0]')) t(v);
SELECT sum(v) FROM (VALUES ('[-0]'::halfvec), ('[-0]')) t(v);
SELECT sum(v) FROM (VALUES ('[2048]'::halfvec), ('[1]'), ('[1]')) t(v);
SELECT avg(v) FROM (VALUES ('[2048]'::halfvec), ('[1]'), ('[1]')) t(v);

-- many rows
SELECT avg(('[' || i || ',' || -i || ',' || (i % 7) / 8.0 || ']')::halfvec),
       sum(('[' || (i % 10) || ',' || 1 || ',' || 0.5 || ']')::halfvec)
  FROM generate_series(1, 1000) i;
SELECT avg(v) FROM (SELECT '[60000,-60000]'::halfvec FROM generate_series(1, 100)) t(v);

-- parallel plans use the combine functions
CREATE TABLE halfvec_agg_big (id int, v halfvec);
INSERT INTO halfvec_agg_big
  SELECT i, ('[' || (i % 13) || ',' || (i % 5) * 0.25 || ',' || -(i % 3) || ']')::halfvec
  FROM generate_series(1, 20000) i;
ANALYZE halfvec_agg_big;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT avg(v), sum(v) FROM halfvec_agg_big;
SELECT avg(v) FROM halfvec_agg_big;
-- (sums kept exact in half precision, so the row split between workers does not matter)
SELECT sum(subvector(v, 1, 1) * '[0]' + '[1]' || '[-0.5]') FROM halfvec_agg_big WHERE id <= 2000;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
DROP TABLE halfvec_agg_big;

-- halfvec_accum: {n, sum...} state
SELECT halfvec_accum('{0}', '[1,2,3]');
SELECT halfvec_accum('{1,1,2,3}', '[1,2,3]');
SELECT halfvec_accum('{2,1e308,2}', '[65504,2]');
SELECT halfvec_accum('{1,1.7976931348623157e308}', '[65504]');
SELECT halfvec_accum('{1,-1.7976931348623157e308}', '[-65504]');
SELECT halfvec_accum('{1,Infinity}', '[1]');
SELECT halfvec_accum('{1,1,2}', '[1,2,3]');
SELECT halfvec_accum('{1,1,2,3}', '[1,2]');
SELECT halfvec_accum('{}', '[1]');
SELECT halfvec_accum('{{0}}', '[1]');
SELECT halfvec_accum('{0,NULL}', '[1]');
SELECT halfvec_accum(ARRAY[0]::float8[], '[1]');

-- halfvec_avg: sums / n
SELECT halfvec_avg('{0}');
SELECT halfvec_avg('{0,1,2}');
SELECT halfvec_avg('{2,3,5}');
SELECT halfvec_avg('{3,0.3,-0.3}');
SELECT halfvec_avg('{1,65504}');
SELECT halfvec_avg('{1,65519}');
SELECT halfvec_avg('{1,65520}');
SELECT halfvec_avg('{1,1,-1e6}');
SELECT halfvec_avg('{1,1e39}');
SELECT halfvec_avg('{1,Infinity}');
SELECT halfvec_avg('{1,NaN}');
SELECT halfvec_avg('{1,1e-10}');
SELECT halfvec_avg('{5}');
SELECT halfvec_avg('{}');
SELECT halfvec_avg('{{1,2}}');
SELECT halfvec_avg('{1,NULL}');
SELECT vector_dims(halfvec_avg(array_fill(1::float8, ARRAY[16001])));
SELECT halfvec_avg(array_fill(1::float8, ARRAY[16002]));
-- the state's dimension count wraps around at 16 bits
SELECT halfvec_avg(array_fill(1::float8, ARRAY[65538]));
SELECT halfvec_accum(array_fill(1::float8, ARRAY[65538]), '[1]');
SELECT halfvec_accum(array_fill(1::float8, ARRAY[65539]), '[1]');

-- halfvec_combine: merges two {n, sum...} states
SELECT halfvec_combine('{0}', '{0}');
SELECT halfvec_combine('{0}', '{2,3,4}');
SELECT halfvec_combine('{2,3,4}', '{0}');
SELECT halfvec_combine('{2,3,4}', '{1,1,1}');
SELECT halfvec_combine('{2,3,4}', '{1,1}');
SELECT halfvec_combine('{1,1e308}', '{1,1e308}');
SELECT halfvec_combine('{}', '{1,1}');

DROP TABLE halfvec_agg;
