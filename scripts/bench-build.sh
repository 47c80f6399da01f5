#!/usr/bin/env bash
# Build-time benchmark: compile the sqlite3 amalgamation (one 9 MB, 258k-line
# C file), or build zlib with its own make, with plain gcc and with our
# compiler, and compare. Targets for sampler-cc (issue 16): at most 2x plain
# `gcc -O2` with the default schemes, at most 3x when the flags add
# scalar-pairs.
#
# Usage:
#   scripts/bench-build.sh [--project sqlite|zlib] [--cc PATH] [--runs N]
#                          [--extra "FLAGS"]
#
#   --project NAME  sqlite (default): the amalgamation, one compile;
#                   zlib: `make` of zlib (Debian 12's 1.2.13, configured
#                   `--static`: libz.a, example and minigzip, and their
#                   64-bit-offset twins), one job, in a tree configured
#                   once for each compiler and cleaned before each run
#   --cc PATH       compiler under test (default: sampler-cc)
#   --runs N        timed runs of each command (default: 3)
#   --extra FLAGS   flags added to the tested compile only, e.g.
#                   "-fsampler-scheme=branches -fsampler-scheme=returns"
#
# Each round runs, one after the other (sqlite),
#   preprocess:  gcc -O2 -E sqlite3.c              (for reference)
#   gcc:         gcc -O2 -c sqlite3.c -o gcc.o
#   tool:        $cc -O2 $extra -c sqlite3.c -o tool.o
# or (zlib) `make clean` then `make` in the gcc tree (CFLAGS=-O2) and in
# the tool's (CFLAGS="-O2 $extra"), so that machine-load drifts hit both
# sides alike; it prints each run, the
# median wall-clock time of each, and the ratio tool/gcc. With GNU time
# (/usr/bin/time, Debian's `time` package) it also prints the peak memory
# of each compile: the largest resident set of any one process of it (for
# the tool, sampler-cc's own stage with libclang, or the cc1 it runs on
# the instrumented text), median over the runs.
#
# zlib's source is Debian 12's pristine upstream tarball, fetched with
# `apt-get source --download-only` into the same cache, as
# scripts/bench-runtime.sh does (scripts/lib/debian-source.sh).
#
# The amalgamation (SQLite 3.46.0) comes from the crates.io crate
# libsqlite3-sys 0.30.1, which bundles sqlite3/sqlite3.c; the .crate is
# checked against its crates.io checksum and cached in
# ${SAMPLER_CORPUS_CACHE:-~/.cache/sampler-corpus}. Scratch files go to a
# temporary directory that is removed at exit.
set -euo pipefail

project=sqlite
cc=sampler-cc
runs=3
extra=
cache=${SAMPLER_CORPUS_CACHE:-$HOME/.cache/sampler-corpus}
crate_version=0.30.1
crate_sha256=2e99fb7a497b1e3339bc746195567ed8d3e24945ecd636e3619d20b9de9e9149
crate_url=https://static.crates.io/crates/libsqlite3-sys/libsqlite3-sys-$crate_version.crate

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "bench-build.sh: $*" >&2; exit 2; }

while (($#)); do
    case $1 in
        --project) project=${2:?--project needs a value}; shift 2 ;;
        --project=*) project=${1#*=}; shift ;;
        --cc) cc=${2:?--cc needs a value}; shift 2 ;;
        --cc=*) cc=${1#*=}; shift ;;
        --runs) runs=${2:?--runs needs a value}; shift 2 ;;
        --runs=*) runs=${1#*=}; shift ;;
        --extra) extra=${2?--extra needs a value}; shift 2 ;;
        --extra=*) extra=${1#*=}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ $project == sqlite || $project == zlib ]] || die "--project must be sqlite or zlib"
command -v "$cc" >/dev/null || die "compiler not found: $cc (try --cc gcc)"
command -v gcc >/dev/null || die "gcc not found"
read -r -a extra_flags <<<"$extra"
max_ratio=2
[[ " $extra " == *scalar-pairs* ]] && max_ratio=3

tmp=$(mktemp -d /tmp/bench-build.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$cache"

if [[ $project == sqlite ]]; then
    # --- the amalgamation ---------------------------------------------------
    crate=$cache/libsqlite3-sys-$crate_version.crate
    if [[ ! -f $crate ]]; then
        echo "==> downloading $crate_url"
        curl -fsSL --retry 3 -o "$crate.part" "$crate_url"
        mv "$crate.part" "$crate"
    fi
    echo "$crate_sha256  $crate" | sha256sum --check --quiet ||
        die "$crate: checksum mismatch; delete it and rerun"
    tar -xzf "$crate" -C "$tmp" --strip-components=2 \
        "libsqlite3-sys-$crate_version/sqlite3/sqlite3.c"
    src=$tmp/sqlite3.c
    version=$(sed -n 's/^#define SQLITE_VERSION  *"\(.*\)"/\1/p' "$src" | head -n 1)
    title="sqlite3.c $version ($(wc -l <"$src") lines)"
    plain_cmd=(gcc -O2 -c sqlite3.c -o gcc.o)
    tool_cmd=("$cc" -O2 "${extra_flags[@]}" -c sqlite3.c -o tool.o)
else
    # --- zlib, configured once for each compiler ------------------------------
    # shellcheck source-path=SCRIPTDIR source=lib/debian-source.sh
    . "$(dirname "$0")/lib/debian-source.sh"
    tarball=$(fetch_orig zlib)
    for side in gcc tool; do
        mkdir "$tmp/$side"
        tar -xf "$tarball" -C "$tmp/$side" --strip-components=1
    done
    # zlib's configure reads CC and CFLAGS from the environment only.
    (cd "$tmp/gcc" && CC=gcc CFLAGS=-O2 ./configure --static) >"$tmp/configure-gcc.log" 2>&1 ||
        die "zlib's configure failed with gcc: $(tail -n 3 "$tmp/configure-gcc.log")"
    (cd "$tmp/tool" && CC=$cc CFLAGS="-O2 $extra" ./configure --static) >"$tmp/configure-tool.log" 2>&1 ||
        die "zlib's configure failed with $cc: $(tail -n 3 "$tmp/configure-tool.log")"
    title="zlib $(basename "$tarball" | sed 's/^zlib_\(.*\)\.orig\.tar\..*/\1/') (make, one job)"
    plain_cmd=(make -C gcc)
    tool_cmd=(make -C tool)
fi

# --- timing -----------------------------------------------------------------
# GNU time reports the largest maxrss among the process and the descendants
# it waited for, in KiB; without it, no memory figures.
gnu_time=
if /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
    gnu_time=/usr/bin/time
fi
now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$((10#$t))"; }
secs() { printf '%d.%03d' "$(($1 / 1000000))" "$(($1 % 1000000 / 1000))"; }

# time_us NAME CMD...: runs CMD in $tmp (output to $tmp/NAME.log), appends the
# wall-clock microseconds to the array named NAME and, with GNU time, the
# peak resident set in KiB to NAME_rss; fails if CMD fails.
time_us() {
    local -n samples=$1
    local -n peaks=${1}_rss
    local name=$1 t0 t1
    shift
    local measure=()
    [[ -n $gnu_time ]] && measure=("$gnu_time" -f %M -o "$tmp/$name.rss")
    t0=$(now_us)
    if ! (cd "$tmp" && "${measure[@]}" "$@") >"$tmp/$name.log" 2>&1; then
        echo "bench-build.sh: failed: $*" >&2
        cat "$tmp/$name.log" >&2
        exit 1
    fi
    t1=$(now_us)
    samples+=("$((t1 - t0))")
    [[ -n $gnu_time ]] && peaks+=("$(tail -n 1 "$tmp/$name.rss")")
    return 0
}
# mib KIB: KiB as MiB.
mib() { echo "$(($1 / 1024)) MiB"; }

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "==> $title, $runs runs each, $(nproc) cores"
echo "    gcc:  ${plain_cmd[*]}"
echo "    tool: ${tool_cmd[*]}${extra:+ (CFLAGS -O2 $extra)}"
# shellcheck disable=SC2034  # preprocess_rss is filled by time_us, through a nameref
preprocess=() plain=() tool=() preprocess_rss=() plain_rss=() tool_rss=()
for ((i = 1; i <= runs; i++)); do
    if [[ $project == sqlite ]]; then
        time_us preprocess gcc -O2 -E sqlite3.c -o /dev/null
    else
        make -C "$tmp/gcc" clean >/dev/null && make -C "$tmp/tool" clean >/dev/null
        preprocess+=(0)
    fi
    time_us plain "${plain_cmd[@]}"
    time_us tool "${tool_cmd[@]}"
    pre=
    [[ $project == sqlite ]] && pre="preprocess $(secs "${preprocess[-1]}") s, "
    printf '    run %d: %sgcc %s s, tool %s s\n' "$i" "$pre" \
        "$(secs "${plain[-1]}")" "$(secs "${tool[-1]}")"
    if [[ -n $gnu_time ]]; then
        printf '           peak memory: gcc %s, tool %s\n' "$(mib "${plain_rss[-1]}")" "$(mib "${tool_rss[-1]}")"
    fi
done
if [[ -s $tmp/tool.log ]]; then
    echo "    (the tool printed $(wc -l <"$tmp/tool.log") lines on its last run; $(grep -c 'warning:' "$tmp/tool.log" || true) warnings)"
fi

m_pre=$(median "${preprocess[@]}")
m_gcc=$(median "${plain[@]}")
m_tool=$(median "${tool[@]}")
ratio=$(awk -v a="$m_tool" -v b="$m_gcc" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" -v m="$max_ratio" 'BEGIN { print (r <= m) ? "within" : "OVER" }')
pre=
[[ $project == sqlite ]] && pre="preprocess $(secs "$m_pre") s, "
echo "==> medians: ${pre}gcc -O2 $(secs "$m_gcc") s, tool $(secs "$m_tool") s"
echo "==> ratio tool/gcc: ${ratio}x ($verdict the ${max_ratio}x target)"
if [[ -n $gnu_time ]]; then
    p_gcc=$(median "${plain_rss[@]}")
    p_tool=$(median "${tool_rss[@]}")
    echo "==> peak memory (largest process, median): gcc -O2 $(mib "$p_gcc"), tool $(mib "$p_tool")" \
        "($(awk -v a="$p_tool" -v b="$p_gcc" 'BEGIN { printf "%.2f", a / b }')x)"
else
    echo "==> peak memory: not measured (no GNU time at /usr/bin/time)"
fi
