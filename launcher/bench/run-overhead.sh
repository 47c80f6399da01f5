#!/usr/bin/env bash
# What sampler-run costs around a program: `sampler-run -- true` against
# `true`, and an instrumented program through sampler-run (uploading to a
# real collector on loopback, sampling at 100) against the same program
# alone. Runs alternate; prints the median and the 90th percentile of
# wall-clock time of each, in milliseconds.
#
# Usage: launcher/bench/run-overhead.sh [RUNS]     (default 200)
set -euo pipefail

runs=${1:-200}
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" \
    -p sampler-cc -p sampler-runtime -p sampler-collector -p sampler-launcher
release="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
collector_pid=
cleanup() {
    if [ -n "$collector_pid" ]; then kill "$collector_pid" 2>/dev/null || true; wait "$collector_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/package-runtime.sh" "$release/libsampler_runtime.a" "$work/runtime" >/dev/null
cat > "$work/demo.c" <<'C'
#include <stdio.h>
static int step(int x) { return x % 7 == 3 ? x / 2 : 3 * x + 1; }
int main(void) {
    long sum = 0;
    for (int i = 1; i < 20000; i++) {
        int x = i;
        for (int k = 0; k < 20 && x != 1; k++) x = step(x);
        if (x > 1000) sum += x;
    }
    printf("%ld\n", sum);
    return 0;
}
C
SAMPLER_RUNTIME_DIR="$work/runtime" "$release/sampler-cc" -O2 -fsampler-strict -o "$work/demo" "$work/demo.c"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$release/sampler-collector" serve --data "$work/data" --listen "127.0.0.1:$port" 2>/dev/null &
collector_pid=$!
token=$("$release/sampler-collector" token create --data "$work/data" --app demo --scope ingest)
for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null; then break; fi
    sleep 0.1
done

export SAMPLER_STATE_DIR="$work/state" XDG_CONFIG_HOME="$work/config" SAMPLER_SYSTEM_CONFIG_DIR="$work/etc"
mkdir -p "$work/config/sampler"
printf 'server = "http://127.0.0.1:%s"\ntoken = "%s"\n' "$port" "$token" > "$work/config/sampler/demo.toml"
"$release/sampler-run" consent yes >/dev/null

python3 - "$runs" "$release/sampler-run" "$work/demo" <<'PY'
import statistics, subprocess, sys, time
runs, launcher, demo = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cases = {
    "true": ["true"],
    "sampler-run -- true": [launcher, "--app", "demo", "--", "true"],
    "demo (instrumented, alone)": [demo],
    "sampler-run -- demo (upload)": [launcher, "--app", "demo", "--", demo],
}
times = {name: [] for name in cases}
for _ in range(runs):
    for name, argv in cases.items():
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times[name].append((time.perf_counter() - start) * 1000)
print(f"{'command':32} {'median ms':>10} {'p90 ms':>8}   ({runs} runs each, alternating)")
for name, values in times.items():
    values.sort()
    print(f"{name:32} {statistics.median(values):10.2f} {values[int(len(values) * 0.9)]:8.2f}")
PY
"$release/sampler-run" status | sed -n "s/^  uploaded: /uploaded: /p"
