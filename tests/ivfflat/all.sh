#!/usr/bin/env bash
# Runs every ivfflat integration check in turn and ends with one "N passed, N failed" line.
# Each check gets its own directory under WORKDIR.
# Usage: tests/ivfflat/all.sh [WORKDIR] [check ...]   (OURS=..., PGVECTOR=..., ports)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/ivfflat-all.XXXXXX)}
shift || true
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(cross_library recall crash_recovery standby_replay io_identical corrupt_pages build_pages
  soak)
passed=0 failed=0
for c in "${checks[@]}"; do
  echo "== $c"
  start=$(date +%s)
  if "$here/$c.sh" "$work/$c"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "== $c FAILED"; fi
  echo "== $c: $(( $(date +%s) - start )) s"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
