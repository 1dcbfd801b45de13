-- Prints the query script for pgvector_index_on_ours.sh (run with psql -At on the pgvector
-- server, so the literal query values are fixed once for both servers).
WITH lit AS (
  SELECT q,
         quote_literal(x::vector(16)::text) || '::vector(16)' AS vec,
         quote_literal(x::halfvec(16)::text) || '::halfvec(16)' AS half,
         quote_literal((SELECT string_agg(CASE WHEN e > (k * 0.25 - 0.1) THEN '1' ELSE '0' END, '' ORDER BY k, d)
                        FROM unnest(x) WITH ORDINALITY u(e, d), generate_series(0, 3) k)) || '::bit(64)' AS bits,
         quote_literal((SELECT array_agg(CASE WHEN d % 6 = q % 6 OR abs(x[1 + d % 16]) > 0.9
                                              THEN x[1 + d % 16] ELSE 0 END ORDER BY d)
                        FROM generate_series(0, 99) d)::vector(100)::sparsevec(100)::text) || '::sparsevec(100)' AS sparse,
         quote_literal((SELECT array_agg(x[1 + d % 16] + d * 0.001 ORDER BY d)
                        FROM generate_series(0, 1499) d)::vector(1500)::text) || '::vector(1500)' AS big
  FROM queries
),
tabs(t, kind, op, typ) AS (VALUES
  ('v_l2_16', 'vec', '<->', 'vector'), ('v_l2_4', 'vec', '<->', 'vector'),
  ('v_ip_8', 'vec', '<#>', 'vector'), ('v_cos_16', 'vec', '<=>', 'vector'),
  ('v_l1_24', 'vec', '<+>', 'vector'),
  ('h_l2_16', 'half', '<->', 'halfvec'), ('h_ip_6', 'half', '<#>', 'halfvec'),
  ('h_cos_12', 'half', '<=>', 'halfvec'), ('h_l1_16', 'half', '<+>', 'halfvec'),
  ('b_ham_16', 'bits', '<~>', 'bit'), ('b_jac_8', 'bits', '<%>', 'bit'),
  ('s_l2_16', 'sparse', '<->', 'sparsevec'), ('s_ip_16', 'sparse', '<#>', 'sparsevec'),
  ('s_cos_5', 'sparse', '<=>', 'sparsevec'), ('s_l1_16', 'sparse', '<+>', 'sparsevec'),
  ('v_big_40', 'big', '<->', 'vector')
),
-- Settings, filter and LIMIT of each scenario.
scen(sid, settings, filter, lim) AS (VALUES
  (1, 'SET hnsw.ef_search = 10; SET hnsw.iterative_scan = off;', '', 10),
  (2, 'SET hnsw.ef_search = 40; SET hnsw.iterative_scan = off;', '', 10),
  (3, 'SET hnsw.ef_search = 200; SET hnsw.iterative_scan = off;', '', 25),
  (4, 'SET hnsw.ef_search = 40; SET hnsw.iterative_scan = off;', '', 60),
  (5, 'SET hnsw.ef_search = 10; SET hnsw.iterative_scan = relaxed_order;', 'WHERE cat = 3', 20),
  (6, 'SET hnsw.ef_search = 20; SET hnsw.iterative_scan = strict_order;', 'WHERE cat IN (1, 2)', 30),
  (7, 'SET hnsw.ef_search = 16; SET hnsw.iterative_scan = relaxed_order; SET hnsw.max_scan_tuples = 50;',
      'WHERE cat = 3', 40),
  (8, 'SET hnsw.ef_search = 5; SET hnsw.iterative_scan = strict_order; SET hnsw.max_scan_tuples = 20000;',
      'WHERE id % 50 = 7', 100)
),
lines AS (
  -- One EXPLAIN per table: the index must be used on both servers.
  SELECT t, 0 AS sid, 0 AS q,
         format('SET hnsw.ef_search = 40; SET hnsw.iterative_scan = off; EXPLAIN (COSTS OFF) SELECT id FROM %s ORDER BY v %s %s LIMIT 10;',
                t, op, (SELECT CASE kind WHEN 'vec' THEN vec WHEN 'half' THEN half WHEN 'bits' THEN bits
                                         WHEN 'sparse' THEN sparse ELSE big END FROM lit WHERE q = 1)) AS line
  FROM tabs
  UNION ALL
  SELECT t, sid, lit.q,
         format('%s SELECT %L, array(SELECT id FROM %s %s ORDER BY v %s %s LIMIT %s);',
                settings, t || ' s' || sid || ' q' || lit.q, t, filter, op,
                CASE kind WHEN 'vec' THEN vec WHEN 'half' THEN half WHEN 'bits' THEN bits
                          WHEN 'sparse' THEN sparse ELSE big END, lim)
  FROM tabs, scen, lit
  WHERE (sid <= 4 OR lit.q % 3 = sid % 3 OR t IN ('v_l2_16', 'h_cos_12', 's_ip_16', 'b_jac_8'))
  UNION ALL
  -- Reset what the scenarios changed.
  SELECT t, 11, 0, 'RESET hnsw.max_scan_tuples;' FROM tabs
  UNION ALL
  -- NULL query (through an InitPlan, so the planner cannot fold it): every distance is 0,
  -- results come in graph order.
  SELECT t, 90, 0,
         format('SET hnsw.ef_search = 40; SET hnsw.iterative_scan = off; EXPLAIN (COSTS OFF) SELECT id FROM %s ORDER BY v %s (SELECT NULL::%s) LIMIT 10; SELECT %L, array(SELECT id FROM %s ORDER BY v %s (SELECT NULL::%s) LIMIT 10);',
                t, op, typ, t || ' null', t, op, typ)
  FROM tabs
  UNION ALL
  SELECT t, 91, 0,
         format('SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order; SELECT %L, array(SELECT id FROM %s WHERE cat = 5 ORDER BY v %s (SELECT NULL::%s) LIMIT 30);',
                t || ' null relaxed', t, op, typ)
  FROM tabs
)
SELECT line FROM lines ORDER BY t, sid, q;

-- Zero query for cosine (normalizes to zero: all distances equal).
SELECT format('SET hnsw.ef_search = 40; SET hnsw.iterative_scan = off; SELECT %L, array(SELECT id FROM %s ORDER BY v <=> %s LIMIT 10);',
              t || ' zero', t, z)
FROM (VALUES ('v_cos_16', '''[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]''::vector(16)'),
             ('h_cos_12', '''[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]''::halfvec(16)'),
             ('s_cos_5', '''{}/100''::sparsevec(100)')) z(t, z);

-- Query of another dimension: the distance function's error.
SELECT 'SET hnsw.iterative_scan = off; SELECT array(SELECT id FROM v_l2_16 ORDER BY v <-> ''[1,2,3]'' LIMIT 3);';
SELECT 'SELECT array(SELECT id FROM h_l2_16 ORDER BY v <-> ''[1,2,3]''::halfvec LIMIT 3);';
SELECT 'SELECT array(SELECT id FROM s_l2_16 ORDER BY v <-> ''{1:1}/5''::sparsevec LIMIT 3);';
SELECT 'SELECT array(SELECT id FROM b_ham_16 ORDER BY v <~> ''101''::bit(3) LIMIT 3);';

-- A parameterized query (the ORDER BY value comes from an InitPlan) and a rescan per outer row.
SELECT 'SET hnsw.iterative_scan = off; SET hnsw.ef_search = 40; SELECT ''initplan'', array(SELECT id FROM v_l2_16 ORDER BY v <-> (SELECT v FROM v_l2_16 WHERE id = 10) LIMIT 10);';
SELECT 'SELECT ''lateral'', q.id, array(SELECT t.id FROM v_ip_8 t ORDER BY t.v <#> q.v LIMIT 5) FROM v_ip_8 q WHERE q.id IN (1, 2, 3, 17, 400) ORDER BY q.id;';

-- Last, after a marker line: the iterative scans stopped by the memory limit.
SELECT '-- memory-limited';
WITH lit AS (
  SELECT q, quote_literal(x::vector(16)::text) || '::vector(16)' AS vec,
         quote_literal(x::halfvec(16)::text) || '::halfvec(16)' AS half
  FROM queries
),
tabs(t, kind, op) AS (VALUES
  ('v_l2_16', 'vec', '<->'), ('v_l2_4', 'vec', '<->'), ('v_ip_8', 'vec', '<#>'),
  ('v_cos_16', 'vec', '<=>'), ('v_l1_24', 'vec', '<+>'),
  ('h_l2_16', 'half', '<->'), ('h_cos_12', 'half', '<=>')
),
scen(sid, settings, filter, lim) AS (VALUES
  (9, 'SET hnsw.ef_search = 10; SET hnsw.iterative_scan = relaxed_order; SET work_mem = ''64kB'';',
      'WHERE id % 40 = 3', 60),
  (10, 'SET hnsw.ef_search = 10; SET hnsw.iterative_scan = strict_order; SET work_mem = ''64kB''; SET hnsw.scan_mem_multiplier = 2;',
      'WHERE cat = 9', 200)
),
-- Default work_mem and hnsw.max_scan_tuples on the larger graph: which limit ends the scan.
defaults(sid, settings, filter, lim) AS (VALUES
  (11, 'RESET work_mem; RESET hnsw.scan_mem_multiplier; RESET hnsw.max_scan_tuples; SET hnsw.ef_search = 40; SET hnsw.iterative_scan = relaxed_order;',
       'WHERE id % 1000 = 7', 60),
  (12, 'SET hnsw.iterative_scan = strict_order;', 'WHERE id % 1000 = 7', 60),
  (13, 'SET hnsw.max_scan_tuples = 1000000; SET hnsw.iterative_scan = relaxed_order;', 'WHERE id % 1000 = 7', 60)
)
SELECT line FROM (
  SELECT t, sid, lit.q,
         format('%s SELECT %L, array(SELECT id FROM %s %s ORDER BY v %s %s LIMIT %s);',
                settings, t || ' mem' || sid || ' q' || lit.q, t, filter, op,
                CASE kind WHEN 'vec' THEN vec ELSE half END, lim) AS line
  FROM tabs, scen, lit
  UNION ALL
  SELECT 'v_many', sid, lit.q,
         format('%s SELECT %L, array(SELECT id FROM v_many %s ORDER BY v <-> %s LIMIT %s);',
                settings, 'v_many mem' || sid || ' q' || lit.q, filter, vec, lim)
  FROM defaults, lit
) s
ORDER BY t, sid, q;
