#!/usr/bin/env bash
# Single-row insert time into a resident hnsw index, ours and pgvector 0.8.6 on the same data.
# Each library: a fresh cluster, a table of ROWS random vector(DIMS) rows and its index
# (m 16, ef_construction 64), then ROUNDS times: INSERT NEW rows one by one in a PL/pgSQL loop
# inside one transaction, rolled back (the index keeps the new elements, the table does not).
# The first round warms the caches; compare the others.
#   benches/hnsw/insert_ab.sh [WORKDIR]   (ROWS=20000 DIMS=128 NEW=3000 ROUNDS=3; OURS, PGVECTOR, ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/insert-ab.XXXXXX)}
. "$(dirname "$0")/../../tests/lib.sh"
rows=${ROWS:-20000} dims=${DIMS:-128} new=${NEW:-3000} rounds=${ROUNDS:-3}
setup="SELECT setseed(0.5);
  CREATE TABLE t (id int, v vector($dims));
  INSERT INTO t SELECT i, array(SELECT random()::real FROM generate_series(1, $dims) WHERE i > 0)
    FROM generate_series(1, $rows) i;
  CREATE TABLE src AS SELECT i AS id,
    array(SELECT random()::real FROM generate_series(1, $dims) WHERE i > 0)::vector($dims) AS v
    FROM generate_series(1, $new) i;
  CREATE INDEX ON t USING hnsw (v vector_l2_ops);
  CHECKPOINT;"
insert='DO $$ DECLARE r record; BEGIN FOR r IN SELECT * FROM src LOOP INSERT INTO t VALUES (r.id, r.v); END LOOP; END $$'
for lib in ours pgvector; do
  rm -rf "$work/cluster"
  start "$lib"
  sql "$lib" -c "CREATE EXTENSION vector" -c "$setup" >/dev/null
  for r in $(seq 1 "$rounds"); do
    ms=$(sql "$lib" -c "BEGIN" -c '\timing on' -c "$insert" -c "ROLLBACK" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | head -1)
    echo "$lib round $r: $new inserts in $ms ms"
  done
  stop "$lib"
done
