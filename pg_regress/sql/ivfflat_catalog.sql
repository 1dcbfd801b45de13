-- The ivfflat access method in the catalogs: its row in pg_am, the handler and the type support
-- functions, the operator classes on vector, halfvec and bit with their ordering operators and
-- support procedures (1 distance, 2 norm, 3 k-means distance, 4 k-means norm, 5 type info),
-- amvalidate, and what the handler tells the planner and the SQL property functions.

SELECT amname, amhandler::regproc, amtype, obj_description(oid, 'pg_am') AS description
  FROM pg_am WHERE amname = 'ivfflat';

SELECT p.oid::regprocedure AS signature, p.prorettype::regtype AS returns,
       p.prosrc, p.provolatile, p.proisstrict, p.proparallel, l.lanname
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
  WHERE p.proname IN ('ivfflathandler', 'ivfflat_halfvec_support', 'ivfflat_bit_support')
  ORDER BY 1::text;

-- operator classes: one default (vector_l2_ops), each in a family of its own name
SELECT c.opcname, c.opcintype::regtype AS type, c.opcdefault, c.opckeytype::regtype AS keytype,
       f.opfname AS family
  FROM pg_opclass c
  JOIN pg_opfamily f ON f.oid = c.opcfamily
  WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'ivfflat')
  ORDER BY c.opcintype::regtype::text, c.opcname;

-- each family orders by one operator, sorted as float8
SELECT f.opfname AS family, o.amopstrategy AS strategy, o.amopopr::regoperator AS operator,
       o.amoppurpose AS purpose, sf.opfname AS sort_family,
       o.amoplefttype::regtype AS lefttype, o.amoprighttype::regtype AS righttype
  FROM pg_amop o
  JOIN pg_opfamily f ON f.oid = o.amopfamily
  LEFT JOIN pg_opfamily sf ON sf.oid = o.amopsortfamily
  WHERE o.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'ivfflat')
  ORDER BY f.opfname, o.amoplefttype::regtype::text, o.amopstrategy;

SELECT f.opfname AS family, p.amprocnum AS procnum, p.amproc::regprocedure AS procedure,
       p.amproclefttype::regtype AS lefttype, p.amprocrighttype::regtype AS righttype
  FROM pg_amproc p
  JOIN pg_opfamily f ON f.oid = p.amprocfamily
  WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'ivfflat')
  ORDER BY f.opfname, p.amproclefttype::regtype::text, p.amprocnum;

SELECT c.opcname, amvalidate(c.oid) AS valid
  FROM pg_opclass c
  WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'ivfflat')
  ORDER BY c.opcname;

-- what the access method can do
SELECT p AS property, pg_indexam_has_property((SELECT oid FROM pg_am WHERE amname = 'ivfflat'), p)
  FROM unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude', 'can_include',
                    'no_such_property']) AS p;

CREATE TABLE c (id int, val vector(4), hv halfvec(4), b bit(4));
CREATE INDEX c_val ON c USING ivfflat (val) WITH (lists = 2);
CREATE INDEX c_hv ON c USING ivfflat (hv halfvec_cosine_ops) WITH (lists = 3);
CREATE INDEX c_b ON c USING ivfflat (b bit_hamming_ops);

SELECT p AS property, pg_index_has_property('c_val'::regclass, p)
  FROM unnest(ARRAY['clusterable', 'index_scan', 'bitmap_scan', 'backward_scan']) AS p;
SELECT p AS property, pg_index_column_has_property('c_val'::regclass, 1, p)
  FROM unnest(ARRAY['asc', 'desc', 'nulls_first', 'nulls_last', 'orderable',
                    'distance_orderable', 'returnable', 'search_array', 'search_nulls'])
       AS p;

SELECT ic.relname, am.amname, oc.opcname, i.indnatts, i.indisunique, i.indisvalid,
       i.indisready, i.indislive, ic.relkind, ic.reloptions
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am am ON am.oid = ic.relam
  JOIN pg_opclass oc ON oc.oid = i.indclass[0]
  WHERE i.indrelid = 'c'::regclass
  ORDER BY ic.relname;
SELECT indexrelid::regclass, pg_get_indexdef(indexrelid)
  FROM pg_index WHERE indrelid = 'c'::regclass ORDER BY indexrelid::regclass::text;

-- the index depends on its operator class, which belongs to the extension
SELECT oc.opcname, d.deptype
  FROM pg_depend d JOIN pg_opclass oc ON oc.oid = d.refobjid
  WHERE d.classid = 'pg_class'::regclass AND d.objid = 'c_hv'::regclass
    AND d.refclassid = 'pg_opclass'::regclass;
SELECT e.extname, d.deptype
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
  WHERE d.classid = 'pg_opclass'::regclass
    AND d.objid = (SELECT oid FROM pg_opclass WHERE opcname = 'halfvec_cosine_ops'
                     AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'ivfflat'))
    AND d.refclassid = 'pg_extension'::regclass;
DROP TABLE c;
