#!/usr/bin/env bash
# The main job, end to end on this machine: build the tools, build a C
# program with gcc and its site table embedded in `.debug_site_info`, run it
# several times, and join its feedback reports with the site table.
#
# Today the program is instrumented by hand (examples/quickstart/demo.c);
# once `sampler-cc` exists it will build it instead.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${QUICKSTART_DIR:-$(mktemp -d)}
mkdir -p "$work"

echo "==> building the tools (cargo build --release)"
cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" \
    -p sampler-extract -p sampler-resolve
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin="$target_dir/release"

echo "==> building examples/quickstart/demo.c with gcc into $work/demo"
cp "$root/examples/quickstart/demo.c" "$root/examples/quickstart/demo.sites" "$work/"
cd "$work"
gcc -g -O2 -c demo.c -o demo.o
objcopy --add-section .debug_site_info=demo.sites demo.o
gcc demo.o -o demo

echo "==> the site table embedded in the binary (extract-section)"
"$bin/extract-section" .debug_site_info demo | tee demo.extracted.sites

echo "==> running the program four times, one feedback report per run"
run=0
for input in "" 21 0 -5; do
    run=$((run + 1))
    status=0
    SAMPLER_FILE="run$run.report" ./demo $input >/dev/null 2>&1 || status=$?
    echo "run $run: ./demo $input -> exit status $status"
done

echo "==> run 4 alone (extract-report samples | resolve-samples demo)"
"$bin/extract-report" samples < run4.report | "$bin/resolve-samples" demo

echo "==> all four runs merged (cat run*.report | resolve-samples demo)"
cat run1.report run2.report run3.report run4.report | "$bin/resolve-samples" demo
echo "(columns: origin, unit, scheme, file, line, function, node, site text, counters)"
