#!/usr/bin/env bash
# The 8-session soak on an hnsw index (m 8, ef_construction 32) against pgvector 0.8.6: see
# tests/soak.sh, the one implementation of both access methods' soaks.
# Usage: tests/hnsw/soak.sh [WORKDIR] [SECONDS]   (default 20; a long run: tests/hnsw/soak.sh
#        /tmp/soak 300)   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
exec "$(dirname "$0")/../soak.sh" hnsw "$@"
