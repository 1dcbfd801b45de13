-- Upgrade from 0.8.6.2: the index verifiers.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6.3'" to load this file. \quit

-- Added by this library: amcheck-style verifiers (see README.md, "Reliability"). Like
-- amcheck's functions they are not for PUBLIC; grant EXECUTE to the roles that may run them.
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
