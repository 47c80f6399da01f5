#!/usr/bin/env bash
# The README's main command: cooperative bug isolation, end to end, on the
# example that ships with the project (examples/). It builds the toolchain,
# then sampler-demo builds the example with sampler-cc, starts a collector
# on a temporary SQLite database, runs the example a few thousand times
# through sampler-run, prints what predicts its failures and its crash
# groups, and serves the dashboard until interrupted.
#
# Usage: scripts/demo.sh [--no-serve] [--runs N] [--seed S] [--sparsity N] [--dir DIR] ...
#        (scripts/demo.sh --help lists every option)
set -euo pipefail
cd "$(dirname "$0")/.."

# sampler-cc loads libclang (any version from 14 on) when it compiles.
if ! ls /usr/lib/x86_64-linux-gnu/libclang-*.so* /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "demo: installing libclang1-14, which sampler-cc needs" >&2
        apt-get update -qq && apt-get install -y -qq libclang1-14 >/dev/null
    else
        echo "demo: sampler-cc needs libclang: sudo apt-get install libclang1-14 (any libclang from 14 on)" >&2
        exit 1
    fi
fi

echo "demo: building the toolchain (cargo build --release; a few minutes the first time)" >&2
cargo build --release --locked --quiet \
    -p sampler-cc -p sampler-launcher -p sampler-runtime -p sampler-demo

# Where cargo put it (CARGO_TARGET_DIR, as cargo honours it).
exec "${CARGO_TARGET_DIR:-target}/release/sampler-demo" "$@"
