#!/usr/bin/env bash
# Seeded damage to ivfflat index pages (tests/corrupt_pages.sh, which says what is checked).
# Usage: tests/ivfflat/corrupt_pages.sh [WORKDIR] [CASES]
exec "$(dirname "$0")/../corrupt_pages.sh" ivfflat "$@"
