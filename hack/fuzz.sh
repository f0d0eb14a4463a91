#!/usr/bin/env bash
# Fuzzes the front end's request path (target `request`) and the operator's tool-output parser
# (target `tool_output`) with cargo-fuzz (libFuzzer, AddressSanitizer).
#
#   hack/fuzz.sh                  1,000,000 executions per target (make fuzz)
#   FUZZ_SECONDS=25 hack/fuzz.sh  at most 25 s per target (make fuzz-smoke, run by make test)
#   hack/fuzz.sh request          one target only
#   FUZZ_BUILD_ONLY=1 hack/fuzz.sh  builds the targets, runs nothing (hack/prebuild.sh)
#
# Works from crates.io alone: cargo-fuzz is installed into $MTO_CACHE/cargo-fuzz when missing;
# the nightly toolchain is used when rustup has one, else stable with RUSTC_BOOTSTRAP=1 (the
# -Z flags cargo-fuzz passes need one of the two; FUZZ_TOOLCHAIN=stable forces the latter).
# Builds go to $MTO_CACHE/fuzz-target, never the workspace's target dir. New corpus entries go
# to $MTO_CACHE/fuzz-corpus/<target>; the committed seeds in fuzz/corpus/<target> are only
# read. A crash leaves its input in fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

MTO_CACHE=${MTO_CACHE:-$HOME/.cache/mcp-task-operator}
FUZZ_RUNS=${FUZZ_RUNS:-1000000}
FUZZ_SECONDS=${FUZZ_SECONDS:-}
FUZZ_TARGET_DIR=${FUZZ_TARGET_DIR:-$MTO_CACHE/fuzz-target}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request tool_output)

# cargo-fuzz, pinned by its own lock file, in a cache root of ours; one install at a time
# (hack/prebuild.sh may be installing it when make fuzz-smoke starts).
export PATH="$MTO_CACHE/cargo-fuzz/bin:$PATH"
mkdir -p "$MTO_CACHE"
exec 7>"$MTO_CACHE/.cargo-fuzz.lock"
flock 7
if ! command -v cargo-fuzz >/dev/null; then
  echo "fuzz: installing cargo-fuzz into $MTO_CACHE/cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --root "$MTO_CACHE/cargo-fuzz"
fi
flock -u 7

toolchain=()
if [ "${FUZZ_TOOLCHAIN:-}" != stable ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
  echo "fuzz: toolchain nightly" >&2
else
  # cargo-fuzz passes -Zsanitizer=address and -Cpasses=sancov-module-style -Z flags.
  export RUSTC_BOOTSTRAP=1
  echo "fuzz: toolchain $(rustc --version) with RUSTC_BOOTSTRAP=1" >&2
fi
# The Makefile exports the workspace's target dir; the fuzz build must not share it.
unset CARGO_TARGET_DIR
# cargo-fuzz's optimized build with 16 codegen units per crate instead of its default of one: a
# cold build took 13.2 min instead of 18.1 on two cores, and the targets ran as many inputs per
# second (request 119,574 and tool_output 53,632 in 26 s, against 127,454 and 52,377).
build=(--fuzz-dir fuzz --target-dir "$FUZZ_TARGET_DIR" --codegen-units 16)
if [ -n "${FUZZ_BUILD_ONLY:-}" ]; then
  for target in "${targets[@]}"; do
    cargo "${toolchain[@]}" fuzz build "${build[@]}" "$target"
  done
  exit 0
fi

for target in "${targets[@]}"; do
  scratch="$MTO_CACHE/fuzz-corpus/$target"
  mkdir -p "$scratch" "fuzz/artifacts/$target"
  limit=(-runs="$FUZZ_RUNS")
  [ -z "$FUZZ_SECONDS" ] || limit=(-max_total_time="$FUZZ_SECONDS")
  echo "fuzz: $target ${limit[*]}" >&2
  # First corpus dir is written (scratch), the second only read (the committed seeds).
  # libFuzzer's line per new input (NEW, REDUCE, pulse) is left out; the rest, a crash
  # report and the final stats included, is shown.
  cargo "${toolchain[@]}" fuzz run "${build[@]}" "$target" \
    "$scratch" "fuzz/corpus/$target" -- \
    "${limit[@]}" -max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 2>&1 |
    grep --line-buffered -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)[[:space:]]'
done
