#!/usr/bin/env bash
# A quantized index of the format before regions (quantizer format 1: every code taken around
# the table's mean, records of region 0, no centroid pages) keeps working on this library:
# reads, inserts, vacuum, the verifier; a REINDEX makes it format 2.
#  1. hnsw_damage_fixture: table t (1,500 rows of vector(8), fewer than two regions' worth) with
#     a quantized index t_idx (rabitq2). A build of so few rows takes one region, the mean, so
#     its codes are exactly format 1's; the answers to 20 queries at ef_search 100 are recorded.
#  2. Server stopped, the index is rewritten into format 1 as the previous release wrote it:
#     the quantizer section's version 1, pd_lower just past the centroid, the region fields
#     zeroed, and the centroid page (the file's last block) truncated away.
#  3. On this library: check_pages.py accepts it as format 1, the verifier passes, and the
#     answers are the ones recorded. 300 inserts, a DELETE and a VACUUM: the index stays format
#     1, passes both checks, and finds at least 0.95 of the exact top 10 at ef_search 100.
#  4. REINDEX: format 2, both checks pass, the same recall bar.
# Usage: tests/hnsw/quantized_format1.sh [WORKDIR]   (OURS=..., port)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/hnsw-quantized-format1.XXXXXX)}
. "$(dirname "$0")/../lib.sh"

format_of() { sql ours -c "SELECT get_byte(get_raw_page('t_idx', 0), 56)"; }
verify() { sql ours -c "SELECT hnsw_index_check('t_idx', true)" >/dev/null || fail "the verifier failed: $1"; }

echo "-- 1. a small quantized build (one region)"
hnsw_damage_fixture 1500 0.25 "WITH (quantization = 'rabitq2')"
start ours
sql ours -c "CREATE EXTENSION pageinspect" -c "SELECT setseed(0.5)" >/dev/null
sql ours -c "
  CREATE TABLE queries AS SELECT i AS id, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0)::vector(8) AS v
    FROM generate_series(1, 20) i"
[ "$(format_of)" = 2 ] || fail "a new build is not format 2"
results ours t "<->" 100 before
stop ours

echo "-- 2. rewritten into format 1"
python3 - "$file" <<'PY'
import os, struct, sys
path = sys.argv[1]
BLCKSZ, dims = 8192, 8
raw = bytearray(open(path, "rb").read())
meta = raw[:BLCKSZ]
assert struct.unpack_from("<H", meta, 56)[0] == 2, "not format 2"
regions_at = 24 + ((32 + 24 + 2 * dims + 3) & ~3)
count, first = struct.unpack_from("<II", meta, regions_at)
assert count == 1, f"{count} regions"
last = len(raw) // BLCKSZ - 1
assert first == last, f"centroid page {first}, last block {last}"
assert struct.unpack_from("<H", raw, last * BLCKSZ + BLCKSZ - 4)[0] == 2, "not a centroid page"
struct.pack_into("<H", meta, 56, 1)
struct.pack_into("<H", meta, 12, 24 + 32 + 24 + 2 * dims)
struct.pack_into("<II", meta, regions_at, 0, 0)
raw[:BLCKSZ] = meta
open(path, "wb").write(raw[: last * BLCKSZ])
print(f"   format 1, {last} blocks (centroid page {first} dropped)")
PY

echo "-- 3. format 1 on this library"
start ours
[ "$(format_of)" = 1 ] || fail "the rewrite did not take"
EXACT=1 check_pages ours t_idx t | sed 's/^/   /'
verify "format 1 as written"
results ours t "<->" 100 after
[ "$(differing ours before after)" = 0 ] || fail "format 1 answers differently than the build did"
echo "   the 20 queries answer as before the rewrite"
sql ours -c "SELECT setseed(0.75); 
  INSERT INTO t SELECT i, array(SELECT random()::real FROM generate_series(1, 8) WHERE i > 0)
    FROM generate_series(1501, 1800) i;
  DELETE FROM t WHERE id % 9 = 0;" -c "VACUUM t"
[ "$(format_of)" = 1 ] || fail "inserts or vacuum changed the format"
EXACT=1 check_pages ours t_idx t | sed 's/^/   /'
verify "format 1 after inserts and vacuum"
truth ours t "<->" exact
results ours t "<->" 100 found
r=$(recall_of ours found exact)
at_least "$r" 0.95 || fail "format 1 after inserts: recall $r"
echo "   after 300 inserts, a delete and vacuum: recall@10 $r at ef_search 100"

echo "-- 4. REINDEX"
sql ours -c "REINDEX INDEX t_idx"
[ "$(format_of)" = 2 ] || fail "REINDEX did not make format 2"
EXACT=1 check_pages ours t_idx t | sed 's/^/   /'
verify "format 2 after REINDEX"
results ours t "<->" 100 found2
r=$(recall_of ours found2 exact)
at_least "$r" 0.95 || fail "after REINDEX: recall $r"
echo "   after REINDEX: format 2, recall@10 $r"
stop ours
echo "quantized_format1: ok"
