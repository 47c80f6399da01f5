#!/usr/bin/env bash
# Side-by-side CPU time and callgrind instructions of the two forms of the
# sampling transform (issue 16): plain gcc; sampler-cc -fsample-sites (one
# decision per site event, the default) and -fsample-regions (one decision
# per region execution), each run at SAMPLER_SPARSITY=100 and 1000; both
# with branches, returns and scalar-pairs, CFLAGS "-O2 -g".
#
# Usage: sampler-cc/bench/sample-forms.sh SAMPLER_CC WORK RUNS PROGRAM...
#   PROGRAM: zlib (minigzip) or bc, built, with the same workloads (full
#   size for CPU time, small for callgrind), as scripts/bench-runtime.sh;
#   sources are Debian's tarballs in ${SAMPLER_CORPUS_CACHE:-~/.cache/sampler-corpus}
#   (fetched like scripts/corpus.sh does when missing). Builds are kept in
#   WORK and reused (delete WORK after changing SAMPLER_CC). Every form's
#   output is compared with plain's first; then RUNS rounds run every form
#   once in turn (user+sys seconds, /usr/bin/time), then one callgrind run
#   each (SAMPLER_SEED=1). Prints a markdown table per program (medians).
set -euo pipefail
cc=$1 work=$2 runs=$3; shift 3
export LC_ALL=C
unset SAMPLER_FILE SAMPLER_SPARSITY SAMPLER_SEED
schemes="-fsampler-scheme=branches -fsampler-scheme=returns -fsampler-scheme=scalar-pairs"
cache=${SAMPLER_CORPUS_CACHE:-$HOME/.cache/sampler-corpus}
mkdir -p "$cache"
die() { echo "sample-forms.sh: $*" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/debian-source.sh
. "$(dirname "$0")/../../scripts/lib/debian-source.sh"
mkdir -p "$work"
# FORMS (environment): the sampled forms to compare with plain, among
# sites, regions, split (-fsample-split-loops), whole
# (-fsample-whole-loops), warm (-fsample-warm-loops), warmf
# (-fsample-warm-functions), within (-fno-sample-across-calls: runs end
# at calls to functions with sites), flat (-fno-sample-nested-loops: no
# region for the iteration of a loop with loops inside), linear
# (-fno-sample-nested-runs: loops end runs), inline
# (-fno-sample-outlined-functions: a function that is one run keeps
# its SLOW copy inside) and rolled (-fno-sample-unrolled-loops:
# one decrement per iteration of every loop not counted); default
# "sites regions".
read -r -a sampled_forms <<<"${FORMS:-sites regions}"
forms=(plain "${sampled_forms[@]}")
variants=(plain)
for f in "${sampled_forms[@]}"; do
    [[ $f == sites || $f == regions || $f == split || $f == whole || $f == warm || $f == warmf || $f == within || $f == rolled || $f == flat || $f == linear || $f == inline ]] || die "unknown form $f in FORMS"
    variants+=("$f-100" "$f-1000")
done
form_cc() { case $1 in plain) echo gcc ;; *) echo "$cc" ;; esac; }
form_flags() { case $1 in plain) echo "-O2 -g" ;; sites) echo "-O2 -g $schemes -fsample-sites" ;; regions) echo "-O2 -g $schemes -fsample-regions" ;; split) echo "-O2 -g $schemes -fsample-split-loops" ;; whole) echo "-O2 -g $schemes -fsample-whole-loops" ;; warm) echo "-O2 -g $schemes -fsample-warm-loops" ;; warmf) echo "-O2 -g $schemes -fsample-warm-functions" ;; within) echo "-O2 -g $schemes -fno-sample-across-calls" ;; rolled) echo "-O2 -g $schemes -fno-sample-unrolled-loops" ;; flat) echo "-O2 -g $schemes -fno-sample-nested-loops" ;; linear) echo "-O2 -g $schemes -fno-sample-nested-runs" ;; inline) echo "-O2 -g $schemes -fno-sample-outlined-functions" ;; esac; }
build() { # program form
    local p=$1 f=$2 src=$work/$1/$2 fcc fflags
    [[ -x $src/done ]] && return 0
    rm -rf "$src"; mkdir -p "$src"
    fcc=$(form_cc "$f"); fflags=$(form_flags "$f")
    case $p in
        zlib) tar -xf "$(fetch_orig zlib)" -C "$src" --strip-components=1
              (cd "$src" && env CC="$fcc" CFLAGS="$fflags" ./configure --static >/dev/null && make -j1 minigzip CC="$fcc $fflags" >/dev/null) ;;
        bc) tar -xf "$(fetch_orig bc)" -C "$src" --strip-components=1
            (cd "$src" && ./configure CC="$fcc" CFLAGS="$fflags" >/dev/null && make -j1 -C lib CC="$fcc" >/dev/null && make -j1 -C bc CC="$fcc" >/dev/null) ;;
    esac
    printf '#!/bin/sh\n' >"$src/done"; chmod +x "$src/done"
}
binary() { case $1 in zlib) echo "$work/zlib/$2/minigzip" ;; bc) echo "$work/bc/$2/bc/bc" ;; esac; }
input() { # program size
    local in
    case $1 in
        zlib) in=$work/zlib-input-$2.dat
              if [[ ! -f $in ]]; then
                  { tar -xOf "$(fetch_orig zlib)"; cat "$(fetch_orig zlib)"; } >"$in.unit"
                  n=$([[ $2 == full ]] && echo 24 || echo 1)
                  for ((i = 0; i < n; i++)); do cat "$in.unit"; done >"$in"; rm "$in.unit"
              fi ;;
        bc) in=$work/bc-input-$2.b
            if [[ $2 == full ]]; then pi=1500 fib=28 sieve=600000 terms=20000; else pi=400 fib=20 sieve=40000 terms=1500; fi
            cat >"$in" <<EOB
scale = $pi
p = 4 * a(1)
length(p)
define f(n) { if (n < 2) return (n); return (f(n - 1) + f(n - 2)); }
scale = 0
f($fib)
n = $sieve
for (i = 2; i <= n; i++) s[i] = 1
for (i = 2; i * i <= n; i++) if (s[i]) for (j = i * i; j <= n; j += i) s[j] = 0
c = 0; for (i = 2; i <= n; i++) c += s[i]
c
scale = 50
x = 0; for (i = 1; i <= $terms; i++) { x = x + sqrt(i) / i }
x
EOB
            ;;
    esac
    echo "$in"
}
workload() { # program bin in outdir [runner...]
    local p=$1 bin=$2 in=$3 out=$4; shift 4
    case $p in
        zlib) "$@" "$bin" -c "$in" >"$out/x.gz" && "$@" "$bin" -d -c "$out/x.gz" >"$out/x.out" ;;
        bc) "$@" "$bin" -lq "$in" </dev/null >"$out/stdout" ;;
    esac
}
env_of() { case $1 in plain) echo "" ;; *-100) echo "SAMPLER_SEED=1 SAMPLER_FILE=/dev/null SAMPLER_SPARSITY=100" ;; *-1000) echo "SAMPLER_SEED=1 SAMPLER_FILE=/dev/null SAMPLER_SPARSITY=1000" ;; esac; }
for p in "$@"; do
    for f in "${forms[@]}"; do echo "build $p $f" >&2; build "$p" "$f"; done
    full=$(input "$p" full); small=$(input "$p" small)
    mkdir -p "$work/out"
    # check outputs
    for v in "${variants[@]}"; do
        f=${v%%-*}; mkdir -p "$work/out/$v"
        read -r -a vars <<<"$(env_of "$v")"
        workload "$p" "$(binary "$p" "$f")" "$full" "$work/out/$v" env "${vars[@]}"
    done
    for v in "${variants[@]}"; do
        if [[ $p == zlib ]]; then cmp "$work/out/plain/x.out" "$work/out/$v/x.out"; else cmp "$work/out/plain/stdout" "$work/out/$v/stdout"; fi
    done
    declare -A times=()
    for ((r = 0; r < runs; r++)); do
        for v in "${variants[@]}"; do
            f=${v%%-*}
            rm -f "$work"/time.txt
            read -r -a vars <<<"$(env_of "$v")"
            workload "$p" "$(binary "$p" "$f")" "$full" "$work/out/$v" env "${vars[@]}" /usr/bin/time -a -o "$work/time.txt" -f '%U %S'
            t=$(awk '{s+=$1+$2} END {printf "%.3f", s}' "$work"/time.txt)
            times[$v]+=" $t"
            echo "round $r $p $v $t" >&2
        done
    done
    declare -A ir=()
    for v in "${variants[@]}"; do
        f=${v%%-*}
        rm -f "$work"/cg.log
        read -r -a vars <<<"$(env_of "$v")"
        workload "$p" "$(binary "$p" "$f")" "$small" "$work/out/$v" env "${vars[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p.out" --log-file="$work/cg.log.%p"
        ir[$v]=$(cat "$work"/cg.log.* | grep -h "Collected" | awk '{s+=$4} END {printf "%.0f", s}')
        rm -f "$work"/cg.log.*
        rm -f "$work"/cg.*.out
        echo "callgrind $p $v ${ir[$v]}" >&2
    done
    echo "| $p | median CPU s | ratio | Ir (callgrind) | Ir ratio | runs |"
    echo "|---|---:|---:|---:|---:|---|"
    # The median of one variant's times, kept as " t1 t2 ...".
    median() {
        local -a all
        read -r -a all <<<"${times[$1]}"
        printf '%s\n' "${all[@]}" | sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'
    }
    pm=$(median plain)
    for v in "${variants[@]}"; do
        m=$(median "$v")
        echo "| $v | $m | $(awk -v a="$m" -v b="$pm" 'BEGIN{printf "%.3f", a/b}') | ${ir[$v]} | $(awk -v a="${ir[$v]}" -v b="${ir[plain]}" 'BEGIN{printf "%.3f", a/b}') |${times[$v]} |"
    done
done
