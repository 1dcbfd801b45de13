#!/usr/bin/env bash
# The part of an install that cargo-pgrx does not do, for `make install` and dev-install.sh:
# the companion extension vector_rs (this library's additions to pgvector's catalog), and the
# removal of the scripts of our earlier catalog versions 0.8.6.1 to 0.8.6.4, which would let a
# database update back onto a version that pgvector's update scripts do not know.
#   scripts/install-companion.sh SHAREDIR     (the server's `pg_config --sharedir`)
set -euo pipefail
cd "$(dirname "$0")/.."
ext=$1/extension
install -m 644 sql/companion/vector_rs.control sql/companion/vector_rs--*.sql "$ext/"
while read -r f; do rm -f "$ext/$f"; done < <(grep -v '^#' sql/retired-files)
