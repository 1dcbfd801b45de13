-- The hnsw access method as recorded in the catalogs: the handler and support functions, every
-- operator class with its ordering operator and support procedures (1 distance, 2 norm,
-- 3 type info), amvalidate, and the capabilities the handler reports to the planner.

SELECT a.amname, a.amhandler, a.amtype, obj_description(a.oid, 'pg_am') AS description
  FROM pg_am a WHERE a.amname = 'hnsw';

SELECT p.oid::regprocedure AS function, p.prorettype::regtype AS returns, p.prosrc,
       p.provolatile, p.proisstrict, p.proparallel, l.lanname
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
  WHERE p.proname LIKE 'hnsw%'
    AND p.proname NOT IN ('hnsw_last_scan_stats', 'hnsw_index_check', 'hnsw_index_parent_check')
    -- ours, not pgvector's: see hnsw_io and index_check
  ORDER BY p.oid::regprocedure::text;

-- operator classes and families (none is the default for its type)
SELECT c.opcname, c.opcintype::regtype, c.opcdefault, c.opckeytype, f.opfname
  FROM pg_opclass c
  JOIN pg_am am ON am.oid = c.opcmethod
  JOIN pg_opfamily f ON f.oid = c.opcfamily
  WHERE am.amname = 'hnsw'
  ORDER BY c.opcname, c.opcintype::regtype::text;

-- ordering operators
SELECT f.opfname, o.amopstrategy, o.amoplefttype::regtype, o.amoprighttype::regtype,
       o.amopopr::regoperator, o.amoppurpose,
       sf.opfname AS sortfamily
  FROM pg_amop o
  JOIN pg_opfamily f ON f.oid = o.amopfamily
  JOIN pg_am am ON am.oid = f.opfmethod
  LEFT JOIN pg_opfamily sf ON sf.oid = o.amopsortfamily
  WHERE am.amname = 'hnsw'
  ORDER BY f.opfname, o.amoplefttype::regtype::text, o.amopstrategy;

-- support procedures
SELECT f.opfname, p.amprocnum, p.amproclefttype::regtype, p.amprocrighttype::regtype,
       p.amproc::regprocedure
  FROM pg_amproc p
  JOIN pg_opfamily f ON f.oid = p.amprocfamily
  JOIN pg_am am ON am.oid = f.opfmethod
  WHERE am.amname = 'hnsw'
  ORDER BY f.opfname, p.amproclefttype::regtype::text, p.amprocnum;

-- every operator class passes the access method's own validation
SELECT c.opcname, c.opcintype::regtype, amvalidate(c.oid)
  FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod
  WHERE am.amname = 'hnsw'
  ORDER BY c.opcname, c.opcintype::regtype::text;

-- capabilities of the access method
SELECT prop, pg_indexam_has_property(a.oid, prop) AS value
  FROM pg_am a,
       unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude',
                    'can_include']) AS prop
  WHERE a.amname = 'hnsw';

CREATE TABLE t (val vector(3));
CREATE INDEX t_idx ON t USING hnsw (val vector_l2_ops);

SELECT prop, pg_index_has_property('t_idx'::regclass, prop) AS value
  FROM unnest(ARRAY['clusterable', 'index_scan', 'bitmap_scan', 'backward_scan']) AS prop;

SELECT prop, pg_index_column_has_property('t_idx'::regclass, 1, prop) AS value
  FROM unnest(ARRAY['asc', 'desc', 'nulls_first', 'nulls_last', 'orderable',
                    'distance_orderable', 'returnable', 'search_array',
                    'search_nulls']) AS prop;

-- what the index records about itself
SELECT i.indnatts, i.indnkeyatts, i.indisunique, i.indisvalid, i.indisready,
       c.opcname, am.amname,
       ic.relkind, ic.relpersistence, ic.reloptions
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am am ON am.oid = ic.relam
  JOIN pg_opclass c ON c.oid = i.indclass[0]
  WHERE i.indexrelid = 't_idx'::regclass;

SELECT pg_get_indexdef('t_idx'::regclass);

DROP TABLE t;

-- the access method cannot be dropped while the extension owns it
DROP ACCESS METHOD hnsw;
