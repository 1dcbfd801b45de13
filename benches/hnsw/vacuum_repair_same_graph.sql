-- Search repair (pgvector's) against local repair (hnsw.vacuum_repair = local) on the same
-- graph: two copies of `items` (id int4, embedding vector) indexed by serial builds after the
-- same setseed(), which draw the same levels and so build the same graph. Each round deletes
-- the same further tenth of both (id % 10 = round - 1), VACUUMs one copy with each repair
-- (timed), and measures recall@10 at ef_search 40 over the first :queries rows of `queries`
-- against exact answers over the rows left. Our library only (pgvector has no local repair).
--
--   psql -v queries=300 -v rounds=3 [-v seed=0.5] -d DATABASE -f benches/hnsw/vacuum_repair_same_graph.sql
\set ON_ERROR_STOP on
\if :{?seed}
\else
\set seed 0.5
\endif
\timing off
SET client_min_messages = warning;
DROP TABLE IF EXISTS vr_search, vr_local, vr_report, vr_clock;
CREATE TABLE vr_search AS SELECT id, embedding FROM items ORDER BY id;
CREATE TABLE vr_local AS SELECT id, embedding FROM items ORDER BY id;
CREATE TABLE vr_report (round int, repair text, seconds float8, recall float8);
SET max_parallel_maintenance_workers = 0;
SET maintenance_work_mem = '2GB';
SELECT setseed(:seed);
CREATE INDEX vr_search_idx ON vr_search USING hnsw (embedding vector_l2_ops);
SELECT setseed(:seed);
CREATE INDEX vr_local_idx ON vr_local USING hnsw (embedding vector_l2_ops);
VACUUM ANALYZE vr_search, vr_local;

CREATE OR REPLACE FUNCTION vr_recall(tab regclass, nq int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE q record; approx int[]; exact int[]; hits int := 0; total int := 0;
BEGIN
  FOR q IN SELECT id, embedding FROM queries WHERE id <= nq ORDER BY id LOOP
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_seqscan', 'off', true);
    EXECUTE format('SELECT array(SELECT id FROM %s ORDER BY embedding <-> $1 LIMIT 10)', tab)
      INTO approx USING q.embedding;
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('enable_seqscan', 'on', true);
    EXECUTE format('SELECT array(SELECT id FROM %s ORDER BY embedding <-> $1 LIMIT 10)', tab)
      INTO exact USING q.embedding;
    hits := hits + (SELECT count(*) FROM unnest(approx) a WHERE a = ANY (exact));
    total := total + cardinality(exact);
  END LOOP;
  RETURN hits::float8 / total;
END $$;

SET hnsw.ef_search = 40;
-- The same graph: both indexes answer every query alike before the deletes.
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE a = b) AS "queries answered alike", count(*) AS queries
  FROM (SELECT array(SELECT id FROM vr_search ORDER BY embedding <-> q.embedding LIMIT 10) a,
               array(SELECT id FROM vr_local ORDER BY embedding <-> q.embedding LIMIT 10) b
          FROM queries q WHERE q.id <= :queries) s;
RESET enable_seqscan;

-- The rounds, one statement at a time (VACUUM cannot run in a function): delete the same tenth
-- from both copies, then VACUUM each with its repair, the order alternating, timing the VACUUM
-- and measuring recall after it.
CREATE TABLE vr_clock (t0 timestamptz, t1 timestamptz);
INSERT INTO vr_clock VALUES (NULL, NULL);
SELECT s.stmt
  FROM generate_series(1, :rounds) r,
  LATERAL (SELECT CASE WHEN r % 2 = 1 THEN ARRAY['search', 'local']
                       ELSE ARRAY['local', 'search'] END) o(repairs),
  LATERAL (
    SELECT 0 AS step, format('DELETE FROM vr_search WHERE id %% 10 = %s', r - 1) AS stmt
    UNION ALL SELECT 1, format('DELETE FROM vr_local WHERE id %% 10 = %s', r - 1)
    UNION ALL
    SELECT 10 * u.k + v.j, v.x
      FROM unnest(o.repairs) WITH ORDINALITY AS u(repair, k),
      LATERAL (VALUES
        (1, format('SET hnsw.vacuum_repair = %s', u.repair)),
        (2, 'UPDATE vr_clock SET t0 = clock_timestamp()'),
        (3, format('VACUUM vr_%s', u.repair)),
        (4, 'UPDATE vr_clock SET t1 = clock_timestamp()'),
        (5, format('INSERT INTO vr_report SELECT %s, %L, '
                   '(SELECT extract(epoch FROM t1 - t0) FROM vr_clock), vr_recall(%L, %s)',
                   r, u.repair, 'vr_' || u.repair, :queries))) v(j, x)
  ) s
  ORDER BY r, s.step \gexec
RESET hnsw.vacuum_repair;
SELECT round, repair, round(seconds::numeric, 1) AS seconds, round(recall::numeric, 4) AS recall
  FROM vr_report ORDER BY round, repair DESC;
SELECT s.round, round((l.seconds / s.seconds)::numeric, 3) AS "local ÷ search time",
       round((l.recall - s.recall)::numeric, 4) AS "local − search recall"
  FROM vr_report s JOIN vr_report l ON l.round = s.round AND l.repair = 'local'
  WHERE s.repair = 'search' ORDER BY s.round;
DROP TABLE vr_search, vr_local, vr_report, vr_clock;
DROP FUNCTION vr_recall(regclass, int);
