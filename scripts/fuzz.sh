#!/usr/bin/env bash
# Coverage-guided fuzzing with AFL++ (cargo-afl, which works on stable Rust) of the page checks
# (hnsw and ivfflat, over pgvector-built pages with patches), the datum readers, the text
# parsers and the binary receive functions: crates/fuzz. Fails if AFL saved a crash or a hang.
#   scripts/fuzz.sh [SECONDS]   (default 600; installs cargo-afl on first use)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
export PATH=$HOME/.cargo/bin:$PATH
command -v cargo-afl >/dev/null || cargo install --locked cargo-afl@0.18.2
cargo afl config --build >/dev/null 2>&1 || true   # the AFL++ runtime, once per toolchain
cd "$root/crates/fuzz"
cargo afl build --release
work=$(mktemp -d /tmp/vector-fuzz.XXXXXX)
mkdir -p "$work/in"
# One seed per target (the first byte chooses it; see crates/fuzz/src/main.rs).
printf '\x00\x01\x10\x00\x04abcd' > "$work/in/hnsw"
printf '\x01\x02\x20\x00\x02zz' > "$work/in/ivfflat"
printf '\x02\x00\x00\x00\x0c\x03\x00\x00\x00' > "$work/in/datum"
printf '\x03\x00[1,2,3]' > "$work/in/text"
printf '\x04\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00' > "$work/in/recv"
AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
  cargo afl fuzz -i "$work/in" -o "$work/out" -V "$seconds" target/release/vector-fuzz > "$work/afl.log" 2>&1
stats=$work/out/default/fuzzer_stats
get() { awk -F' *: *' -v k="$1" '$1 == k {print $2}' "$stats"; }
echo "fuzz: $(get execs_done) executions in $(get run_time) s, $(get corpus_count) corpus entries, $(get saved_crashes) crashes, $(get saved_hangs) hangs ($work)"
[ "$(get saved_crashes)" = 0 ] && [ "$(get saved_hangs)" = 0 ]
