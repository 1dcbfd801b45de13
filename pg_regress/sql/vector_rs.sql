-- The companion extension vector_rs: this library's additions, outside pgvector's catalog, and
-- vector_going_back_check(), which says what stops this database from going back to pgvector's
-- library and fixes what it can. Not in pgvector: expected output is ours.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector_rs;
RESET client_min_messages;

-- `vector` holds exactly pgvector's objects; the additions belong to vector_rs
SELECT e.extname, e.extversion, count(*) AS functions
  FROM pg_extension e
  JOIN pg_depend d ON d.refobjid = e.oid AND d.deptype = 'e' AND d.classid = 'pg_proc'::regclass
  WHERE e.extname IN ('vector', 'vector_rs')
  GROUP BY 1, 2 ORDER BY 1;
SELECT p.oid::regprocedure
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'vector_rs'
  ORDER BY 1::text;
SELECT name, version, superuser, relocatable, requires FROM pg_available_extension_versions
  WHERE name = 'vector_rs';
-- vector cannot be dropped from under it
DROP EXTENSION vector;

-- a clean database: only the catalog and the last step
SELECT * FROM vector_going_back_check();

-- one database prepared with each kind of finding
CREATE TABLE gb_items (id int, v vector(3), h halfvec(3));
INSERT INTO gb_items SELECT i, ARRAY[i, i + 1, i * 2], ARRAY[i, 1, i % 7] FROM generate_series(1, 200) i;
CREATE INDEX gb_rabitq2 ON gb_items USING hnsw (v vector_l2_ops) WITH (quantization = 'rabitq2');
CREATE INDEX gb_rabitq8 ON gb_items USING hnsw (h halfvec_cosine_ops) WITH (m = 8, quantization = 'rabitq8');
CREATE INDEX gb_none ON gb_items USING hnsw (v vector_cosine_ops) WITH (quantization = 'none');
CREATE INDEX gb_plain ON gb_items USING hnsw (v vector_ip_ops) WITH (m = 8);
CREATE INDEX gb_ivf ON gb_items USING ivfflat (v vector_l2_ops) WITH (lists = 4);
CREATE VIEW gb_stats AS SELECT hops, reranked FROM hnsw_last_scan_stats();
CREATE MATERIALIZED VIEW gb_ivf_stats AS SELECT lists FROM ivfflat_last_scan_stats();
CREATE ROLE regress_gb_role;
ALTER DATABASE contrib_regression SET hnsw.beam_width = 4;
ALTER ROLE regress_gb_role SET ivfflat.io_method = off;
ALTER ROLE regress_gb_role IN DATABASE contrib_regression SET hnsw.rerank_candidates = 8;
-- pgvector's own settings are not findings
ALTER ROLE regress_gb_role SET hnsw.ef_search = 100;
ALTER ROLE regress_gb_role IN DATABASE contrib_regression SET ivfflat.probes = 3;
ALTER SYSTEM SET hnsw.vacuum_repair = 'search';
ALTER SYSTEM SET hnsw.max_scan_tuples = 1000;

SELECT status, regexp_replace(object, 'in .*postgresql.auto.conf', 'in postgresql.auto.conf') AS object,
       finding, action
  FROM vector_going_back_check();

-- the check alone changes nothing
SELECT c.relname, c.reloptions FROM pg_class c
  WHERE c.relname LIKE 'gb\_%' AND c.relkind = 'i' ORDER BY 1;

-- a non-superuser cannot read the configuration files: said so, not an error
CREATE ROLE regress_gb_reader;
GRANT SELECT ON gb_items TO regress_gb_reader;
SET ROLE regress_gb_reader;
SELECT status, object, finding, action FROM vector_going_back_check() WHERE object = 'configuration files';
RESET ROLE;

-- fix => true rebuilds the quantized indexes in pgvector's format and resets the settings
SELECT status, regexp_replace(object, 'in .*postgresql.auto.conf', 'in postgresql.auto.conf') AS object,
       action
  FROM vector_going_back_check(fix => true);
SELECT c.relname, c.reloptions, pg_get_indexdef(c.oid) FROM pg_class c
  WHERE c.relname LIKE 'gb\_%' AND c.relkind = 'i' ORDER BY 1;
SELECT s.setdatabase <> 0 AS in_database, s.setrole <> 0 AS of_role,
       array(SELECT c FROM unnest(s.setconfig) c WHERE c ~ '^(hnsw|ivfflat)\.') AS settings
  FROM pg_db_role_setting s
  WHERE s.setrole IN (0, 'regress_gb_role'::regrole)
    AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
  ORDER BY 1, 2;
-- the rebuilt indexes answer as a sequential scan does
DROP INDEX gb_ivf;
SET enable_seqscan = off;
SET hnsw.ef_search = 200;
EXPLAIN (COSTS OFF) SELECT id FROM gb_items ORDER BY v <-> '[10.3, 11.2, 20.1]' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM gb_items ORDER BY h <=> '[10, 1, 3]' LIMIT 5;
SELECT array(SELECT id FROM gb_items ORDER BY v <-> '[10.3, 11.2, 20.1]' LIMIT 5) AS index_answer;
SELECT array(SELECT id FROM (SELECT id FROM gb_items ORDER BY h <=> '[10, 1, 3]' LIMIT 5) s ORDER BY id)
  AS index_answer;
RESET enable_seqscan;
SET enable_indexscan = off;
SELECT array(SELECT id FROM gb_items ORDER BY v <-> '[10.3, 11.2, 20.1]' LIMIT 5) AS exact_answer;
SELECT array(SELECT id FROM (SELECT id FROM gb_items ORDER BY h <=> '[10, 1, 3]' LIMIT 5) s ORDER BY id)
  AS exact_answer;
RESET enable_indexscan;
RESET hnsw.ef_search;

-- what remains is the user's to do
DROP EXTENSION vector_rs;
DROP VIEW gb_stats;
DROP MATERIALIZED VIEW gb_ivf_stats;
ALTER SYSTEM RESET hnsw.vacuum_repair;
ALTER SYSTEM RESET hnsw.max_scan_tuples;
SELECT * FROM vector_going_back_check();

-- then the extension goes, leaving pgvector's catalog and every index
DROP EXTENSION vector_rs;
SELECT extname, extversion FROM pg_extension WHERE extname LIKE 'vector%' ORDER BY 1;
SELECT count(*) AS indexes FROM pg_indexes WHERE tablename = 'gb_items';

DROP TABLE gb_items;
DROP ROLE regress_gb_reader;
ALTER ROLE regress_gb_role RESET ALL;
ALTER ROLE regress_gb_role IN DATABASE contrib_regression RESET ALL;
DROP ROLE regress_gb_role;
SET client_min_messages = warning;
CREATE EXTENSION vector_rs;
RESET client_min_messages;
