#!/usr/bin/env bash
# Builds installable packages of the extension, one build per pg_config given:
#   - a tarball vector-VERSION-pgMAJOR-ARCH.tar.gz (library, control file, SQL scripts, LICENSE
#     and install.sh, which copies them into the directories of $PG_CONFIG), for any server;
#   - for a server laid out as Debian's (/usr/lib/postgresql/MAJOR, /usr/share/postgresql/MAJOR),
#     also the Debian package postgresql-MAJOR-vector-rs (postgresql-15-vector-rs for Debian 12's
#     PostgreSQL 15), which conflicts with, replaces and provides pgvector's
#     postgresql-MAJOR-pgvector, so that it installs over it.
#   scripts/package.sh PG_CONFIG...
# Writes to ${CARGO_TARGET_DIR:-target}/package/ and prints the paths of the files it built.
# VERSION is the extension's (vector.control) and this crate's (Cargo.toml): 0.8.6+rs0.2.0; the
# Debian package's has the epoch 1, since releases before 0.2.0 were 0.8.6.4+rs0.1.0 and older.
# Env: DEBFULLNAME, DEBEMAIL (the Debian package's Maintainer).
set -euo pipefail
umask 022
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 PG_CONFIG..." >&2; exit 2; }
# Absolute paths (pgrx's build runs elsewhere); a bare name is looked up in PATH.
pg_configs=()
for c in "$@"; do
  p=$(command -v "$c") || { echo "no pg_config at $c (make setup installs PG 15 and 18)" >&2; exit 1; }
  pg_configs+=("$(realpath -s "$p")")
done
cd "$root"

target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
out=$target/package
mkdir -p "$out"

extversion=$(sed -n -E "s/^default_version *= *'([^']+)'.*/\1/p" vector.control)
crateversion=$(sed -n -E '/^\[package\]/,/^\[/ s/^version *= *"([^"]+)".*/\1/p' Cargo.toml)
if [ -z "$extversion" ] || [ -z "$crateversion" ]; then
  echo "no version in vector.control or Cargo.toml" >&2
  exit 1
fi
# The extension version leads, as it is what pgvector users compare; a semver pre-release
# (0.2.0-rc.1) sorts before its release in Debian only with '~'.
version=$extversion+rs${crateversion//-/\~}
# Epoch 1: the releases that put our additions into `vector` itself (0.8.6.1 to 0.8.6.4) sort
# after 0.8.6+rs... without it, and dpkg and apt would take this one for a downgrade.
debversion=1:$version
# The pgvector release this one stands in for: the first three parts of the version.
pgvector_version=$(cut -d. -f1-3 <<<"$extversion")
maintainer="${DEBFULLNAME:-vector developers} <${DEBEMAIL:-maintainers@users.noreply.a-seed-5a5aaf01.example}>"
# Timestamps of the files in the packages: the commit's, so that rebuilds differ only if the
# build does. Not exported: the cc crate would rebuild pgrx's C parts at every commit.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)

# Build paths would otherwise end up in the library (file names of panic locations); any
# RUSTFLAGS of the caller are kept.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
flags=()
if [ -n "${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
  IFS=$'\x1f' read -r -a flags <<<"$CARGO_ENCODED_RUSTFLAGS"
elif [ -n "${RUSTFLAGS:-}" ]; then
  read -r -a flags <<<"$RUSTFLAGS"
fi
flags+=("--remap-path-prefix=$root=vector" "--remap-path-prefix=$cargo_home=cargo"
  "--remap-path-prefix=$target=target")
CARGO_ENCODED_RUSTFLAGS=$(IFS=$'\x1f'; echo "${flags[*]}")
export CARGO_ENCODED_RUSTFLAGS
unset RUSTFLAGS
# Its own target directory: other flags than `make install`'s builds, which would otherwise
# rebuild everything each time one follows the other.
export CARGO_TARGET_DIR=$out/build

built=()

# build PG_CONFIG MAJOR FILES: cargo pgrx package for that server, then the library (stripped),
# control file and SQL scripts into FILES/lib and FILES/extension.
build() {
  local pg_config=$1 major=$2 files=$3
  # pgrx's build reads the servers it knows from $PGRX_HOME/config.toml, and fails on any
  # entry that no longer exists: a private one naming only this server, one per major version
  # so that building for another leaves this one's build alone.
  export PGRX_HOME=$out/pgrx-home/pg$major
  local config="[configs]"$'\n'"pg$major = \"$pg_config\""
  mkdir -p "$PGRX_HOME"
  [ "$(cat "$PGRX_HOME/config.toml" 2>/dev/null)" = "$config" ] || echo "$config" >"$PGRX_HOME/config.toml"

  local tree=$out/build/tree-pg$major
  rm -rf "$tree" "$files"
  echo "==> cargo pgrx package for PostgreSQL $major ($pg_config)" >&2
  cargo pgrx package --pg-config "$pg_config" --out-dir "$tree" \
    --no-default-features --features "pg$major" >&2

  local pkglibdir sharedir
  pkglibdir=$("$pg_config" --pkglibdir)
  sharedir=$("$pg_config" --sharedir)
  install -d -m 0755 "$files/lib" "$files/extension"
  install -m 0755 "$tree$pkglibdir/vector.so" "$files/lib/"
  # As Debian's dh_strip does for shared libraries: the symbols Postgres looks up stay.
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$files/lib/vector.so"
  install -m 0644 "$tree$sharedir/extension/vector.control" "$tree$sharedir/extension"/vector--*.sql \
    sql/companion/vector_rs.control sql/companion/vector_rs--*.sql "$files/extension/"
  [ -s "$files/extension/vector--$extversion.sql" ] || { echo "no vector--$extversion.sql" >&2; return 1; }
}

# tarball MAJOR FILES
tarball() {
  local major=$1 files=$2
  local name
  name=vector-$version-pg$major-$(uname -m)
  local dir=$out/stage/$name
  rm -rf "$dir"
  install -d -m 0755 "$dir"
  cp -a "$files/lib" "$files/extension" "$dir/"
  install -m 0644 LICENSE "$dir/LICENSE"
  # The newest glibc symbol version the library links to: install.sh checks the system's.
  local glibc
  glibc=$(objdump -T "$files/lib/vector.so" | grep -o 'GLIBC_[0-9.]*' | cut -d_ -f2 | sort -uV | tail -1)
  install_script "$major" "$glibc" >"$dir/install.sh"
  chmod 0755 "$dir/install.sh"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$out/stage" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
  built+=("$out/$name.tar.gz")
}

install_script() {
  local major=$1 glibc=$2
  cat <<EOF
#!/bin/sh
# Installs vector $version for PostgreSQL $major (Linux, glibc $glibc or later): vector.so into
# \$(pg_config --pkglibdir), the control files and SQL scripts of vector and vector_rs into
# \$(pg_config --sharedir)/extension. Stop the server first.
#   [PG_CONFIG=/path/to/pg_config] [DESTDIR=/staging/root] ./install.sh [--uninstall]
# --uninstall removes the files it installs. Then, in each database, CREATE EXTENSION vector
# (nothing to run over pgvector 0.8.6), and CREATE EXTENSION vector_rs for our additions.
set -eu
major=$major
glibc=$glibc
# Scripts of our earlier releases that would let a database update off pgvector's versions.
retired="$(grep -v '^#' sql/retired-files | tr '\n' ' ')"
EOF
  cat <<'EOF'
here=$(cd "$(dirname "$0")" && pwd)
pg_config=${PG_CONFIG:-pg_config}
server=$("$pg_config" --version) || { echo "cannot run $pg_config (set PG_CONFIG)" >&2; exit 1; }
# A library built for another major version does not load.
if [ "$(echo "$server" | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')" != "$major" ]; then
  echo "this is for PostgreSQL $major, $pg_config is $server" >&2
  exit 1
fi
libdir=${DESTDIR:-}$("$pg_config" --pkglibdir)
extdir=${DESTDIR:-}$("$pg_config" --sharedir)/extension
case "${1:-}" in
--uninstall)
  rm -f "$libdir/vector.so"
  for f in "$here"/extension/*; do rm -f "$extdir/$(basename "$f")"; done
  echo "removed vector from $libdir and $extdir"
  ;;
"")
  # An older glibc would only show at CREATE EXTENSION, as a failure to load the library.
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //') || have=""
  if [ -n "$have" ] && [ "$(printf '%s\n' "$glibc" "$have" | sort -V | head -n 1)" != "$glibc" ]; then
    echo "this library needs glibc $glibc or later, this system has $have" >&2
    exit 1
  fi
  install -d "$libdir" "$extdir"
  # install(1) puts a new file in place instead of writing into the old one, which running
  # backends may have mapped.
  install -m 0755 "$here/lib/vector.so" "$libdir/vector.so"
  install -m 0644 "$here"/extension/* "$extdir/"
  for f in $retired; do rm -f "$extdir/$f"; done
  echo "installed vector into $libdir and $extdir"
  ;;
*) echo "usage: [PG_CONFIG=...] [DESTDIR=...] $0 [--uninstall]" >&2; exit 2 ;;
esac
EOF
}

# deb MAJOR FILES: the library and scripts where Debian's postgresql-MAJOR looks for them.
deb() {
  local major=$1 files=$2
  local pkg=postgresql-$major-vector-rs
  local arch
  arch=$(dpkg --print-architecture)
  # dpkg-shlibdeps expects the files under debian/<package>/ and a debian/control naming it.
  local src=$out/stage/deb-pg$major
  local dir=$src/debian/$pkg
  rm -rf "$src"
  install -d -m 0755 "$dir/DEBIAN" "$dir/usr/lib/postgresql/$major/lib" \
    "$dir/usr/share/postgresql/$major/extension" "$dir/usr/share/doc/$pkg"
  # 0644, as Debian's own modules: the dynamic loader does not need the executable bit.
  install -m 0644 "$files/lib/vector.so" "$dir/usr/lib/postgresql/$major/lib/"
  cp -a "$files/extension/." "$dir/usr/share/postgresql/$major/extension/"
  install -m 0644 LICENSE "$dir/usr/share/doc/$pkg/copyright"
  printf '%s (%s) unstable; urgency=medium\n\n  * Built by scripts/package.sh from commit %s.\n\n -- %s  %s\n' \
    "$pkg" "$debversion" "$commit" "$maintainer" "$(date -R -u -d "@$epoch")" |
    gzip -9n >"$dir/usr/share/doc/$pkg/changelog.gz"
  chmod 0644 "$dir/usr/share/doc/$pkg/changelog.gz"

  printf 'Source: vector\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$src/debian/control"
  local shlibs
  shlibs=$(cd "$src" && dpkg-shlibdeps -O "debian/$pkg/usr/lib/postgresql/$major/lib/vector.so")
  shlibs=${shlibs#shlibs:Depends=}
  [ -n "$shlibs" ] || { echo "dpkg-shlibdeps found no dependencies" >&2; return 1; }

  local size
  size=$(du -s -k --exclude=DEBIAN "$dir" | cut -f1)
  cat >"$dir/DEBIAN/control" <<EOF
Package: $pkg
Source: vector
Version: $debversion
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: postgresql-$major, $shlibs
Conflicts: postgresql-$major-pgvector
Replaces: postgresql-$major-pgvector
Provides: postgresql-$major-pgvector (= $pgvector_version)
Section: database
Priority: optional
Description: pgvector-compatible vector similarity search for PostgreSQL $major
 A drop-in replacement for pgvector $pgvector_version, written in Rust: the same vector,
 halfvec, sparsevec and bit types, functions and operators, and ivfflat and
 hnsw indexes in the same on-disk formats. Its HNSW index overlaps the page
 reads of each step, for indexes that do not fit in memory.
 .
 It takes the place of postgresql-$major-pgvector: existing databases and
 indexes keep working on pgvector's catalog, and CREATE EXTENSION vector_rs
 adds this library's scan counters and index verifiers. Stop the server
 before installing or removing it.
EOF
  (cd "$dir" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$dir/DEBIAN/md5sums"
  chmod 0644 "$dir/DEBIAN/control" "$dir/DEBIAN/md5sums"

  local file=$out/${pkg}_${version}_$arch.deb
  # dpkg-deb dates the files no later than SOURCE_DATE_EPOCH.
  SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group --build "$dir" "$file" >/dev/null
  built+=("$file")
}

for pg_config in "${pg_configs[@]}"; do
  major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
  files=$out/stage/files-pg$major
  build "$pg_config" "$major" "$files"
  tarball "$major" "$files"
  if [ "$("$pg_config" --pkglibdir)" = "/usr/lib/postgresql/$major/lib" ] &&
    [ "$("$pg_config" --sharedir)" = "/usr/share/postgresql/$major" ]; then
    deb "$major" "$files"
  else
    echo "==> no .deb for $pg_config: not Debian's layout of PostgreSQL $major" >&2
  fi
done
printf '%s\n' "${built[@]}"
