#!/usr/bin/env bash
# Seeded damage to hnsw index pages (tests/corrupt_pages.sh, which says what is checked).
# Usage: tests/hnsw/corrupt_pages.sh [WORKDIR] [CASES]
exec "$(dirname "$0")/../corrupt_pages.sh" hnsw "$@"
