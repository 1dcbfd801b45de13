-- The halfvec objects as recorded in the catalogs (names, signatures, attributes, link symbols),
-- leaving out the index access method objects.

SELECT typname, typlen, typbyval, typstorage, typalign, typinput, typoutput, typreceive, typsend,
       typmodin, typmodout, typanalyze, typcategory, typispreferred
  FROM pg_type WHERE typname IN ('halfvec', '_halfvec') ORDER BY typname;

SELECT p.oid::regprocedure AS function, p.prorettype::regtype AS returns, p.prosrc, p.provolatile,
       p.proisstrict, p.proparallel, p.prokind, p.procost, p.prorows, p.proretset,
       l.lanname
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
  WHERE (p.proargtypes::regtype[] && ARRAY['halfvec'::regtype] OR p.prorettype = 'halfvec'::regtype
         OR p.proname LIKE 'halfvec%')
    AND p.proname NOT LIKE '%support%'
  ORDER BY p.oid::regprocedure::text;

SELECT o.oprname, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype, o.oprcode,
       c.oprname AS commutator, n.oprname AS negator, o.oprrest, o.oprjoin, o.oprcanmerge,
       o.oprcanhash
  FROM pg_operator o
  LEFT JOIN pg_operator c ON c.oid = o.oprcom
  LEFT JOIN pg_operator n ON n.oid = o.oprnegate
  WHERE 'halfvec'::regtype IN (o.oprleft, o.oprright)
  ORDER BY o.oprname, o.oprleft::regtype::text, o.oprright::regtype::text;

SELECT castsource::regtype, casttarget::regtype, castfunc::regprocedure, castcontext, castmethod
  FROM pg_cast WHERE 'halfvec'::regtype IN (castsource, casttarget)
  ORDER BY castsource::regtype::text, casttarget::regtype::text;

SELECT a.aggfnoid::regprocedure, a.aggkind, a.aggtransfn, a.aggfinalfn, a.aggcombinefn,
       a.aggserialfn, a.aggdeserialfn, a.aggtranstype::regtype, a.agginitval, a.aggfinalmodify,
       p.proparallel
  FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
  WHERE p.proargtypes[0] = 'halfvec'::regtype
  ORDER BY a.aggfnoid::regprocedure::text;

SELECT c.opcname, am.amname, c.opcintype::regtype, c.opcdefault, c.opckeytype
  FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod
  WHERE c.opcintype = 'halfvec'::regtype AND am.amname = 'btree';

SELECT ao.amopstrategy, ao.amoplefttype::regtype, ao.amoprighttype::regtype,
       ao.amopopr::regoperator, ao.amoppurpose
  FROM pg_amop ao JOIN pg_opfamily f ON f.oid = ao.amopfamily JOIN pg_am am ON am.oid = f.opfmethod
  WHERE f.opfname = 'halfvec_ops' AND am.amname = 'btree' ORDER BY ao.amopstrategy;

SELECT ap.amprocnum, ap.amproclefttype::regtype, ap.amprocrighttype::regtype,
       ap.amproc::regprocedure
  FROM pg_amproc ap JOIN pg_opfamily f ON f.oid = ap.amprocfamily JOIN pg_am am ON am.oid = f.opfmethod
  WHERE f.opfname = 'halfvec_ops' AND am.amname = 'btree' ORDER BY ap.amprocnum;
