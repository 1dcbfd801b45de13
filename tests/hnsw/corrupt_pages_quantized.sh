#!/usr/bin/env bash
# Seeded damage to a quantized hnsw index (WITH (m = 4, quantization = 'rabitq4')): the kinds of
# tests/damage.py's hnsw-quantized, one case each by default (tests/corrupt_pages.sh says what
# is checked): pgvector's graph damage, the metapage's quantizer section, vector pages and
# code records. No crash, no hang, every structural damage reported by the verifier, and no
# malformed answer from an index the verifier passed.
# Usage: tests/hnsw/corrupt_pages_quantized.sh [WORKDIR] [CASES]   (long runs: 4 or more cases
#        per kind, e.g. 144)
work=${1:-$(mktemp -d /tmp/hnsw-quantized-corrupt.XXXXXX)}
cases=${2:-$(python3 "$(dirname "$0")/../damage.py" --kinds hnsw-quantized | wc -w)}
HNSW_OPTIONS="quantization = 'rabitq4'" exec "$(dirname "$0")/../corrupt_pages.sh" hnsw "$work" "$cases"
