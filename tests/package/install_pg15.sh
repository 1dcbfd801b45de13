#!/usr/bin/env bash
# The packages of scripts/package.sh on Debian's PostgreSQL 15, used as a DBA would:
#   .deb: its fields and files; installed with the README's `package-install` block as written
#         (on Debian's cluster 15/main) over a stand-in for pgvector's package, which it must take
#         the place of (and satisfy a package that depends on pgvector); held, so that apt refuses
#         to put pgvector's package back; CREATE EXTENSION vector and vector_rs, an hnsw query and
#         the pg_regress suite on a fresh cluster; removed with the README's `package-remove`
#         block, leaving no file;
#   tarball: its files; install.sh refuses another major version, installs into DESTDIR, then
#         into the server (CREATE EXTENSION and the query again), and --uninstall removes it.
#   tests/package/install_pg15.sh WORKDIR   (as root, for dpkg; servers run as `postgres`)
# Library, control file and scripts of an earlier `cargo pgrx install` (owned by no package)
# are moved aside first and put back at the end, byte for byte.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ $# -eq 1 ] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
work=$(realpath -m "$1")
PG15=/usr/lib/postgresql/15
pg_config=$PG15/bin/pg_config
port=55415
pkg=postgresql-15-vector-rs
pgvector_pkg=postgresql-15-pgvector
dependent_pkg=vector-rs-test-dependent
libdir=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension
arch=$(dpkg --print-architecture)
checks=0

fail() { echo "FAIL: $*"; exit 1; }
# expect WHAT ACTUAL EXPECTED
expect() {
  [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
  checks=$((checks + 1))
}
# expect_match WHAT ACTUAL EXTENDED-REGEX
expect_match() {
  grep -qE -- "$3" <<<"$2" || fail "$1: '$2' does not match /$3/"
  checks=$((checks + 1))
}
status_of() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo unknown; }
# Our files in the server's directories, whoever put them there.
vector_files() {
  local f
  for f in "$libdir/vector.so" "$extdir/vector.control" "$extdir"/vector--*.sql \
    "$extdir/vector_rs.control" "$extdir"/vector_rs--*.sql; do
    [ ! -e "$f" ] || echo "$f"
  done
}

[ "$(id -u)" = 0 ] || fail "run as root (the test installs packages)"
for p in "$pkg" "$pgvector_pkg" "$dependent_pkg"; do
  case "$(status_of "$p")" in
  unknown | not-installed) ;;
  *) fail "$p is installed here; this test installs and purges it, so it will not run" ;;
  esac
done
mkdir -p "$work/aside"
chmod 755 "$work"
cd "$work"

server=""
server_start() { "$root/scripts/pg-server.sh" start "$PG15/bin" "$work/$1/data" "$port"; server=$1; }
server_stop() { "$root/scripts/pg-server.sh" stop "$PG15/bin" "$work/$server/data"; server=""; }
sql() {
  PGOPTIONS="-c client_min_messages=warning" "$PG15/bin/psql" -X -q -At -v ON_ERROR_STOP=1 \
    -h "$work/$server" -p "$port" -U postgres -d postgres "$@"
}

# Debian's cluster 15/main, which the README's package blocks stop and start: its state at the
# start ("online" or "down"; it is created if missing) is put back at the end.
main_status() { pg_lsclusters -h | awk '$1 == 15 && $2 == "main" { print $4 }'; }
main_was=""
main_sql() { runuser -u postgres -- psql --cluster 15/main -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# readme_block NAME: the README's block run as written, in a folder holding only the .deb.
readme_block() {
  rm -rf readme && mkdir readme && cp "$deb" readme/
  (cd readme && bash -euo pipefail <("$root/tests/readme_block.sh" "$1")) >"readme-$1.log" 2>&1 ||
    { cat "readme-$1.log"; fail "the README's $1 block failed"; }
}

# Back as it was: no test package, no test files, the set-aside files in place.
cleanup() {
  local rc=$?
  set +e
  [ -z "$server" ] || server_stop
  [ "$main_was" != down ] || [ "$(main_status)" = down ] || pg_ctlcluster 15 main stop >/dev/null 2>&1
  apt-mark unhold "$pkg" >/dev/null 2>&1
  for p in "$dependent_pkg" "$pkg" "$pgvector_pkg"; do
    [ "$(status_of "$p")" = unknown ] || dpkg --purge "$p" >/dev/null 2>&1
  done
  local f
  while read -r f; do
    # A file of before that was not moved yet stays.
    grep -qxF "$f" aside.list 2>/dev/null && [ ! -e "aside/$(basename "$f")" ] && continue
    rm -f "$f"
  done < <(vector_files)
  [ -f aside.list ] && while read -r f; do
    [ ! -e "aside/$(basename "$f")" ] || mv "aside/$(basename "$f")" "$f"
  done <aside.list
  if [ -s before.sha256 ] && ! sha256sum --quiet -c before.sha256; then
    echo "FAIL: the files set aside did not come back as they were"
    rc=1
  fi
  [ $rc -eq 0 ] || echo "package: FAILED after $checks checks (files in $work)"
  exit $rc
}
trap cleanup EXIT

vector_files >aside.list
while read -r f; do
  ! dpkg -S "$f" >/dev/null 2>&1 || fail "$f belongs to $(dpkg -S "$f" | cut -d: -f1), will not move it"
done <aside.list
# shellcheck disable=SC2046 # file names without spaces, from vector_files
[ ! -s aside.list ] || sha256sum $(cat aside.list) >before.sha256
while read -r f; do mv "$f" aside/; done <aside.list
expect "vector files left in $libdir and $extdir after setting aside" "$(vector_files)" ""

echo "== build (scripts/package.sh $pg_config; log in $work/build.log)"
"$root/scripts/package.sh" "$pg_config" >built.txt 2>build.log ||
  { tail -30 build.log; fail "scripts/package.sh failed"; }
mapfile -t built <built.txt
extversion=$(sed -n -E "s/^default_version *= *'([^']+)'.*/\1/p" "$root/vector.control")
crateversion=$(sed -n -E '/^\[package\]/,/^\[/ s/^version *= *"([^"]+)".*/\1/p' "$root/Cargo.toml")
version=$extversion+rs$crateversion
out=$(realpath -m "${CARGO_TARGET_DIR:-$root/target}")/package
deb=$out/${pkg}_${version}_$arch.deb
tarball=$out/vector-$version-pg15-$(uname -m).tar.gz
expect "files built" "${built[*]}" "$tarball $deb"

echo "== .deb fields"
field() { dpkg-deb -f "$deb" "$1"; }
expect Package "$(field Package)" "$pkg"
expect Version "$(field Version)" "1:$version"
expect Architecture "$(field Architecture)" "$arch"
# A relation field names the package as one of its comma-separated items (maybe versioned).
names() { grep -qE "(^|, *)$2( *\([^)]*\))?( *,|$)" <<<"$1"; }
for f in Conflicts Replaces Provides; do
  names "$(field "$f")" "$pgvector_pkg" || fail "$f: '$(field "$f")' does not name $pgvector_pkg"
  checks=$((checks + 1))
done
names "$(field Depends)" postgresql-15 || fail "Depends: '$(field Depends)' lacks postgresql-15"
names "$(field Depends)" libc6 || fail "Depends: '$(field Depends)' lacks libc6"
checks=$((checks + 2))
expect_match Maintainer "$(field Maintainer)" '^[^<]+ <[^@ ]+@[^> ]+>$'
expect_match Description "$(field Description)" 'PostgreSQL 15'

echo "== .deb files"
expected_files() {
  local prefix=$1 ext=$2 f
  echo "$prefix$libdir/vector.so"
  echo "$prefix$extdir/vector.control"
  echo "$prefix$extdir/vector--$extversion.sql"
  for f in "$root"/sql/vector--*.sql "$root"/sql/companion/vector_rs*; do echo "$prefix$extdir/$(basename "$f")"; done
  [ -z "$ext" ] || printf '%s\n' "$prefix/usr/share/doc/$pkg/copyright" "$prefix/usr/share/doc/$pkg/changelog.gz"
}
listing=$(dpkg-deb -c "$deb")
expect "file list" "$(awk '$1 !~ /^d/ { print $6 }' <<<"$listing" | sort)" "$(expected_files . doc | sort)"
expect "paths of the build machine" "$(awk '{ print $6 }' <<<"$listing" | grep -E '^\./(root|work|home|tmp)/|target/' || true)" ""
expect "owners other than root/root" "$(awk '$2 != "root/root"' <<<"$listing")" ""
expect "directories not 0755" "$(awk '$1 ~ /^d/ && $1 != "drwxr-xr-x"' <<<"$listing")" ""
expect "files not 0644" "$(awk '$1 !~ /^d/ && $1 != "-rw-r--r--"' <<<"$listing")" ""
rm -rf deb-x && dpkg-deb -x "$deb" deb-x
cmp "deb-x$extdir/vector.control" "$root/vector.control" || fail "control file differs from vector.control"
cmp "deb-x/usr/share/doc/$pkg/copyright" "$root/LICENSE" || fail "copyright differs from LICENSE"
checks=$((checks + 2))
so=deb-x$libdir/vector.so
expect "build paths in vector.so" \
  "$(strings "$so" | grep -F -e "$root" -e "$out" -e "${CARGO_HOME:-$HOME/.cargo}" | head -3 || true)" ""
expect "symbol table in vector.so (not stripped)" "$(readelf -S -W "$so" | grep -c '\.symtab' || true)" 0

echo "== dpkg -i over a stand-in for pgvector's package"
# stand_in NAME VERSION CONTROL-LINES [FILE CONTENT]...: a small Architecture: all package.
stand_in() {
  local name=$1 ver=$2 lines=$3 dir=$work/$1
  shift 3
  rm -rf "$dir" && mkdir -p "$dir/DEBIAN"
  while [ $# -gt 0 ]; do
    mkdir -p "$dir$(dirname "$1")" && printf '%s\n' "$2" >"$dir$1"
    shift 2
  done
  printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: test <test@localhost>\n%sDescription: stand-in for tests/package\n' \
    "$name" "$ver" "$lines" >"$dir/DEBIAN/control"
  dpkg-deb --root-owner-group --build "$dir" "$dir.deb" >/dev/null
}
stand_in "$pgvector_pkg" 0.8.0-1 "Depends: postgresql-15
" "$libdir/vector.so" "pgvector's library" "$extdir/vector.control" "default_version = '0.8.0'" \
  "$extdir/vector--0.8.0.sql" "-- pgvector 0.8.0" "$extdir/vector--0.7.4--0.8.0.sql" "-- pgvector upgrade"
dpkg -i "$pgvector_pkg.deb" >dpkg.log 2>&1 || { cat dpkg.log; fail "dpkg -i of the stand-in failed"; }
expect "stand-in status" "$(status_of "$pgvector_pkg")" installed
[ -n "$(main_status)" ] || pg_createcluster 15 main >/dev/null
main_was=$(main_status)
[ "$main_was" = online ] || pg_ctlcluster 15 main start
echo "== the README's package-install block, on cluster 15/main"
readme_block package-install
expect "$pkg status" "$(status_of "$pkg")" installed
expect "held" "$(apt-mark showhold "$pkg")" "$pkg"
expect "15/main after the block" "$(main_status)" online
expect_match "stand-in status after ours" "$(status_of "$pgvector_pkg")" '^(not-installed|config-files)$'
expect "pgvector's files left" "$(ls "$extdir"/vector--0.8.0.sql "$extdir"/vector--0.7.4--0.8.0.sql 2>/dev/null || true)" ""
expect "dpkg -V $pkg" "$(dpkg -V "$pkg" 2>&1)" ""
dpkg -L "$pkg" >installed.list
expect "installed files" "$(while read -r f; do [ -d "$f" ] || echo "$f"; done <installed.list | sort)" \
  "$(expected_files "" doc | sort)"
stand_in "$dependent_pkg" 1 "Depends: $pgvector_pkg (>= 0.8.0)
"
dpkg -i "$dependent_pkg.deb" >dpkg.log 2>&1 || { cat dpkg.log; fail "a package depending on $pgvector_pkg (>= 0.8.0) does not install"; }
expect "$dependent_pkg status" "$(status_of "$dependent_pkg")" installed
dpkg --purge "$dependent_pkg" >/dev/null
main_sql -c "CREATE DATABASE vector_package_test"
expect "15/main: extensions" "$(main_sql -d vector_package_test -c "CREATE EXTENSION vector" \
  -c "CREATE EXTENSION vector_rs" -c "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
  FROM pg_extension WHERE extname LIKE 'vector%'")" "vector $extversion, vector_rs 1.0"
main_sql -c "DROP DATABASE vector_package_test"
# The hold keeps apt from removing ours for pgvector's package (which would conflict with it).
if apt-get install -y "$work/$pgvector_pkg.deb" >apt.log 2>&1; then
  cat apt.log; fail "apt installed $pgvector_pkg over the held $pkg"
fi
expect_match "apt on the held package" "$(cat apt.log)" 'held packages'
expect "$pkg status after apt" "$(status_of "$pkg")" installed

# smoke: CREATE EXTENSION, its version, an hnsw index scan with the right rows.
smoke() {
  expect "extversion ($1)" "$(sql -c "CREATE EXTENSION vector" \
    -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")" "$extversion"
  sql -c "CREATE TABLE items (id int, v vector(2))" \
    -c "INSERT INTO items SELECT i, ARRAY[i, i] FROM generate_series(1, 300) i" \
    -c "CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops)"
  local query="SELECT id FROM items ORDER BY v <-> '[10.2,10.2]' LIMIT 3"
  expect_match "plan ($1)" "$(sql -c "SET enable_seqscan = off" -c "EXPLAIN (COSTS OFF) $query")" \
    'Index Scan using items_v_idx'
  expect "nearest rows ($1)" "$(sql -c "SET enable_seqscan = off" \
    -c "SELECT string_agg(id::text, ',') FROM ($query) s")" "10,11,9"
}

echo "== a fresh PostgreSQL 15 cluster on the package"
server_start deb
smoke deb
echo "== pg_regress (log in $work/regress.log)"
if ! REGRESS_OUT=$work/regress "$root/scripts/regress.sh" "$PG15" "$work/deb" "$port" >regress.log 2>&1; then
  tail -5 regress.log
  head -100 regress/regression.diffs 2>/dev/null
  fail "pg_regress on the package"
fi
checks=$((checks + 1))
server_stop

echo "== the README's package-remove block, on cluster 15/main"
readme_block package-remove
dpkg -s "$pkg" >/dev/null 2>&1 && fail "dpkg still knows $pkg after --purge"
expect "15/main after the block" "$(main_status)" down
checks=$((checks + 1))
expect "files left after purge" "$(while read -r f; do [ ! -e "$f" ] || [ -d "$f" ] || echo "$f"; done <installed.list)" ""
expect "doc directory after purge" "$(ls -d "/usr/share/doc/$pkg" 2>/dev/null || true)" ""
dpkg --purge "$pgvector_pkg" >/dev/null 2>&1 || true

echo "== tarball"
rm -rf tar-x && mkdir tar-x && tar -xzf "$tarball" -C tar-x
dir=tar-x/vector-$version-pg15-$(uname -m)
expect "tarball files" "$(cd "$dir" && find . -type f | sort)" \
  "$( (printf './%s\n' LICENSE install.sh lib/vector.so extension/vector.control "extension/vector--$extversion.sql"
    for f in "$root"/sql/vector--*.sql "$root"/sql/companion/vector_rs*; do echo "./extension/$(basename "$f")"; done) | sort)"
expect "tarball owners" "$(tar -tvzf "$tarball" | awk '$2 != "0/0"')" ""
cmp "$dir/lib/vector.so" "$so" || fail "the tarball's library differs from the .deb's"
checks=$((checks + 1))
mkdir -p fake-pg16 && printf '#!/bin/sh\necho "PostgreSQL 16.4"\n' >fake-pg16/pg_config && chmod +x fake-pg16/pg_config
if PG_CONFIG=$work/fake-pg16/pg_config DESTDIR=$work/destdir-16 "$dir/install.sh" >install.log 2>&1; then
  fail "install.sh accepted PostgreSQL 16"
fi
expect_match "install.sh for PostgreSQL 16" "$(cat install.log)" 'is for PostgreSQL 15'
expect "files written for PostgreSQL 16" "$(ls destdir-16 2>/dev/null || true)" ""
mkdir -p old-glibc && printf '#!/bin/sh\necho "glibc 2.31"\n' >old-glibc/getconf && chmod +x old-glibc/getconf
if PATH=$work/old-glibc:$PATH PG_CONFIG=$pg_config DESTDIR=$work/destdir-old "$dir/install.sh" >install.log 2>&1; then
  fail "install.sh accepted glibc 2.31"
fi
expect_match "install.sh on glibc 2.31" "$(cat install.log)" 'needs glibc [0-9.]+ or later'
expect "files written for glibc 2.31" "$(ls destdir-old 2>/dev/null || true)" ""
PG_CONFIG=$pg_config DESTDIR=$work/destdir "$dir/install.sh" >install.log 2>&1 || { cat install.log; fail "install.sh with DESTDIR"; }
expect "DESTDIR files" "$(cd destdir && find . -type f | sort)" "$(expected_files . "" | sort)"
expect "DESTDIR library mode" "$(stat -c %a "destdir$libdir/vector.so")" 755
PG_CONFIG=$pg_config "$dir/install.sh" >install.log 2>&1 || { cat install.log; fail "install.sh"; }
expect "installed by install.sh" "$(vector_files | sort)" "$(expected_files "" "" | sort)"
server_start tarball
smoke tarball
server_stop
PG_CONFIG=$pg_config "$dir/install.sh" --uninstall >install.log 2>&1 || { cat install.log; fail "install.sh --uninstall"; }
expect "files left by install.sh --uninstall" "$(vector_files)" ""

echo "package: $checks checks passed in ${SECONDS}s"
