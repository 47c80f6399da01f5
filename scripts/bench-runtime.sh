#!/usr/bin/env bash
# shellcheck disable=SC2317  # the PROGRAM_ functions below are called by name (configure_$prog, ...)
# Run-time benchmark: how much slower do real CPU-bound programs run when
# built with sampler-cc? Builds zlib's minigzip, GNU bc and the sqlite3 shell
# in four forms, runs one fixed workload with each, and compares their CPU
# time (and, with --callgrind, their instruction counts) with plain gcc's.
#
# Usage:
#   scripts/bench-runtime.sh [--cc PATH] [--runs N] [--callgrind]
#                            [--programs "zlib bc sqlite"] [--work DIR]
#                            [--jobs N] [--size full|small] [--rebuild]
#                            [--no-workaround] [--form NAME=FLAGS]...
#
#   --cc PATH        sampler-cc under test (default: sampler-cc on PATH)
#   --runs N         timed runs of each form (default: 5)
#   --callgrind      also run each form once under valgrind --tool=callgrind,
#                    on the small workload, and report instructions (Ir)
#   --programs LIST  programs to measure, space or comma separated
#                    (default: "zlib bc sqlite")
#   --work DIR       builds, inputs and results (default:
#                    /tmp/sampler-bench-runtime); builds are kept and reused
#   --jobs N         make -jN inside each build (default: 2)
#   --size SIZE      workload of the timed runs: full (default; 2-6 s of CPU
#                    per plain run) or small (the callgrind one; a smoke test)
#   --rebuild        rebuild every form even if a cached build matches
#   --no-workaround  let instrumented builds fail on the known sampler-cc
#                    compile error instead of working around it (see below)
#   --form NAME=FLAGS  also build and measure a sampled form NAME: the
#                    sampled form's flags plus FLAGS (e.g. --form
#                    "regions=-fno-sample-warm-functions"), run at sparsities 100
#                    and 1000 as NAME-100 and NAME-1000, side by side with
#                    the others (repeatable; NAME: letters, digits, _)
#
# Forms, all built with CFLAGS "-O2 -g" plus:
#   plain      gcc
#   coverage   gcc --coverage; runs write their .gcda files under a scratch
#              GCOV_PREFIX, wiped before each run
#   nosample   $cc -fno-sample -fsampler-scheme=branches
#              -fsampler-scheme=returns -fsampler-scheme=scalar-pairs
#   nosample-br  $cc -fno-sample -fsampler-scheme=branches
#              -fsampler-scheme=returns (what issue 16 compares with
#              --coverage: control flow only, as gcov counts)
#   sampled    $cc with the same schemes, run three times: SAMPLER_SPARSITY=100,
#              SAMPLER_SPARSITY=1000, and SAMPLER_SPARSITY=1000 with the flight
#              recorder on at sampler-run's default (SAMPLER_TRACE=64)
# hence seven measured columns: plain, coverage, nosample, nosample-br, sampled-100,
# sampled-1000, traced-1000 (the recorder is off in every other column),
# and NAME-100, NAME-1000 for each --form NAME.
# Instrumented runs get SAMPLER_SEED=1 and SAMPLER_FILE=/dev/null
# (a real file in the check run, which must hold non-zero counters). The
# missing forms of one program are built concurrently, each with make -jN.
#
# Programs and workloads (plain -O2 takes 2-6 s of CPU on the full size):
#   zlib    minigzip of zlib 1.2.13 (./configure --static; make minigzip):
#           compress then decompress 96 MB of mixed data (24 copies of the
#           tarball's files followed by the tarball itself, incompressible)
#   bc      bc 1.07.1 (lib/ and bc/ only): pi to 1500 digits, a recursive
#           Fibonacci, a sieve of 600000 and a 20000-term sqrt sum
#   sqlite  the sqlite3 shell of SQLite 3.40.1, built from sqlite3.c and
#           shell.c (generated from the Debian source with tclsh): an
#           in-memory database of 600k rows made by a recursive CTE, two
#           indexes, aggregates, group-by, joins, sorts, an update and a delete
# The small size (callgrind, --size small) does about a twentieth of it.
#
# Per program: build (or reuse) every form; run each form once and check that
# its output is identical to plain's, byte for byte, and that the sampler
# report or the .gcda files were written; then --runs rounds that each run
# every form once in a fixed order (round-robin, so that drifts in machine
# load hit all forms alike), recording user+sys CPU seconds (bash's `time`);
# then the callgrind runs. It prints a markdown table per program:
#   form | median CPU s | ratio | Ir | Ir ratio | CPU s of each run
# (ratios against plain), with the exact command; the tables are also saved
# as WORK/results-DATE.md.
#
# Builds are cached in WORK/PROGRAM/FORM, keyed by the source tarball, the
# compiler (sha256 of sampler-cc, of its libexec/sampler-cc/ and its
# lib/sampler/; gcc's version) and the flags: a different key rebuilds.
#
# Workaround, for measuring older builds: sampler-cc before commit c944160
# wrote invalid C under scalar-pairs for an assignment or initializer whose
# value is an increment, e.g. `x = y++;` or `int r = n++;` (gcc: "error:
# expected ')' before ';' token"); bc (bc.y, scan.c) and sqlite3.c have such
# lines. When an
# instrumented build fails with that message, the script excludes exactly
# those lines from instrumentation (-fexclude-location=FILE:LINE, added to CC)
# and runs make again, up to 8 times, and says so loudly and in the table.
# With --no-workaround such a build fails. Forms that fail to build are
# reported as such; the other forms are still measured.
#
# Sources are the pristine upstream tarballs (`*.orig.tar.*`) of Debian 12
# (bookworm) zlib, bc and sqlite3, fetched with `apt-get source
# --download-only` into ${SAMPLER_CORPUS_CACHE:-~/.cache/sampler-corpus}, as
# scripts/corpus.sh does (as root it adds a deb-src entry if none exists).
# Missing tools (tclsh for sqlite, valgrind for --callgrind) are installed
# with apt-get when run as root.
#
# Exit status: 0 when every build, check and run succeeded; 1 when one
# failed (the rest is still measured); 2 on usage or setup errors.
set -euo pipefail

invocation=scripts/bench-runtime.sh
for arg in "$@"; do
    if [[ $arg =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then invocation+=" $arg"; else invocation+=" ${arg@Q}"; fi
done
cc=sampler-cc
runs=5
callgrind=false
programs=()
all_programs=(zlib bc sqlite)
work=/tmp/sampler-bench-runtime
jobs=2
size=full
rebuild=false
workaround=true
extra_forms=()   # NAME=FLAGS of --form
cache=${SAMPLER_CORPUS_CACHE:-$HOME/.cache/sampler-corpus}

forms=(plain coverage nosample nosample-br sampled)
variants=(plain coverage nosample nosample-br sampled-100 sampled-1000 traced-1000)
schemes="-fsampler-scheme=branches -fsampler-scheme=returns -fsampler-scheme=scalar-pairs"
base_cflags="-O2 -g"
seed=1
trace=64   # sampler-run's default SAMPLER_TRACE
max_attempts=9   # the first build and up to 8 workaround rebuilds
# Bump when a build recipe below changes, so that cached builds are redone.
recipe=1

usage() { sed -n '2,/^set -euo/{/^# shellcheck /d;/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "bench-runtime.sh: $*" >&2; exit 2; }
warn() { echo "bench-runtime.sh: WARNING: $*" >&2; }

while (($#)); do
    case $1 in
        --cc) cc=${2:?--cc needs a value}; shift 2 ;;
        --cc=*) cc=${1#*=}; shift ;;
        --runs) runs=${2:?--runs needs a value}; shift 2 ;;
        --runs=*) runs=${1#*=}; shift ;;
        --callgrind) callgrind=true; shift ;;
        --programs) v=${2:?--programs needs a value}; read -r -a programs <<<"${v//,/ }"; shift 2 ;;
        --programs=*) v=${1#*=}; read -r -a programs <<<"${v//,/ }"; shift ;;
        --work) work=${2:?--work needs a value}; shift 2 ;;
        --work=*) work=${1#*=}; shift ;;
        --jobs | -j) jobs=${2:?--jobs needs a value}; shift 2 ;;
        --jobs=*) jobs=${1#*=}; shift ;;
        --size) size=${2:?--size needs a value}; shift 2 ;;
        --size=*) size=${1#*=}; shift ;;
        --rebuild) rebuild=true; shift ;;
        --no-workaround) workaround=false; shift ;;
        --form) extra_forms+=("${2:?--form needs NAME=FLAGS}"); shift 2 ;;
        --form=*) extra_forms+=("${1#*=}"); shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
((${#programs[@]})) || programs=("${all_programs[@]}")
for p in "${programs[@]}"; do
    [[ " ${all_programs[*]} " == *" $p "* ]] || die "unknown program $p (known: ${all_programs[*]})"
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer"
[[ $size == full || $size == small ]] || die "--size must be full or small"
declare -A extra_flags=()
for spec in "${extra_forms[@]}"; do
    name=${spec%%=*}
    [[ $spec == *=* && $name =~ ^[A-Za-z0-9_]+$ ]] || die "--form wants NAME=FLAGS, NAME of letters, digits and _ (got ${spec@Q})"
    [[ " ${forms[*]} traced " != *" $name "* && -z ${extra_flags[$name]+set} ]] || die "--form $name: the name is taken"
    extra_flags[$name]=${spec#*=}
    forms+=("$name")
    variants+=("$name-100" "$name-1000")
done

# Compiler messages in ASCII (the workaround greps them) and a stable sort.
export LC_ALL=C
# Only the variables set below may steer the instrumented and coverage runs.
unset SAMPLER_FILE SAMPLER_REPORT_FD SAMPLER_SPARSITY SAMPLER_SEED SAMPLER_RANDOM \
    SAMPLER_TRACE SAMPLER_EVENT_COUNTDOWNS GCOV_PREFIX GCOV_PREFIX_STRIP

# --- tools ------------------------------------------------------------------

# need CMD PACKAGE: makes sure CMD exists, installing PACKAGE as root.
need() {
    command -v "$1" >/dev/null && return 0
    ((EUID == 0)) || die "$1 not found; install the Debian package $2"
    echo "==> installing $2 (for $1): apt-get install -y $2"
    if ! apt-get install -y -qq "$2" >/dev/null; then
        apt-get update -qq
        apt-get install -y -qq "$2" >/dev/null || die "apt-get install $2 failed"
    fi
    command -v "$1" >/dev/null || die "$1 still not found after installing $2"
}

command -v "$cc" >/dev/null || die "compiler not found: $cc (use --cc PATH)"
cc=$(command -v "$cc")   # absolute: builds run in other directories
for tool in gcc make tar bzip2 gzip xz sha256sum cmp awk sed; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ " ${programs[*]} " == *" sqlite "* ]] && need tclsh tcl
$callgrind && need valgrind valgrind

mkdir -p "$work" "$cache"
work=$(cd "$work" && pwd)
scratch=$work/scratch

# --- timing and numbers -----------------------------------------------------
now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$((10#$t))"; }
secs() { printf '%d.%d' "$(($1 / 1000000))" "$(($1 % 1000000 / 100000))"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
thousands() { printf '%s' "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }

# --- sources (as scripts/corpus.sh) -------------------------------------------

# shellcheck source-path=SCRIPTDIR source=lib/debian-source.sh
. "$(dirname "$0")/lib/debian-source.sh"

# --- forms --------------------------------------------------------------------

form_cc() { case $1 in plain | coverage) command -v gcc ;; *) echo "$cc" ;; esac; }
form_flags() {
    case $1 in
        plain) echo "$base_cflags" ;;
        coverage) echo "$base_cflags --coverage" ;;
        nosample) echo "$base_cflags -fno-sample $schemes" ;;
        nosample-br) echo "$base_cflags -fno-sample -fsampler-scheme=branches -fsampler-scheme=returns" ;;
        sampled) echo "$base_cflags $schemes" ;;
        *) echo "$base_cflags $schemes ${extra_flags[$1]}" ;;
    esac
}
# The sampled forms: `sampled` and those of --form.
is_sampled_form() { [[ $1 == sampled || -n ${extra_flags[$1]+set} ]]; }
variant_form() {
    case $1 in
        sampled-* | traced-*) echo sampled ;;
        *-100 | *-1000) is_sampled_form "${1%-*}" && echo "${1%-*}" || echo "$1" ;;
        *) echo "$1" ;;
    esac
}
instrumented() { [[ $1 == nosample || $1 == nosample-br ]] || is_sampled_form "$1"; }

# Identity of the compilers, for the build cache key: sampler-cc and what it
# runs (its cc1 stage, the runtime it links), and gcc under both.
compiler_id() {
    local d files=("$cc")
    d=$(dirname "$cc")
    [[ -d $d/../libexec/sampler-cc ]] && files+=("$d"/../libexec/sampler-cc/*)
    [[ -d $d/../lib/sampler ]] && files+=("$d"/../lib/sampler/*)
    {
        gcc --version | head -n 1
        command -v gcc
        echo "SAMPLER_REAL_CC=${SAMPLER_REAL_CC:-}"
        sha256sum "${files[@]}" | awk '{ print $1 }'
    } | sha256sum | cut -c1-16
}

# --- the programs: sources, builds, workloads -----------------------------------
# For each PROGRAM:
#   PROGRAM_pkg               Debian source package
#   PROGRAM_binary            path of the program inside a form's build tree
#   configure_PROGRAM         unpacks and configures the build tree $src
#   make_PROGRAM CC           builds it with make -k, CC overriding the compiler
#   config_PROGRAM            what configure decided (compared with plain's)
#   input_PROGRAM SIZE        prints the input file of the workload, made if missing
#   workload_PROGRAM BIN IN OUT  runs the workload (prefixed by "${runner[@]}")
#                             with outputs into directory OUT
#   describe_PROGRAM SIZE     what the workload does, for the table

# shellcheck disable=SC2034  # read by name (${!pkg_var}, ${!binary_var})
zlib_pkg=zlib bc_pkg=bc sqlite_pkg=sqlite3
# shellcheck disable=SC2034
zlib_binary=minigzip bc_binary=bc/bc sqlite_binary=sqlite3
runner=()

configure_zlib() {
    tar -xf "$tarball" -C "$src" --strip-components=1
    # zlib's configure reads CC and CFLAGS from the environment only.
    (cd "$src" && env CC="$fcc" CFLAGS="$fflags" ./configure --static)
}
make_zlib() { (cd "$src" && make -k -j"$jobs" minigzip CC="$1"); }
# zlib's configure takes any compiler output on stderr as "feature missing".
config_zlib() { grep -E '^Checking' "$1/configure.log" || true; }

configure_bc() {
    tar -xf "$tarball" -C "$src" --strip-components=1
    # The tarball holds the bison/flex outputs and bc.info, with timestamps
    # that keep make from regenerating them: no flex, bison or makeinfo needed.
    (cd "$src" && ./configure CC="$fcc" CFLAGS="$fflags")
}
# Only lib/ and bc/ (not dc/ and doc/). bc/ builds an `fbc` first and runs it
# to make libmath.h: no SAMPLER_FILE is set then, so it writes no report.
make_bc() {
    local status=0
    (cd "$src" && make -k -j"$jobs" -C lib CC="$1") || status=$?
    (cd "$src" && make -k -j"$jobs" -C bc CC="$1") || status=$?
    return "$status"
}
config_bc() { grep -E '^#define' "$1/src/config.h" || true; }

# The Debian source of sqlite3 is the full tree, not the amalgamation: make
# sqlite3.c and shell.c once (tclsh runs the generators, which gcc builds).
sqlite_amalgamation() {
    local dir=$work/sqlite/amalgamation key
    key="$(basename "$tarball") recipe $recipe"
    if [[ -f $dir/sqlite3.c && $(cat "$dir/key" 2>/dev/null) == "$key" ]]; then
        return 0
    fi
    echo "==> sqlite: generating sqlite3.c and shell.c from $(basename "$tarball") (tclsh)"
    rm -rf "$dir"
    mkdir -p "$dir/tree" "$dir/build"
    tar -xf "$tarball" -C "$dir/tree" --strip-components=1
    if ! (cd "$dir/build" && ../tree/configure --disable-tcl && make -j"$jobs" sqlite3.c shell.c) \
        >"$dir/generate.log" 2>&1; then
        tail -n 20 "$dir/generate.log" >&2
        die "generating the sqlite3 amalgamation failed; see $dir/generate.log"
    fi
    cp "$dir/build/sqlite3.c" "$dir/build/sqlite3.h" "$dir/build/shell.c" "$dir/"
    rm -rf "$dir/tree" "$dir/build"
    echo "$key" >"$dir/key"
}
configure_sqlite() {
    cp "$work/sqlite/amalgamation/"{sqlite3.c,sqlite3.h,shell.c} "$src/"
    # No threads and no extension loading: a self-contained, single-threaded
    # shell (no -lpthread, -ldl), the same in every form.
    cat >"$src/Makefile" <<EOF
# Made by bench-runtime.sh.
CC = $fcc
CFLAGS = $fflags
DEFS = -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION
sqlite3: shell.o sqlite3.o
	\$(CC) \$(CFLAGS) -o \$@ shell.o sqlite3.o -lm
sqlite3.o: sqlite3.c sqlite3.h
	\$(CC) \$(CFLAGS) \$(DEFS) -c -o \$@ sqlite3.c
shell.o: shell.c sqlite3.h
	\$(CC) \$(CFLAGS) \$(DEFS) -c -o \$@ shell.c
EOF
}
make_sqlite() { (cd "$src" && make -k -j"$jobs" CC="$1"); }
config_sqlite() { :; }

# Workload inputs are made deterministically, so every machine gets the same.
input_zlib() {
    local copies in=$work/zlib/input-$1.dat unit
    case $1 in full) copies=24 ;; small) copies=1 ;; esac
    if [[ ! -f $in ]]; then
        unit=$work/zlib/input-unit.tmp
        # Text (the sources) and incompressible bytes (the .bz2 itself); the
        # copies are far apart (4 MB), beyond deflate's 32 KB window.
        { tar -xOf "$tarball"; cat "$tarball"; } >"$unit"
        for ((i = 0; i < copies; i++)); do cat "$unit"; done >"$in.tmp"
        mv "$in.tmp" "$in"
        rm -f "$unit"
    fi
    echo "$in"
}
workload_zlib() {
    "${runner[@]}" "$1" -c "$2" >"$3/x.gz" &&
        "${runner[@]}" "$1" -d -c "$3/x.gz" >"$3/x.out"
}
describe_zlib() {
    echo "\`minigzip -c IN > x.gz && minigzip -d -c x.gz > x.out\`, IN: $(($(stat -c %s "$(input_zlib "$1")") / 1000000)) MB"
}

input_bc() {
    local in=$work/bc/input-$1.b pi fib sieve terms
    case $1 in
        full) pi=1500 fib=28 sieve=600000 terms=20000 ;;
        small) pi=400 fib=20 sieve=40000 terms=1500 ;;
    esac
    # Number crunching in lib/number.c (pi, sqrt) and the interpreter's loops,
    # calls and arrays in bc/execute.c (Fibonacci, sieve).
    cat >"$in" <<EOF
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
EOF
    echo "$in"
}
workload_bc() { "${runner[@]}" "$1" -lq "$2" </dev/null >"$3/stdout"; }
describe_bc() {
    local in; in=$(input_bc "$1")
    echo "\`bc -lq IN < /dev/null\`, IN: pi to $(sed -n 's/^scale = \([0-9]*\)$/\1/p' "$in" | head -n 1) digits, f($(sed -n 's/^f(\(.*\))$/\1/p' "$in")), sieve $(sed -n 's/^n = //p' "$in"), $(sed -n 's/.*i <= \([0-9]*\); i++) { x.*/\1/p' "$in")-term sqrt sum"
}

input_sqlite() {
    local in=$work/sqlite/input-$1.sql rows
    case $1 in full) rows=600000 ;; small) rows=30000 ;; esac
    cat >"$in" <<EOF
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $rows)
  INSERT INTO t SELECT i, (i * 7919) % 1000, printf('name-%05d', (i * 31) % 50021), (i % 997) * 0.5 FROM s;
CREATE TABLE u(k INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 999)
  INSERT INTO u SELECT i, printf('label-%03d', i % 250) FROM s;
CREATE INDEX t_b ON t(b);
CREATE INDEX t_ac ON t(a, c);
SELECT a, count(*), sum(c), avg(c) FROM t GROUP BY a ORDER BY 3 DESC, 1 LIMIT 5;
SELECT u.label, count(*), round(sum(t.c), 1) FROM t JOIN u ON u.k = t.a WHERE t.c > 100
  GROUP BY u.label ORDER BY 2 DESC, 1 LIMIT 5;
SELECT b, max(c), min(id) FROM t WHERE b BETWEEN 'name-10000' AND 'name-20000'
  GROUP BY b ORDER BY b LIMIT 3;
SELECT count(DISTINCT b), count(DISTINCT c) FROM t;
SELECT id, a, b, c FROM t ORDER BY c DESC, b, id LIMIT 5;
SELECT sum(length(b)), total(c), max(substr(b, 6) + 0) FROM t WHERE id % 3 = 0;
SELECT x.a, count(*) FROM t AS x JOIN t AS y ON y.id = x.id + 1 AND y.a > x.a
  GROUP BY x.a % 10 ORDER BY 1 LIMIT 3;
UPDATE t SET c = c + 1 WHERE a < 100;
DELETE FROM t WHERE a > 900;
SELECT count(*), sum(c), group_concat(DISTINCT a % 7) FROM t;
EOF
    echo "$in"
}
workload_sqlite() { "${runner[@]}" "$1" -batch <"$2" >"$3/stdout"; }
describe_sqlite() {
    echo "\`sqlite3 -batch < IN\` (in-memory), IN: $(sed -n 's/.*WHERE i < \([0-9]*\))$/\1/p' "$(input_sqlite "$1")" | head -n 1) rows, 2 indexes, 7 queries, update, delete"
}

# --- building -----------------------------------------------------------------

# distinct_warnings FDIR: the distinct compiler warnings of a form's build,
# without the fallout of the attempts gcc rejected (the warnings in a file that
# also had errors in that attempt).
distinct_warnings() {
    local log
    for log in "$1"/make-*.log; do
        [[ -f $log ]] || continue
        grep -hE '^[^ ]+:[0-9]+(:[0-9]+)?: (warning|error): ' "$log" | awk '
            { file = substr($0, 1, index($0, ":") - 1) }
            / error: / { bad[file] = 1; next }
            { w[NR] = $0; f[NR] = file }
            END { for (i in w) if (!(f[i] in bad)) print w[i] }' || true
    done | sort -u
}

# build_steps: configures and builds $form of $prog in $src (output: the
# caller's stdout); with the workaround, runs make again without the lines
# gcc rejected. Returns 0 when the binary exists.
build_steps() {
    local attempt status lines=() new=() excluded=() l cc_cmd=$fcc
    echo "\$ configure with CC=$fcc CFLAGS=\"$fflags\""
    if ! "configure_$prog" >"$fdir/configure.log" 2>&1; then
        cat "$fdir/configure.log"
        echo "configure FAILED"
        return 1
    fi
    for ((attempt = 1; attempt <= max_attempts; attempt++)); do
        echo "\$ make (attempt $attempt) CC=\"$cc_cmd\""
        status=0
        "make_$prog" "$cc_cmd" >"$fdir/make-$attempt.log" 2>&1 || status=$?
        cat "$fdir/make-$attempt.log"
        if ((status == 0)) && [[ -x $src/$binary ]]; then
            return 0
        fi
        instrumented "$form" && $workaround || return 1
        # The known sampler-cc bug (see the header): exclude the lines gcc
        # rejects and build again; give up when there is no new one.
        mapfile -t lines < <(grep -oE "^[^ :]+:[0-9]+(:[0-9]+)?: error: expected '\)' before ';' token" \
            "$fdir/make-$attempt.log" | cut -d: -f1,2 | sort -t: -k1,1 -k2,2n -u)
        new=()
        for l in "${lines[@]}"; do
            [[ " ${excluded[*]} " == *" $l "* ]] || new+=("$l")
        done
        ((${#new[@]})) || return 1
        excluded+=("${new[@]}")
        printf '%s\n' "${excluded[@]}" >"$fdir/excluded.txt"
        cc_cmd="$fcc$(printf ' -fexclude-location=%s' "${excluded[@]}")"
    done
    return 1
}

# build_form FORM: builds FORM of $prog into $work/$prog/FORM (run in the
# background; everything goes to its build.log). Writes build.summary, and
# bin/ and key only on success.
build_form() {
    local form=$1 fdir=$work/$prog/$1 fcc fflags src t0 times status=0
    local wall_us warnings nexcl=0 cpu
    fcc=$(form_cc "$form")
    fflags=$(form_flags "$form")
    src=$fdir/src
    rm -rf "$fdir"
    mkdir -p "$src"
    t0=$(now_us)
    # The redirection must stay on build_steps: one that is active when the
    # subshell ends would capture the report of `time` too.
    local TIMEFORMAT='%U %S'
    times=$({ time (build_steps >>"$fdir/build.log" 2>&1); } 2>&1) || status=$?
    wall_us=$(($(now_us) - t0))
    cpu=$(awk -v t="$times" 'BEGIN { split(t, a, " "); printf "%.0f", a[1] + a[2] }')
    warnings=$(distinct_warnings "$fdir" | wc -l)
    [[ -f $fdir/excluded.txt ]] && nexcl=$(wc -l <"$fdir/excluded.txt")
    if ((status == 0)); then
        mkdir -p "$fdir/bin"
        cp "$src/$binary" "$fdir/bin/"
        echo "built in $(secs "$wall_us") s wall, $cpu s CPU, $warnings distinct warnings$( ((nexcl)) &&
            echo ", WORKAROUND: $nexcl lines not instrumented")" >"$fdir/build.summary"
        echo "$key_prefix $form $fcc $fflags" >"$fdir/key"
    else
        echo "FAILED after $(secs "$wall_us") s wall, $cpu s CPU, $warnings distinct warnings$( ((nexcl)) &&
            echo ", $nexcl lines excluded before giving up")" >"$fdir/build.summary"
    fi
}

# Builds the forms of $prog that have no valid cached build, concurrently.
build_all() {
    local form fdir pids=() want
    local -a todo=()
    for form in "${forms[@]}"; do
        fdir=$work/$prog/$form
        want="$key_prefix $form $(form_cc "$form") $(form_flags "$form")"
        if ! $rebuild && [[ -x $fdir/bin/$(basename "$binary") && $(cat "$fdir/key" 2>/dev/null) == "$want" ]]; then
            echo "    $form: cached: $(cat "$fdir/build.summary")"
        else
            todo+=("$form")
        fi
    done
    ((${#todo[@]})) || return 0
    echo "==> $prog: building ${todo[*]} concurrently (make -j$jobs each; logs: $work/$prog/FORM/build.log)"
    local t0; t0=$(now_us)
    for form in "${todo[@]}"; do
        build_form "$form" &
        pids+=($!)
    done
    for i in "${!todo[@]}"; do
        wait "${pids[$i]}" || true
        echo "    ${todo[$i]}: $(cat "$work/$prog/${todo[$i]}/build.summary" 2>/dev/null || echo 'FAILED (no summary)')"
    done
    echo "    (all builds: $(secs "$(($(now_us) - t0))") s wall)"
}

# Prints the details of a form's build after the fact: failures, workaround
# lines, warnings beyond plain's, configure decisions that differ from plain's.
build_notes() {
    local form=$1 fdir=$work/$prog/$1 first
    if [[ ! -f $fdir/key ]]; then
        failed=1
        echo "    $form: BUILD FAILED; the first errors ($fdir/build.log):" >&2
        grep -E 'error' "$fdir/build.log" | head -n 8 | cut -c1-240 | sed 's/^/        /' >&2 || true
        return 0
    fi
    if [[ -f $fdir/excluded.txt ]]; then
        first=$({ grep -m1 -E "error: expected '\)' before ';' token" "$fdir"/make-1.log || true; } | cut -c1-200)
        warn "$prog $form: sampler-cc wrote code gcc rejects ($first ...);" \
            "these $(wc -l <"$fdir/excluded.txt") lines were excluded from instrumentation:" \
            "$(tr '\n' ' ' <"$fdir/excluded.txt")"
    fi
    # Warnings the plain build does not have: the instrumented code may read
    # uninitialized or freed variables, say.
    local mine plain_n
    mine=$(distinct_warnings "$fdir")
    plain_n=$(distinct_warnings "$work/$prog/plain" | wc -l)
    if [[ $form != plain && -n $mine ]] && (($(wc -l <<<"$mine") > plain_n)); then
        echo "    $form: $(wc -l <<<"$mine") distinct compiler warnings (plain: $plain_n), e.g.:"
        # One of each kind, quoted names folded, most frequent kinds first.
        awk '{ key = substr($0, index($0, ": warning: ") + 11); gsub(/\047[^\047]*\047/, "X", key)
               n[key]++; if (!(key in ex)) ex[key] = $0 }
             END { for (k in n) printf "%d\t%s\n", n[k], ex[k] }' <<<"$mine" |
            sort -t $'\t' -k1,1nr -k2 | head -n 6 | awk -F '\t' '{ printf "        %3d x %s\n", $1, substr($2, 1, 200) }'
    fi
    if [[ $form != plain ]]; then
        if ! cmp -s <("config_$prog" "$work/$prog/plain") <("config_$prog" "$fdir"); then
            warn "$prog $form: configure decided differently from plain:"
            diff <("config_$prog" "$work/$prog/plain") <("config_$prog" "$fdir") | sed 's/^/        /' >&2 || true
        fi
    fi
}

# --- running ------------------------------------------------------------------

# run_variant VARIANT IN OUT REPORT: runs the workload of $prog with
# VARIANT's binary and environment (report into REPORT), outputs into OUT;
# sets cpu to its user+sys CPU seconds; returns the workload's status.
run_variant() {
    local variant=$1 in=$2 out=$3 report=$4 bin t status=0
    bin=$work/$prog/$(variant_form "$variant")/bin/$(basename "$binary")
    rm -rf "$out" "$scratch/gcov"
    mkdir -p "$out"
    local TIMEFORMAT='%3U %3S'
    # The redirections are inside the subshell: on `time` itself they would
    # capture its report too.
    t=$({ time (
        case $variant in
            coverage) export GCOV_PREFIX=$scratch/gcov ;;
            nosample | nosample-br) export SAMPLER_FILE=$report SAMPLER_SEED=$seed ;;
            traced-*) export SAMPLER_FILE=$report SAMPLER_SEED=$seed SAMPLER_SPARSITY=${variant#traced-} SAMPLER_TRACE=$trace ;;
            *-100 | *-1000) export SAMPLER_FILE=$report SAMPLER_SEED=$seed SAMPLER_SPARSITY=${variant##*-} ;;
        esac
        "workload_$prog" "$bin" "$in" "$out" 2>"$out/stderr"
    ); } 2>&1) || status=$?
    cpu=$(awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.3f", a[1] + a[2] }')
    return "$status"
}

# Prints "sha256 file" for every output of a run, to compare with plain's.
output_sums() { (cd "$1" && sha256sum -- *); }

# check_variants IN: runs each variant once (also warming the caches) and
# checks its outputs against plain's; sets ok_variants.
check_variants() {
    local in=$1 v out=$scratch/check report=$scratch/check.report form
    ok_variants=()
    for v in "${variants[@]}"; do
        form=$(variant_form "$v")
        [[ -f $work/$prog/$form/key ]] || continue
        rm -f "$report"
        if ! run_variant "$v" "$in" "$out" "$report"; then
            echo "    $v: the workload FAILED; stderr:" >&2
            head -n 20 "$out/stderr" >&2
            failed=1; continue
        fi
        output_sums "$out" >"$scratch/$v.sums"
        if [[ $v == plain ]]; then
            if [[ $prog == zlib ]] && ! cmp -s "$in" "$out/x.out"; then
                echo "    plain: minigzip's round trip FAILED: x.out differs from the input" >&2
                failed=1; return 0
            fi
        elif [[ ! -f $scratch/plain.sums ]]; then
            echo "    $v: not checked (plain did not run)" >&2
            failed=1; continue
        elif ! cmp -s "$scratch/plain.sums" "$scratch/$v.sums"; then
            echo "    $v: OUTPUT DIFFERS FROM PLAIN'S:" >&2
            diff "$scratch/plain.sums" "$scratch/$v.sums" | sed 's/^/        /' >&2 || true
            if [[ -f $scratch/plain.stderr ]]; then
                diff "$scratch/plain.stderr" "$out/stderr" | head -n 10 >&2 || true
            fi
            failed=1; continue
        fi
        [[ $v == plain ]] && cp "$out/stderr" "$scratch/plain.stderr"
        # The instrumentation must really be active: a report with counts, or
        # .gcda files.
        case $v in
            coverage)
                local n; n=$(find "$scratch/gcov" -name '*.gcda' 2>/dev/null | wc -l)
                ((n > 0)) || { echo "    coverage: no .gcda file written" >&2; failed=1; continue; }
                echo "    $v: output identical to plain's; $n .gcda files written, cpu $cpu s" ;;
            plain) echo "    plain: outputs $(awk '{ printf "%s%s", sep, $2; sep = ", " }' "$scratch/plain.sums") kept as reference (sha256), cpu $cpu s" ;;
            *)
                if [[ ! -s $report ]] || ! awk '/^[0-9]/ { for (i = 1; i <= NF; i++) if ($i != 0) { f = 1; exit } }
                        END { exit !f }' "$report"; then
                    echo "    $v: the report $report is empty or has only zero counters" >&2
                    failed=1; continue
                fi
                echo "    $v: output identical to plain's; report $(wc -c <"$report") bytes with non-zero counters, cpu $cpu s" ;;
        esac
        ok_variants+=("$v")
    done
}

# callgrind_variant VARIANT IN: total instructions (Ir) of the workload under
# callgrind, summed over its processes; sets ir. The outputs stay in
# WORK/scratch/callgrind/PROGRAM/VARIANT/ for callgrind_annotate.
callgrind_variant() {
    local v=$1 in=$2 dir=$scratch/callgrind/$prog/$1 f total=0 n
    rm -rf "$dir"
    mkdir -p "$dir"
    runner=(valgrind --tool=callgrind -q --callgrind-out-file="$dir/callgrind.out.%p")
    if ! run_variant "$v" "$in" "$scratch/cg-out" /dev/null; then
        runner=()
        echo "    $v: FAILED under callgrind: $(head -n 5 "$scratch/cg-out/stderr")" >&2
        ir=-; failed=1; return 0
    fi
    runner=()
    for f in "$dir"/callgrind.out.*; do
        n=$(awk '/^(totals|summary):/ { print $2; exit }' "$f")
        total=$((total + n))
    done
    ir=$total
}

# --- main -----------------------------------------------------------------------

failed=0
results=()
cid=$(compiler_id)
echo "==> bench-runtime: cc $cc (id $cid), programs: ${programs[*]}, $runs runs, size $size$($callgrind && echo ', callgrind'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "    work: $work"
for prog in "${programs[@]}"; do
    pkg_var=${prog}_pkg binary_var=${prog}_binary
    binary=${!binary_var}
    tarball=$(fetch_orig "${!pkg_var}")
    key_prefix="recipe=$recipe src=$(basename "$tarball") $(sha256sum "$tarball" | cut -c1-16) cc=$cid"
    mkdir -p "$work/$prog" "$scratch"
    [[ $prog == sqlite ]] && sqlite_amalgamation
    echo "==> $prog: $(basename "$tarball")"
    build_all
    for form in "${forms[@]}"; do build_notes "$form"; done
    if [[ ! -f $work/$prog/plain/key ]]; then
        echo "==> $prog: no plain build; nothing to compare with" >&2
        failed=1; continue
    fi

    in=$("input_$prog" "$size")
    echo "==> $prog: check run of each form ($("describe_$prog" "$size"))"
    t0=$(now_us)
    rm -f "$scratch"/*.sums "$scratch/plain.stderr"
    check_variants "$in"
    echo "    (check runs: $(secs "$(($(now_us) - t0))") s)"
    measured=("${ok_variants[@]}")
    if [[ " ${measured[*]} " != *" plain "* ]]; then
        echo "==> $prog: plain did not pass its check; not measured" >&2
        failed=1; continue
    fi

    echo "==> $prog: $runs rounds of ${measured[*]}"
    declare -A samples=()
    t0=$(now_us)
    for ((r = 1; r <= runs; r++)); do
        line="    round $r:"
        for v in "${measured[@]}"; do
            if ! run_variant "$v" "$in" "$scratch/run" /dev/null; then
                echo "    $v: FAILED in round $r: $(head -n 3 "$scratch/run/stderr")" >&2
                failed=1
            fi
            samples[$v]+=" $cpu"
            line+=" $v $cpu"
        done
        echo "$line"
    done
    echo "    (timed rounds: $(secs "$(($(now_us) - t0))") s)"

    declare -A irs=()
    if $callgrind; then
        cg_in=$("input_$prog" small)
        echo "==> $prog: callgrind, small workload ($("describe_$prog" small))"
        for v in "${measured[@]}"; do
            t0=$(now_us)
            callgrind_variant "$v" "$cg_in"
            irs[$v]=$ir
            echo "    $v: Ir $(thousands "$ir") ($(secs "$(($(now_us) - t0))") s)"
        done
    fi

    # The table.
    read -r -a plain_runs <<<"${samples[plain]}"
    m_plain=$(median "${plain_runs[@]}")
    table="### $prog: $(basename "$tarball")"$'\n\n'
    table+="workload ($size): $("describe_$prog" "$size")"$'\n'
    $callgrind && table+="callgrind workload (small): $("describe_$prog" small)"$'\n'
    table+="command: \`$invocation\` (cc $cc, id $cid, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg))"$'\n\n'
    table+="| form | median CPU s | ratio | Ir | Ir ratio | CPU s of each run |"$'\n'
    table+="|---|---:|---:|---:|---:|---|"$'\n'
    for v in "${variants[@]}"; do
        form=$(variant_form "$v")
        if [[ " ${measured[*]} " != *" $v "* ]]; then
            if [[ -f $work/$prog/$form/key ]]; then
                table+="| $v | check failed | | | | |"$'\n'
            else
                table+="| $v | build failed | | | | |"$'\n'
            fi
            continue
        fi
        read -r -a vr <<<"${samples[$v]}"
        m=$(median "${vr[@]}")
        ir=${irs[$v]:--} irr=-
        if [[ $ir != - && ${irs[plain]:--} != - ]]; then
            irr=$(ratio "$ir" "${irs[plain]}")
            ir=$(thousands "$ir")
        fi
        table+="| $v | $m | $(ratio "$m" "$m_plain") | $ir | $irr | ${vr[*]} |"$'\n'
    done
    notes=
    for form in "${forms[@]}"; do
        excl=$work/$prog/$form/excluded.txt
        if [[ -f $excl && -f $work/$prog/$form/key ]]; then
            notes+="note: $form was built with $(wc -l <"$excl") lines not instrumented, to work around"
            notes+=" sampler-cc's invalid code for \`x = y++\` (the lines: $excl):"
            notes+=" $(head -n 12 "$excl" | tr '\n' ' ')"
            (($(wc -l <"$excl") > 12)) && notes+="..."
            notes+=$'\n'
        fi
    done
    table+=${notes:+$'\n'$notes}
    echo
    printf '%s\n' "$table"
    results+=("$table")
    unset samples irs
done

if ((${#results[@]})); then
    out=$work/results-$(date -u +%Y%m%dT%H%M%SZ).md
    printf '%s\n' "${results[@]}" >"$out"
    echo "==> tables saved in $out"
fi
((failed == 0)) || echo "==> SOME BUILDS, CHECKS OR RUNS FAILED (see above)" >&2
exit "$failed"
