#!/usr/bin/env bash
# Runs every check of the hnsw write path (build, insert, vacuum, WAL) in turn and ends with one
# "N passed, N failed" line. Each check gets its own directory under WORKDIR.
# Usage: tests/hnsw/write_path_all.sh [WORKDIR] [check ...]   (OURS=..., PGVECTOR=..., ports)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/hnsw-write-path.XXXXXX)}
shift || true
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(build_recall build_memory_limit insert_recall vacuum_recall
  large_values cross_write ours_index_on_pgvector crash_recovery io_identical scan_lifetimes
  page_id_check chain_cycle invalid_block corrupt_pages crash_loop cancel soak standby
  parallel_build placement crash_recovery_quantized standby_quantized io_identical_quantized
  corrupt_pages_quantized quantized_on_pgvector quantized_recall quantized_format1)
passed=0 failed=0
for c in "${checks[@]}"; do
  echo "== $c"
  start=$(date +%s)
  if "$here/$c.sh" "$work/$c"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "== $c FAILED"; fi
  echo "== $c: $(( $(date +%s) - start )) s"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
