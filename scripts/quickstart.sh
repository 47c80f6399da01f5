#!/usr/bin/env bash
# The main job, end to end on this machine: build and install the toolchain,
# build a C program with sampler-cc (its site table goes into the binary's
# `.debug_site_info`), run it several times with sampling on, and join its
# feedback reports with the site table.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${QUICKSTART_DIR:-$(mktemp -d)}
mkdir -p "$work"
prefix=${SAMPLER_PREFIX:-$work/toolchain}

echo "==> building and installing the toolchain into $prefix"
"$root/scripts/install.sh" "$prefix"
bin="$prefix/bin"

echo "==> building examples/quickstart/demo.c with sampler-cc into $work/demo"
cp "$root/examples/quickstart/demo.c" "$work/"
cd "$work"
"$bin/sampler-cc" -fsampler-strict -fsampler-scheme=branches -fsampler-scheme=returns \
    -g -O2 -Wall -Wextra demo.c -o demo

echo "==> the site table embedded in the binary (extract-section)"
"$bin/extract-section" .debug_site_info demo | tee demo.sites

echo "==> running the program four times, one feedback report per run"
echo "    (SAMPLER_SPARSITY=1 observes every event; real deployments use 100 or more)"
run=0
for input in "" 21 0 -5; do
    run=$((run + 1))
    status=0
    SAMPLER_SPARSITY=1 SAMPLER_FILE="run$run.report" ./demo $input >/dev/null 2>&1 || status=$?
    echo "run $run: ./demo $input -> exit status $status"
done

echo "==> run 4 alone (extract-report samples | resolve-samples demo)"
"$bin/extract-report" samples < run4.report | "$bin/resolve-samples" demo

echo "==> all four runs merged (cat run*.report | resolve-samples demo)"
cat run1.report run2.report run3.report run4.report | "$bin/resolve-samples" demo
echo "(columns: origin, unit, scheme, file, line, function, statement, site text, counters)"
