#!/usr/bin/env bash
# io_identical.sh on our quantized format: an index WITH (quantization = 'rabitq4') larger than
# shared_buffers (4MB here: graph pages of codes plus vector pages), 300 queries with every
# hnsw.io_method and look-ahead, cold (page cache dropped, buffers evicted), with
# effective_io_concurrency 1 and 0 besides 16, and warm (right after a cold run, nothing
# emptied). Same ids in the same order and the same blocks asked for everywhere; the reranks
# (EXPLAIN (ANALYZE, HNSW) of 100 queries) read the same vector blocks for the same candidates.
# Usage: tests/hnsw/io_identical_quantized.sh WORKDIR   (OURS=..., PORT_OURS)
HNSW_OPTIONS="quantization = 'rabitq4'" IO_ROWS=${IO_ROWS:-12000} IO_QUERIES=${IO_QUERIES:-300} \
  IO_SHARED_BUFFERS=${IO_SHARED_BUFFERS:-4MB} MIN_COLD_READS=${MIN_COLD_READS:-2000} IO_EXTRA_CONFIGS="prefetch2_eic1 prefetch 2 1 0
stream2_eic1 read_stream 2 1 0
prefetch2_eic0 prefetch 2 0 0
stream8_eic0 read_stream 8 0 0
stream8_warm read_stream 8 16 1
off_warm off 0 16 1
prefetch8_warm prefetch 8 16 1" exec "$(dirname "$0")/io_identical.sh" "$@"
