-- From this library's catalog version 0.8.6.2 to pgvector 0.8.6's own catalog.
\echo Use "ALTER EXTENSION vector UPDATE TO '0.8.6'" to load this file. \quit

-- Versions 0.8.6.1 to 0.8.6.4 put this library's additions into pgvector's extension, which
-- left clusters on versions that pgvector's update scripts do not know. They now live in the
-- companion extension vector_rs (CREATE EXTENSION vector_rs brings them back), and `vector`
-- is pgvector's 0.8.6 catalog, ready for pgvector's next update script on either library.
-- A view or function that uses one of the dropped functions stops this update: drop it first.

DROP FUNCTION hnsw_last_scan_stats();
DROP FUNCTION ivfflat_last_scan_stats();
