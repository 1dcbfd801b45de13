#!/usr/bin/env bash
# standby.sh on our quantized format: every index built WITH (quantization = 'rabitq8'), with
# fewer rows (3000 and 5 batches of 300 inserts) and searches (at least 300 per loop) than the
# pgvector-format run. The standby serves searches while it replays the builds, inserts (vector
# pages and code records), VACUUM (freed vector slots), updates, REINDEX CONCURRENTLY and
# CREATE INDEX CONCURRENTLY; its answers equal the primary's after each round, the verifiers
# pass on both, and after a CHECKPOINT every page (vector pages included) is identical.
# Usage: tests/hnsw/standby_quantized.sh [WORKDIR]   (OURS=..., PORT_OURS, PORT_STANDBY)
HNSW_OPTIONS="quantization = 'rabitq8'" STANDBY_ROWS=${STANDBY_ROWS:-3000} \
  STANDBY_MIN_SEARCHES=${STANDBY_MIN_SEARCHES:-300} exec "$(dirname "$0")/standby.sh" "$@"
