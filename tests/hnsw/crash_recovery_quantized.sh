#!/usr/bin/env bash
# crash_recovery.sh on our quantized format: both indexes built WITH (quantization = 'rabitq2').
# Concurrent inserts (each stores its vector on a vector page first), deletes and VACUUMs (which
# free the vector slots of deleted elements for later inserts), an immediate shutdown; after
# recovery, the same checks: the page check (check_pages.py: vector pages, code records, each
# element's vector of the hash its record holds and the row's value; vector tuples a crash left
# without an element are counted), every committed row found, hnsw_index_parent_check with
# heapallindexed after recovery, after a VACUUM and after more inserts.
# Usage: tests/hnsw/crash_recovery_quantized.sh [WORKDIR]   (OURS=..., PORT_OURS)
HNSW_OPTIONS="quantization = 'rabitq2'" exec "$(dirname "$0")/crash_recovery.sh" "$@"
