#!/usr/bin/env bash
# pgvector-python with psycopg 3, SQLAlchemy and Django against our library, then the same
# script against pristine pgvector 0.8.6 (so every check is one pgvector passes too).
# The client libraries are pinned and installed once into a virtualenv under
# ~/.cache/vector-ci (CLIENTS_VENV to override).
# Usage: tests/clients/run.sh [WORKDIR]   (OURS=..., PGVECTOR=..., ports)
set -euo pipefail
work=${1:-$(mktemp -d /tmp/clients.XXXXXX)}
. "$(dirname "$0")/../lib.sh"
rm -rf "$work/cluster"
venv=${CLIENTS_VENV:-$HOME/.cache/vector-ci/clients-venv}
packages=(pgvector==0.5.1 "psycopg[binary]==3.3.9" sqlalchemy==2.1.9 django==5.2.19 numpy==2.3.5)
stamp="$venv/.installed-$(echo "${packages[*]}" | md5sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "-- installing ${packages[*]} into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${packages[@]}"
  touch "$stamp"
fi

for lib in ours pgvector; do
  rm -rf "$work/cluster"
  start "$lib"
  echo "== $lib"
  PGHOST="$work/cluster" PGPORT="$(port_of "$lib")" PGUSER=postgres PGDATABASE=postgres \
    "$venv/bin/python" "$here/clients/pgvector_python.py"
  stop "$lib"
done
echo "clients: ok"
