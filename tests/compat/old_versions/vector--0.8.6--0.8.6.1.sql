-- Upgrade from pgvector 0.8.6 to this library.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6.1'" to load this file. \quit

-- Every type, function, operator, cast and aggregate keeps its definition: our library exports
-- pgvector's link symbols and byte layouts, so the catalog needs no change. The index access
-- methods' objects (hnsw, ivfflat) stay in place for the indexes that depend on them.

-- Added by this library: what the last hnsw index scan of this session did.
CREATE FUNCTION hnsw_last_scan_stats(OUT hops bigint, OUT visited bigint, OUT blocks bigint,
    OUT hits bigint, OUT reads bigint, OUT prefetched bigint, OUT unused_prefetches bigint,
    OUT mean_in_flight double precision, OUT heap_prefetches bigint)
    RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
