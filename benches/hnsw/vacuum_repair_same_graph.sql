-- Search repair (pgvector's) against local repair (hnsw.vacuum_repair = local) on the same
-- graph: two copies of `items` (id int4, embedding vector) indexed by serial builds after the
-- same setseed(), which draw the same levels and so build the same graph. Each round deletes
-- the same further tenth of both (id % 10 = round - 1), VACUUMs one copy with each repair
-- (timed), and measures recall@10 at ef_search 40 over the first :queries rows of `queries`
-- against exact answers over the rows left. Our library only (pgvector has no local repair).
--
--   psql -v queries=300 -v rounds=3 -d DATABASE -f benches/hnsw/vacuum_repair_same_graph.sql
\set ON_ERROR_STOP on
\timing off
SET client_min_messages = warning;
DROP TABLE IF EXISTS vr_search, vr_local, vr_report;
CREATE TABLE vr_search AS SELECT id, embedding FROM items ORDER BY id;
CREATE TABLE vr_local AS SELECT id, embedding FROM items ORDER BY id;
CREATE TABLE vr_report (round int, repair text, seconds float8, recall float8);
SET max_parallel_maintenance_workers = 0;
SET maintenance_work_mem = '2GB';
SELECT setseed(0.5);
CREATE INDEX vr_search_idx ON vr_search USING hnsw (embedding vector_l2_ops);
SELECT setseed(0.5);
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

CREATE OR REPLACE PROCEDURE vr_round(r int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  EXECUTE format('DELETE FROM vr_search WHERE id %% 10 = %s', r - 1);
  EXECUTE format('DELETE FROM vr_local WHERE id %% 10 = %s', r - 1);
  COMMIT;
END $$;

SET hnsw.ef_search = 40;
-- The same graph: both indexes answer every query alike before the deletes.
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE a = b) AS "queries answered alike", count(*) AS queries
  FROM (SELECT array(SELECT id FROM vr_search ORDER BY embedding <-> q.embedding LIMIT 10) a,
               array(SELECT id FROM vr_local ORDER BY embedding <-> q.embedding LIMIT 10) b
          FROM queries q WHERE q.id <= :queries) s;
RESET enable_seqscan;
-- psql has no loops: each round is spelled out up to :rounds (at most 3).
CALL vr_round(1);
SET hnsw.vacuum_repair = search;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_search;
INSERT INTO vr_report SELECT 1, 'search', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_search', :queries);
SET hnsw.vacuum_repair = local;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_local;
INSERT INTO vr_report SELECT 1, 'local', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_local', :queries);
SELECT :rounds >= 2 AS more \gset
\if :more
CALL vr_round(2);
SET hnsw.vacuum_repair = local;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_local;
INSERT INTO vr_report SELECT 2, 'local', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_local', :queries);
SET hnsw.vacuum_repair = search;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_search;
INSERT INTO vr_report SELECT 2, 'search', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_search', :queries);
\endif
SELECT :rounds >= 3 AS more \gset
\if :more
CALL vr_round(3);
SET hnsw.vacuum_repair = search;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_search;
INSERT INTO vr_report SELECT 3, 'search', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_search', :queries);
SET hnsw.vacuum_repair = local;
SELECT clock_timestamp() AS t0 \gset
VACUUM vr_local;
INSERT INTO vr_report SELECT 3, 'local', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), vr_recall('vr_local', :queries);
\endif
RESET hnsw.vacuum_repair;
SELECT round, repair, round(seconds::numeric, 1) AS seconds, round(recall::numeric, 4) AS recall
  FROM vr_report ORDER BY round, repair DESC;
SELECT s.round, round((l.seconds / s.seconds)::numeric, 3) AS "local ÷ search time",
       round((l.recall - s.recall)::numeric, 4) AS "local − search recall"
  FROM vr_report s JOIN vr_report l ON l.round = s.round AND l.repair = 'local'
  WHERE s.repair = 'search' ORDER BY s.round;
DROP TABLE vr_search, vr_local, vr_report;
DROP FUNCTION vr_recall(regclass, int);
DROP PROCEDURE vr_round(int);
