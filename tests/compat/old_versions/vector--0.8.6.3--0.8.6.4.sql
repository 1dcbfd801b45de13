-- Upgrade from 0.8.6.3: hnsw_last_scan_stats() gets the rerank columns of a quantized index.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6.4'" to load this file. \quit

-- New OUT columns change the result type, so the function is dropped and created again (a view
-- over it must be dropped first). The library fills as many columns as the definition has, so
-- the old definition keeps working until this update runs.
ALTER EXTENSION vector DROP FUNCTION hnsw_last_scan_stats();
DROP FUNCTION hnsw_last_scan_stats();

CREATE FUNCTION hnsw_last_scan_stats(OUT hops bigint, OUT visited bigint, OUT blocks bigint,
    OUT hits bigint, OUT reads bigint, OUT prefetched bigint, OUT unused_prefetches bigint,
    OUT mean_in_flight double precision, OUT heap_prefetches bigint, OUT reranked bigint,
    OUT rerank_blocks bigint, OUT rerank_reads bigint)
    RETURNS record AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
