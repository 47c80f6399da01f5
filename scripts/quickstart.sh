#!/usr/bin/env bash
# The main job, end to end on this machine: build and install the toolchain,
# build a C program with sampler-cc (its site table goes into the binary's
# `.debug_site_info`), run it several times with sampling on, and join its
# feedback reports with the site table; then start the collector on a
# temporary SQLite database, register the build, upload the four runs by
# the CBI protocol and read them back through the read API.
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

echo "==> the collector: a temporary SQLite database in $work/collector-data"
command -v curl >/dev/null || { echo "quickstart: curl is needed to upload (apt-get install curl)" >&2; exit 1; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server="http://127.0.0.1:$port"
ingest=$("$bin/sampler-collector" token create --data collector-data --app demo --scope ingest)
read=$("$bin/sampler-collector" token create --data collector-data --app demo --scope read)
"$bin/sampler-collector" serve --data collector-data --listen "127.0.0.1:$port" 2>collector.log &
collector=$!
trap 'kill "$collector" 2>/dev/null; wait "$collector" 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "$server/healthz" >/dev/null && break; sleep 0.1; done

echo "==> registering the build (sampler-collector build add)"
"$bin/sampler-collector" build add --server "$server" --token "$ingest" --app demo --version 1.0 demo

echo "==> uploading the four runs (multipart, one gzip part per subreport, as the original launcher)"
run=0
for input in "" 21 0 -5; do
    run=$((run + 1))
    status=0
    ./demo $input >/dev/null 2>&1 || status=$?
    "$bin/extract-report" samples < "run$run.report" | gzip -9 > "run$run.samples.gz"
    id=$(curl -sf "$server/upload" -H "Authorization: Bearer $ingest" \
        -H "Sampler-Application-Name: demo" -H "Sampler-Application-Version: 1.0" \
        -H "Sampler-Sparsity: 1" -H "Sampler-Exit-Status: $status" -H "Sampler-Exit-Signal: 0" \
        -F "samples=@run$run.samples.gz;headers=\"Content-Encoding: gzip\"")
    echo "run $run (exit status $status) stored as $id"
done

echo "==> the build as the collector sees it (GET /api/v1/builds)"
curl -sf "$server/api/v1/builds?app=demo" -H "Authorization: Bearer $read"
echo
echo "==> run 4 read back with its counters resolved against the registered site table (GET /api/v1/runs/$id)"
curl -sf "$server/api/v1/runs/$id" -H "Authorization: Bearer $read" |
    python3 -c 'import json, sys
run = json.load(sys.stdin)
print("outcome", run["outcome"], "exit status", run["exit_status"])
for section in run["counters"]:
    for row in section["rows"]:
        print("\t".join([section["scheme"], row["file"].rsplit("/", 1)[-1], str(row["line"]), row["function"]] + row["fields"] + [str(c) for c in row["counters"]]))'
