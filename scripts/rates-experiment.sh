#!/usr/bin/env bash
# Issue 19's bug-isolation check: a crash on a path reached once per run
# (examples/eof-crash/eof.c: input without a final newline), found with
# learned rates against uniform sampling at the same expected number of
# observations per run.
#
# Usage: scripts/rates-experiment.sh [WORK]   (default /tmp/sampler-rates-experiment)
#
# Builds eof.c with target/release/sampler-cc, writes 2,600 inputs (python3,
# seeded), runs 1,000 training runs at sparsity 100 through sampler-run
# --save, learns rates (sampler-analyze rates), rebuilds with them, then runs
# the same 1,600 other inputs with the rated build at sparsity 100, the
# uniform build at the sparsity whose expected observations per run match
# the rated build's (`expected E U` of the rates file: D = 100 U / E), and
# the uniform build at 100; for the first 50, 100, ..., 1,600 runs of each it
# prints whether the crash's condition ranks first and its F and S counts.
# Needs: cargo build --release -p sampler-cc -p sampler-launcher
# -p sampler-analysis -p sampler-runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/target/release
work=${1:-/tmp/sampler-rates-experiment}
command -v python3 >/dev/null || { echo "rates-experiment.sh: needs python3" >&2; exit 2; }
rm -rf "$work"; mkdir -p "$work/in"
cd "$work"
python3 - <<'PY'
import random
random.seed(11)
for i in range(2600):
    lines = [''.join(random.choice('abc 0123456789xyz') for _ in range(random.randint(10, 60)))
             for _ in range(random.randint(100, 300))]
    text = '\n'.join(lines) + ('' if random.random() < 0.2 else '\n')
    open(f'in/{i:05d}', 'w').write(text)
PY
export SAMPLER_STATE_DIR=$work/state
runs() { # BINARY SPARSITY OUT FIRST LAST SEED-BASE
    mkdir -p "$3"
    for ((i = $4; i <= $5; i++)); do
        # In a subshell whose stderr is dropped: a crashing run is expected,
        # and bash would report each one.
        (SAMPLER_SEED=$((i + $6)) "$bin/sampler-run" --app eof --sparsity "$2" --save "$3" -- "./$1" \
            <"in/$(printf %05d "$i")" >/dev/null 2>&1; true) 2>/dev/null
    done
}
"$bin/sampler-cc" -fsampler-strict -O2 -g "$root/examples/eof-crash/eof.c" -o eof
runs eof 100 train 0 999 1
"$bin/sampler-analyze" rates --runs train eof --sparsity 100 -o eof.rates
read -r expected uniform < <(awk -F'\t' '$1 == "expected" { print $2, $3 }' eof.rates)
matched=$(awk -v e="$expected" -v u="$uniform" 'BEGIN { printf "%d", 100 * u / e + 0.5 }')
echo "rates: $expected expected observations per run, $uniform uniform at 100: matched uniform sparsity $matched"
"$bin/sampler-cc" -fsampler-strict -O2 -g -fsampler-rates="$work/eof.rates" "$root/examples/eof-crash/eof.c" -o eof-rated
runs eof-rated 100 rated 1000 2599 50000
runs eof "$matched" "uniform-$matched" 1000 2599 50000
runs eof 100 uniform-100 1000 2599 50000
for set in rated "uniform-$matched" uniform-100; do
    program=eof; [[ $set == rated ]] && program=eof-rated
    for n in 50 100 200 400 800 1600; do
        sub=$work/sub-$set-$n; rm -rf "$sub"; mkdir -p "$sub"
        find "$work/$set" -name '*.report' | sort | awk -v n="$n" 'NR <= n' | while read -r f; do ln -s "$f" "$sub/"; done
        first=$("$bin/sampler-analyze" --runs "$sub" "$program" --format csv 2>/dev/null |
            awk -F, 'NR == 2 { print "line " $4 ": " $7 ", F " $17 ", S " $18 }')
        echo "$set, $n runs: ${first:-nothing retained}"
    done
done
