-- vector_rs: what this library adds to pgvector's catalog. The `vector` extension stays
-- exactly pgvector 0.8.6's, so that pgvector's own update scripts apply to it on either library;
-- everything pgvector lacks lives here, in the same library ($libdir/vector).
\echo Use "CREATE EXTENSION vector_rs" to load this file. \quit

-- Versions 0.8.6.1 to 0.8.6.4 of `vector` held these functions themselves.
DO $guard$
DECLARE
    v text := (SELECT extversion FROM pg_extension WHERE extname = 'vector');
BEGIN
    IF v IN ('0.8.6.1', '0.8.6.2', '0.8.6.3', '0.8.6.4') THEN
        RAISE EXCEPTION 'extension "vector" is at version %, which still holds this library''s functions', v
            USING HINT = 'Run ALTER EXTENSION vector UPDATE first: it moves "vector" onto pgvector''s 0.8.6 catalog.';
    END IF;
END
$guard$;

-- What the last index scan of this session did (README, "Monitoring"). The rerank columns are
-- NULL but for a quantized index.
CREATE FUNCTION hnsw_last_scan_stats(OUT hops bigint, OUT visited bigint, OUT blocks bigint,
    OUT hits bigint, OUT reads bigint, OUT prefetched bigint, OUT unused_prefetches bigint,
    OUT mean_in_flight double precision, OUT heap_prefetches bigint, OUT reranked bigint,
    OUT rerank_blocks bigint, OUT rerank_reads bigint)
    RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION ivfflat_last_scan_stats(OUT lists bigint, OUT pages bigint, OUT hits bigint,
    OUT reads bigint, OUT prefetched bigint, OUT unused_prefetches bigint,
    OUT mean_in_flight double precision, OUT heap_prefetches bigint)
    RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- amcheck-style verifiers (README, "Monitoring"). Like amcheck's functions they are not for
-- PUBLIC; grant EXECUTE to the roles that may run them.
CREATE FUNCTION hnsw_index_check(index regclass, heapallindexed boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;

CREATE FUNCTION hnsw_index_parent_check(index regclass, heapallindexed boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;

CREATE FUNCTION ivfflat_index_check(index regclass, heapallindexed boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;

CREATE FUNCTION ivfflat_index_parent_check(index regclass, heapallindexed boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION hnsw_index_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION hnsw_index_parent_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION ivfflat_index_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION ivfflat_index_parent_check(regclass, boolean) FROM PUBLIC;

-- Can this database go back to pgvector's library, and restore a pg_dump on pgvector alone?
-- One row per finding, in the order to act on them:
--   blocks     pgvector cannot use it, or a dump of it does not restore there
--   warns      works on pgvector, with a WARNING in every session that loads it
--   fixed      was a finding; this call (fix => true) ran the action shown
--   last step  DROP EXTENSION vector_rs, once nothing else blocks
--   ok         the `vector` catalog, and the oldest pgvector release that can serve it
-- fix => true runs the actions it can: indexes are rebuilt with REINDEX (not CONCURRENTLY, which
-- cannot run inside a function), so writes to their tables wait meanwhile.
CREATE FUNCTION vector_going_back_check(fix boolean DEFAULT false)
    RETURNS TABLE (status text, object text, finding text, action text)
    LANGUAGE plpgsql VOLATILE AS $check$
DECLARE
    -- pgvector 0.8.6's settings; any other hnsw.* or ivfflat.* name is this library's, and
    -- pgvector's library removes it with a WARNING when it loads.
    pgvector_settings constant text[] := ARRAY['hnsw.ef_search', 'hnsw.iterative_scan',
        'hnsw.max_scan_tuples', 'hnsw.scan_mem_multiplier', 'ivfflat.probes',
        'ivfflat.iterative_scan', 'ivfflat.max_probes'];
    r record;
    cmd text;
BEGIN
    status := 'ok';
    object := 'extension vector ' || (SELECT extversion FROM pg_extension WHERE extname = 'vector');
    finding := 'pgvector''s catalog';
    action := format('go back to pgvector %s or later', (SELECT extversion FROM pg_extension
        WHERE extname = 'vector'));
    RETURN NEXT;

    -- Indexes with the quantization option: a quantized graph is not pgvector's format, and
    -- pgvector's CREATE INDEX rejects the option itself, even 'none'.
    FOR r IN
        SELECT c.oid::regclass AS idx, t.oid::regclass AS tbl, o.option_value AS quantization
          FROM pg_class c
          JOIN pg_am a ON a.oid = c.relam AND a.amname = 'hnsw'
          JOIN pg_index i ON i.indexrelid = c.oid
          JOIN pg_class t ON t.oid = i.indrelid
          CROSS JOIN LATERAL pg_options_to_table(c.reloptions) o
         WHERE o.option_name = 'quantization'
         ORDER BY c.oid::regclass::text
    LOOP
        object := format('index %s on %s', r.idx, r.tbl);
        IF r.quantization = 'none' THEN
            finding := 'option quantization = none: the index is in pgvector''s format, but '
                || 'a dump of it does not restore on pgvector (unrecognized parameter "quantization")';
            cmd := format('ALTER INDEX %s RESET (quantization)', r.idx);
            action := cmd;
        ELSE
            finding := format('quantized (%s): pgvector refuses it (hnsw index is not valid), and '
                || 'a dump of it does not restore there (unrecognized parameter "quantization")',
                r.quantization);
            cmd := format('ALTER INDEX %1$s RESET (quantization); REINDEX INDEX %1$s', r.idx);
            action := format('ALTER INDEX %1$s RESET (quantization); REINDEX INDEX CONCURRENTLY %1$s',
                r.idx);
        END IF;
        status := 'blocks';
        IF fix THEN
            EXECUTE cmd;
            status := 'fixed';
            action := cmd;
        END IF;
        RETURN NEXT;
    END LOOP;

    -- Objects of the database that use this extension's functions (views, indexes on future
    -- operator classes): DROP EXTENSION vector_rs refuses while they exist.
    FOR r IN
        SELECT DISTINCT CASE WHEN d.classid = 'pg_rewrite'::regclass
                   THEN (SELECT pg_describe_object('pg_class'::regclass, w.ev_class, 0)
                           FROM pg_rewrite w WHERE w.oid = d.objid)
                   ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS dependent,
               pg_describe_object(d.refclassid, d.refobjid, 0) AS used
          FROM pg_depend d
          JOIN pg_depend m ON m.classid = d.refclassid AND m.objid = d.refobjid AND m.deptype = 'e'
          JOIN pg_extension e ON e.oid = m.refobjid AND e.extname = 'vector_rs'
         WHERE d.deptype = 'n'
         ORDER BY 1, 2
    LOOP
        status := 'blocks';
        object := r.dependent;
        finding := format('uses %s, which pgvector does not have', r.used);
        action := 'drop it (or recreate it without that function) before DROP EXTENSION vector_rs';
        RETURN NEXT;
    END LOOP;

    -- This library's settings stored for databases and roles.
    FOR r IN
        SELECT s.setdatabase, s.setrole, split_part(c, '=', 1) AS name
          FROM pg_db_role_setting s, unnest(s.setconfig) c
         WHERE split_part(c, '=', 1) ~ '^(hnsw|ivfflat)\.'
           AND NOT split_part(c, '=', 1) = ANY (pgvector_settings)
         ORDER BY 1, 2, 3
    LOOP
        IF r.setrole = 0 THEN
            cmd := format('ALTER DATABASE %I RESET %s',
                (SELECT datname FROM pg_database WHERE oid = r.setdatabase), r.name);
            object := format('setting %s of database %s',
                r.name, (SELECT datname FROM pg_database WHERE oid = r.setdatabase));
        ELSIF r.setdatabase = 0 THEN
            cmd := format('ALTER ROLE %s RESET %s', r.setrole::regrole, r.name);
            object := format('setting %s of role %s', r.name, r.setrole::regrole);
        ELSE
            cmd := format('ALTER ROLE %s IN DATABASE %I RESET %s', r.setrole::regrole,
                (SELECT datname FROM pg_database WHERE oid = r.setdatabase), r.name);
            object := format('setting %s of role %s in database %s', r.name, r.setrole::regrole,
                (SELECT datname FROM pg_database WHERE oid = r.setdatabase));
        END IF;
        finding := 'this library''s setting: pgvector removes it with a WARNING in each session';
        status := 'warns';
        action := cmd;
        IF fix THEN
            EXECUTE cmd;
            status := 'fixed';
        END IF;
        RETURN NEXT;
    END LOOP;

    -- The same settings in the server's configuration files (readable by superusers and
    -- pg_read_all_settings only; ALTER SYSTEM cannot run inside a function).
    BEGIN
        FOR r IN
            SELECT f.sourcefile, f.sourceline, f.name
              FROM pg_file_settings f
             WHERE f.name ~ '^(hnsw|ivfflat)\.' AND NOT f.name = ANY (pgvector_settings)
             ORDER BY 1, 2
        LOOP
            status := 'warns';
            object := format('setting %s in %s, line %s', r.name, r.sourcefile, r.sourceline);
            finding := 'this library''s setting: pgvector removes it with a WARNING in each session';
            action := CASE WHEN r.sourcefile LIKE '%postgresql.auto.conf'
                THEN format('ALTER SYSTEM RESET %s; SELECT pg_reload_conf()', r.name)
                ELSE 'remove the line, then SELECT pg_reload_conf()' END;
            RETURN NEXT;
        END LOOP;
    EXCEPTION WHEN insufficient_privilege THEN
        status := 'warns';
        object := 'configuration files';
        finding := 'not read: pg_file_settings needs a superuser or pg_read_all_settings';
        action := 'run this check as a superuser';
        RETURN NEXT;
    END;

    status := 'last step';
    object := 'extension vector_rs ' || (SELECT extversion FROM pg_extension WHERE extname = 'vector_rs');
    finding := 'pgvector''s library has none of its functions, and pgvector''s packages do not '
        || 'ship it: a dump that creates it does not restore there';
    action := 'DROP EXTENSION vector_rs';
    RETURN NEXT;
END
$check$;

COMMENT ON FUNCTION vector_going_back_check(boolean) IS
    'whether this database can go back to pgvector''s library, and what to run first';
