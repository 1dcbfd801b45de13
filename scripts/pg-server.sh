#!/usr/bin/env bash
# Starts or stops a throwaway server as the unprivileged `postgres` user (Postgres refuses root).
#   scripts/pg-server.sh start PGBIN DATADIR PORT   (initdb on first use; socket in DATADIR/..)
#   scripts/pg-server.sh stop  PGBIN DATADIR
set -euo pipefail
action=$1 bin=$2 data=$3
# The servers inherit the caller's environment, RUST_BACKTRACE included: the library keeps its
# error reports free of backtraces whatever the environment (src/lib.rs).
as_postgres() {
  if [ "$(id -u)" = 0 ]; then set -- runuser -u postgres -- "$@"; fi
  "$@"
}
sockdir=$(dirname "$data")
case "$action" in
start)
  port=$4
  mkdir -p "$sockdir"
  [ "$(id -u)" = 0 ] && chown postgres "$sockdir"
  if [ ! -f "$data/PG_VERSION" ]; then
    # INITDB_OPTS: e.g. --no-data-checksums for tests that damage pages on purpose.
    as_postgres "$bin/initdb" -D "$data" -A trust -U postgres --no-sync ${INITDB_OPTS:-} >/dev/null
  fi
  as_postgres "$bin/pg_ctl" -D "$data" -w -l "$data.log" \
    -o "-p $port -k $sockdir -c listen_addresses='' -c fsync=off" start >/dev/null
  ;;
stop)
  as_postgres "$bin/pg_ctl" -D "$data" -w -m fast stop >/dev/null 2>&1 || true
  ;;
esac
