#!/usr/bin/env bash
# The 8-session soak on an ivfflat index (lists 40; searches at probes 10 and 40, iterative ones
# from probes 1 up to max_probes 20; recall at probes 15) against pgvector 0.8.6, ending with
# ivfflat_index_parent_check('t_idx', true) and every row found in its nearest center's list:
# see tests/soak.sh, the one implementation of both access methods' soaks.
# Usage: tests/ivfflat/soak.sh [WORKDIR] [SECONDS]   (default 20; a long run:
#        tests/ivfflat/soak.sh /tmp/soak 300)   (OURS=..., PGVECTOR=..., PORT_OURS, PORT_PGVECTOR)
set -euo pipefail
exec "$(dirname "$0")/../soak.sh" ivfflat "$@"
