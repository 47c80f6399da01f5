#!/usr/bin/env bash
# Real-project corpus: build real C projects with a given compiler (normally
# sampler-cc) and run their own test suites. Not part of `cargo test`.
#
# Usage:
#   scripts/corpus.sh [--cc PATH] [--cflags "FLAGS"] [--work DIR] [--jobs N]
#                     [--sites-check] [--no-compare-warnings] [PROJECT...]
#
#   PROJECT        zlib, gzip, sed, grep, bc, jq, sqlite3 (default: all, in
#                  that order);
#                  name one to run it alone
#   --cc PATH      compiler to build with (default: gcc), e.g. sampler-cc
#   --cflags FLAGS CFLAGS given to configure, so that every compile and link
#                  sees them (default: "-g -O2"), e.g.
#                  "-g -O2 -fsampler-strict -fsampler-scheme=branches"
#   --work DIR     where to unpack and build (default: a new /tmp/sampler-corpus.*);
#                  DIR/PROJECT is wiped and recreated on every run
#   --jobs N       make -jN (default: 2)
#   --sites-check  after the tests, run extract-section on every object (*.o,
#                  and ELF *.lo) of the build tree; count objects without a
#                  .debug_site_info section and the site lines in the others
#                  (the default when --cc is not gcc; --no-sites-check: not)
#   --no-compare-warnings
#                  do not build each project a second time with plain gcc
#                  (by default, when --cc is not gcc, the project is also
#                  built with gcc and CFLAGS without sampler-cc's own flags,
#                  in WORK/PROJECT-gcc, its test suite run there too, and
#                  every difference between the two builds' warnings is
#                  reported as file:line: message, every test that passes
#                  with gcc only by name)
#
# Environment:
#   SAMPLER_CORPUS_CACHE     downloaded source tarballs
#                            (default: ~/.cache/sampler-corpus); reruns reuse them
#   SAMPLER_EXTRACT_SECTION  extract-section binary for --sites-check (default:
#                            extract-section on PATH, else target/release/ of
#                            this repository)
#
# Sources are the pristine upstream tarballs (`*.orig.tar.*`) of Debian 12
# (bookworm): zlib 1.2.13, gzip 1.12, sed 4.9, grep 3.8, bc 1.07.1, sqlite3
# 3.40.1 (sqlite3_3.40.1.orig.tar.xz: upstream's full source tree with its Tcl
# test suite, not the amalgamation), fetched with `apt-get source
# --download-only`. That needs a deb-src entry; when run as root the script
# adds one mirroring /etc/apt/sources.list.d/debian.sources.
# jq is upstream's jq-1.8.2.tar.gz (with a generated configure), taken from
# the PyPI sdist of the Python package jq 1.13.0, which bundles it
# (`python3 -m pip download --no-deps --no-binary jq jq==1.13.0`).
#
# Builds and test suites, as the packages run them:
#   zlib   ./configure; make; make test
#   gzip, grep
#          ./configure; make; make check (automake: every tests/*.trs counted)
#   sed    ./configure; make; make check, as an unprivileged user when run as
#          root (testsuite/panic-tests.sh fails as root): the user
#          sampler-corpus, created with useradd if missing, owns the build
#          tree and runs the suite through runuser
#   bc     ./configure; make MAKEINFO=true; make check (empty: Debian's
#          package runs no tests), then each Test/*.b script is run as
#          `bc -l FILE < /dev/null` (60 s limit); a script passes when it
#          exits 0 and, built with --cc, prints exactly what gcc's bc prints
#   jq     ./configure --with-oniguruma=builtin --disable-docs; make; make check
#   sqlite3
#          ./configure; make all testprogs; make -k test, as the unprivileged
#          user (as sed; the Tcl suite refuses root: "Tests do not work when
#          run as root"). Plain ./configure as upstream's README has it (Tcl
#          found through its tclConfig.sh; the default amalgamation build);
#          Debian's package configures with --disable-amalgamation and a list
#          of -DSQLITE_ENABLE_* options, but runs no tests. The test
#          programs (testfixture, fuzzcheck, sessionfuzz, srcck1, the shell,
#          sqlite3_analyzer, sqldiff, ...) are built by `make testprogs` in
#          the build step, with -jN, so that their warnings are compared
#          too; most compile sqlite3.c themselves, in one compile-and-link
#          command that leaves no object for the sites check (which sees
#          the library's sqlite3.o and tclsqlite.o, PIC and not). `make
#          test` is upstream's standard target: fuzzcheck on test/fuzzdata*.db,
#          sessionfuzz, srcck1 on sqlite3.c, then the Tcl suite
#          test/veryquick.test (about 2 min with gcc here, serial as
#          upstream runs it); -k so that one failing part does not skip the
#          others. Tests passed: the Tcl suite's M - N of its "N errors out
#          of M tests" plus fuzzcheck's M of "fuzzcheck: 0 errors out of M
#          tests" (it stops at its first error); tests-passed.txt names each
#          Tcl test printed "NAME... Ok", each fuzzdata*.db fuzzcheck ran
#          through, sessionfuzz (" N cases, 0 crashes") and srcck1 (the
#          names pager1-16.1.N, where N counts from the length L of the test
#          database's path, which differs in WORK/sqlite3-gcc, are listed as
#          pager1-16.1.L-5 ... L+19). Failing tests are named from the
#          suite's "!Failures on these tests:" line. Needs Tcl (tclsh and
#          tclConfig.sh: the Debian package tcl-dev), installed with apt-get
#          when missing and run as root.
#
# Per project it writes configure.log, configure-results.txt (what configure
# decided: diff it against a plain-gcc run), build.log, warnings.txt,
# test.log (and sites.txt, sites.err) into WORK/PROJECT and prints one summary line, e.g.
#   zlib: build 4.1 s (configure 0.6 s), 0 warnings, tests (0.0 s): zlib test OK
#         (static, shared, 64-bit), logs: /tmp/sampler-corpus.XXXXXX/zlib
# ("build" is configure + make; warnings are the build.log lines matching
# "warning:", listed in warnings.txt). With the gcc comparison, the line
# gives gcc's build time, "tests: P PASS / Q with gcc" (names of the passing
# tests in tests-passed.txt of each tree; those passing with gcc only are
# listed) and ends with "warnings as gcc's" or "N warning differences", listed in
# warnings-diff.txt ("-" gcc only, "+" this compiler only; each warning as
# file:line: message, the column left out, sorted since make -j reorders).
# After the lines, a table: project, units instrumented (objects with a
# .debug_site_info section / all objects), site lines, build time against
# gcc's, tests passed against gcc's, warning differences. Exit status: 0 when
# every configure, build and test suite (and the sites check, if asked)
# succeeded and every test passing with gcc passed, 1 otherwise, 2 on usage
# or setup errors.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cc=gcc
cflags="-g -O2"
work=
jobs=2
sites_check=
compare_warnings=true
cache=${SAMPLER_CORPUS_CACHE:-$HOME/.cache/sampler-corpus}
all_projects=(zlib gzip sed grep bc jq sqlite3)
test_user=sampler-corpus
projects=()

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "corpus.sh: $*" >&2; exit 2; }

while (($#)); do
    case $1 in
        --cc) cc=${2:?--cc needs a value}; shift 2 ;;
        --cc=*) cc=${1#*=}; shift ;;
        --cflags) cflags=${2?--cflags needs a value}; shift 2 ;;
        --cflags=*) cflags=${1#*=}; shift ;;
        --work) work=${2:?--work needs a value}; shift 2 ;;
        --work=*) work=${1#*=}; shift ;;
        --jobs | -j) jobs=${2:?--jobs needs a value}; shift 2 ;;
        --jobs=*) jobs=${1#*=}; shift ;;
        --sites-check) sites_check=true; shift ;;
        --no-sites-check) sites_check=false; shift ;;
        --no-compare-warnings) compare_warnings=false; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        zlib | gzip | sed | grep | bc | jq | sqlite3) projects+=("$1"); shift ;;
        *) die "unknown project $1 (known: ${all_projects[*]})" ;;
    esac
done
((${#projects[@]})) || projects=("${all_projects[@]}")
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer"

command -v "$cc" >/dev/null || die "compiler not found: $cc"
cc=$(command -v "$cc")   # absolute, since the builds run in other directories
[[ $(basename "$cc") == gcc ]] && compare_warnings=false
if [[ -z $sites_check ]]; then
    sites_check=false
    [[ $(basename "$cc") != gcc ]] && sites_check=true
fi

# CFLAGS for the plain gcc build: the words of --cflags that are not
# sampler-cc's own flags (see sampler-cc --sampler-help).
gcc_cflags=
for word in $cflags; do
    case $word in
        -fsampler-* | -fsample | -fsample-* | -fno-sample | -fno-sample-* | \
            -fassign-* | -fno-assign-* | -fcompare-constants | -fno-compare-constants | \
            -fclone-regions | -fno-clone-regions | -ftimestamp-* | -fno-timestamp-* | \
            -fthreads | -fno-threads | -finclude-function=* | -fexclude-function=* | \
            -finclude-file=* | -fexclude-file=* | -finclude-location=* | \
            -fexclude-location=* | -frelative-paths | -fno-relative-paths | \
            -fbalance-paths | -fno-balance-paths) ;;
        *) gcc_cflags+="${gcc_cflags:+ }$word" ;;
    esac
done

if $sites_check; then
    extract=${SAMPLER_EXTRACT_SECTION:-}
    if [[ -z $extract ]]; then
        extract=$(command -v extract-section || true)
        : "${extract:=$root/target/release/extract-section}"
    fi
    command -v "$extract" >/dev/null ||
        die "extract-section not found ($extract); build it with" \
            "'cargo build --release -p sampler-extract' or set SAMPLER_EXTRACT_SECTION"
fi

if [[ -z $work ]]; then
    work=$(mktemp -d /tmp/sampler-corpus.XXXXXX)
fi
mkdir -p "$work" "$cache"
work=$(cd "$work" && pwd)

# --- timing: microseconds since the epoch, from bash's EPOCHREALTIME --------
now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$((10#$t))"; }
secs() { local us=$1; printf '%d.%d' "$((us / 1000000))" "$((us % 1000000 / 100000))"; }

# --- sources --------------------------------------------------------------

# shellcheck source-path=SCRIPTDIR source=lib/debian-source.sh
. "$root/scripts/lib/debian-source.sh"

# Prints the path of the cached jq-1.8.2.tar.gz, taken from the PyPI sdist
# of the Python package jq (which bundles it) if not cached yet.
fetch_jq() {
    local tarball=$cache/jq-1.8.2.tar.gz tmp
    if [[ ! -e $tarball ]]; then
        tmp=$(mktemp -d "$cache/.download.XXXXXX")
        echo "==> pip download jq==1.13.0 (sdist, bundles jq-1.8.2.tar.gz; into $cache)" >&2
        python3 -m pip download --quiet --no-deps --no-binary jq jq==1.13.0 -d "$tmp" >&2 ||
            die "pip download jq==1.13.0 failed"
        tar -xzf "$tmp/jq-1.13.0.tar.gz" -C "$tmp" jq-1.13.0/deps/jq-1.8.2.tar.gz ||
            die "jq-1.13.0.tar.gz holds no deps/jq-1.8.2.tar.gz"
        mv "$tmp/jq-1.13.0/deps/jq-1.8.2.tar.gz" "$tarball"
        rm -rf "$tmp"
    fi
    echo "$tarball"
}

# Unpacks the upstream tarball of $1 into a fresh $2/src ($2: default $work/$1).
unpack() {
    local project=$1 dir=${2:-$work/$1} tarball top
    if [[ -e $dir && ! -e $dir/.sampler-corpus ]]; then
        die "$dir exists and was not made by corpus.sh; not wiping it"
    fi
    if [[ $project == jq ]]; then tarball=$(fetch_jq); else tarball=$(fetch_orig "$project"); fi
    rm -rf "$dir"
    mkdir -p "$dir/unpack"
    touch "$dir/.sampler-corpus"
    tar -xf "$tarball" -C "$dir/unpack"
    top=$(find "$dir/unpack" -mindepth 1 -maxdepth 1)
    [[ $(wc -l <<<"$top") -eq 1 && -d $top ]] || die "$tarball: expected one top directory"
    mv "$top" "$dir/src"
    rmdir "$dir/unpack"
    echo "==> $project: $(basename "$tarball") unpacked into $dir/src"
}

# sqlite3's test suite builds testfixture against Tcl: makes sure tclsh and a
# tclConfig.sh (where sqlite's configure looks) exist, installing tcl-dev as root.
ensure_tcl() {
    tcl_found() {
        local pattern
        command -v tclsh >/dev/null || return 1
        for pattern in /usr/lib/tclConfig.sh '/usr/lib/*/tclConfig.sh' \
            '/usr/lib/tcl8.*/tclConfig.sh' /usr/local/lib/tclConfig.sh; do
            compgen -G "$pattern" >/dev/null && return 0
        done
        return 1
    }
    tcl_found && return 0
    ((EUID == 0)) || die "sqlite3's test suite needs Tcl (tclsh and tclConfig.sh):" \
        "install the Debian package tcl-dev"
    echo "==> installing tcl-dev (Tcl, for sqlite3's test suite): apt-get install -y tcl-dev"
    if ! apt-get install -y -qq tcl-dev >/dev/null; then
        apt-get update -qq
        apt-get install -y -qq tcl-dev >/dev/null || die "apt-get install tcl-dev failed"
    fi
    tcl_found || die "still no tclsh or tclConfig.sh after installing tcl-dev"
}

# --- build and test -------------------------------------------------------

# Runs "$@" in $dir/src, output to log $1 (a file name in $dir); returns its status.
run_logged() {
    local log=$dir/$1; shift
    echo "\$ ${*@Q}" >"$log"
    (cd "$dir/src" && "$@") >>"$log" 2>&1
}

# Configures and builds $project in $dir/src; sets configure_us, build_us
# (configure included), warnings, and build_state when it fails.
configure_and_build() {
    local t0 status=0
    t0=$(now_us)
    local cc=${1:-$cc} cflags=${2:-$cflags}
    case $project in
        zlib) run_logged configure.log env CC="$cc" CFLAGS="$cflags" ./configure || status=$? ;;
        gzip | sed | grep | bc | sqlite3)
            run_logged configure.log ./configure CC="$cc" CFLAGS="$cflags" || status=$? ;;
        jq) run_logged configure.log ./configure CC="$cc" CFLAGS="$cflags" \
                --with-oniguruma=builtin --disable-docs || status=$? ;;
    esac
    if ((status != 0)); then
        configure_us=$(($(now_us) - t0))
        build_state="configure FAILED (status $status) after $(secs "$configure_us") s"
        return 1
    fi
    configure_us=$(($(now_us) - t0))
    configure_results
    # sqlite3's configure goes on without Tcl, and testfixture then cannot be built.
    if [[ $project == sqlite3 ]] && ! grep -q '^HAVE_TCL = 1' "$dir/src/Makefile"; then
        build_state="configure found no Tcl (HAVE_TCL not 1 in Makefile; install tcl-dev)"
        return 1
    fi
    # V=1: full compile commands in the log (gzip uses automake silent rules).
    # bc: the tarball's bc.info is older than bc.texi's timestamp allows; no makeinfo.
    # sqlite3: the test programs too (see the header).
    local extra=()
    [[ $project == bc ]] && extra=(MAKEINFO=true)
    [[ $project == sqlite3 ]] && extra=(all testprogs)
    run_logged build.log make -j"$jobs" V=1 "${extra[@]}" || status=$?
    build_us=$(($(now_us) - t0))
    grep 'warning:' "$dir/build.log" >"$dir/warnings.txt" || true
    warnings=$(wc -l <"$dir/warnings.txt")
    if ((status != 0)); then
        build_state="build FAILED (status $status) after $(secs "$build_us") s"
        return 1
    fi
    build_state="build $(secs "$build_us") s (configure $(secs "$configure_us") s)"
}

# Writes what configure decided to $dir/configure-results.txt, to diff against
# a plain-gcc run: a compiler that prints anything on stderr, or exits 0 on
# errors, silently changes these (zlib's configure takes any compiler output
# as "feature missing").
configure_results() {
    local out=$dir/configure-results.txt
    case $project in
        zlib) { grep -E '^(CC|CFLAGS|SFLAGS|LDSHARED|LDFLAGS)=' "$dir/src/Makefile"
                grep -E '\.\.\. ' "$dir/configure.log"; } >"$out" || true ;;
        gzip) grep -E '^#define ' "$dir/src/lib/config.h" >"$out" || true ;;
        sed | grep | bc) grep -E '^#define ' "$dir/src/config.h" >"$out" || true ;;
        jq) grep -hE '^(#define |DEFS = )' "$dir/src/Makefile" "$dir/src/vendor/oniguruma/src/config.h" \
                >"$out" || true ;;
        sqlite3) grep -hE '^(#define |(BCC|CFLAGS|LIBTCL|READLINE_FLAGS|LIBREADLINE|TLIBS|TEMP_STORE|OPT_FEATURE_FLAGS|HAVE_TCL|TCLSH_CMD|USE_AMALGAMATION) = )' \
                "$dir/src/sqlite_cfg.h" "$dir/src/Makefile" >"$out" || true ;;
    esac
}

# Runs "$@" in $dir/src as $test_user (created if missing; it gets the build
# tree), output to log $1: for suites that fail or refuse to run as root.
run_unprivileged() {
    local log=$1; shift
    if ((EUID != 0)); then
        run_logged "$log" "$@"
        return
    fi
    if ! id -u "$test_user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$test_user" ||
            die "useradd $test_user failed"
    fi
    # Its own HOME and TMPDIR (the caller's may not be writable to it).
    mkdir -p "$dir/tmp"
    chown -R "$test_user:" "$dir"
    chmod a+x "$work"
    run_logged "$log" runuser -u "$test_user" -- env HOME="$dir" TMPDIR="$dir/tmp" "$@"
}

# Sums the automake test results of $dir: sets pass, fail, other and writes
# the names of the passing tests (from every *.trs) to $dir/tests-passed.txt.
automake_results() {
    local logs=()
    mapfile -t logs < <(find "$dir/src" -name test-suite.log)
    ((${#logs[@]})) || return 1
    read -r pass fail other < <(awk '
        /^# (PASS|XFAIL|SKIP):/ { if ($2 == "PASS:") p += $3; else o[$2] += $3 }
        /^# (FAIL|XPASS|ERROR):/ { f += $3 }
        END { printf "%d %d %s\n", p, f,
              sprintf("%d SKIP, %d XFAIL", o["SKIP:"], o["XFAIL:"]) }' "${logs[@]}")
    find "$dir/src" -name '*.trs' -print0 | xargs -0r grep -l '^:test-result: PASS' |
        sed "s|^$dir/src/||; s|\.trs\$||" | LC_ALL=C sort >"$dir/tests-passed.txt"
    failed_tests=$(grep -hE '^(FAIL|ERROR|XPASS): ' "${logs[@]}" | tr '\n' ' ' || true)
}

# Runs the test suite of $project; sets test_us, test_result, test_pass (the
# number of tests passed; their names in $dir/tests-passed.txt); fails if it did.
run_tests() {
    local t0 status=0 ok=() joined pass=0 fail=0 other failed_tests t sqlite_pass=0
    t0=$(now_us)
    : >"$dir/tests-passed.txt"
    case $project in
        zlib)
            run_logged test.log make test || status=$?
            grep -q 'zlib test OK' "$dir/test.log" && ok+=(static)
            grep -q 'zlib shared test OK' "$dir/test.log" && ok+=(shared)
            grep -q 'zlib 64-bit test OK' "$dir/test.log" && ok+=(64-bit)
            printf '%s\n' "${ok[@]}" >"$dir/tests-passed.txt"
            # Static and shared are required; 64-bit exists only where off64_t does.
            if ((status == 0)) && [[ " ${ok[*]} " == *" static "* && " ${ok[*]} " == *" shared "* ]]; then
                joined=$(printf '%s, ' "${ok[@]}")
                test_result="zlib test OK (${joined%, })"
            else
                test_result="FAILED (status $status; OK: ${ok[*]:-none})"
                status=1
            fi
            ;;
        gzip | sed | grep | jq)
            if [[ $project == sed ]]; then
                run_unprivileged test.log make -j"$jobs" check || status=$?
            else
                run_logged test.log make -j"$jobs" check || status=$?
            fi
            if ! automake_results; then
                test_result="FAILED (status $status, no test-suite.log)"
                status=1
            else
                test_result="$pass PASS, $fail FAIL ($other)"
                if ((fail > 0)); then
                    test_result+="; failed: $failed_tests"
                fi
                ((status == 0 && fail == 0)) || { test_result="FAILED: $test_result"; status=1; }
            fi
            ;;
        bc)
            run_logged test.log make check MAKEINFO=true || status=$?
            mkdir -p "$dir/bc-tests"
            for t in "$dir"/src/Test/*.b; do
                t=$(basename "$t" .b)
                echo "\$ bc -l Test/$t.b < /dev/null" >>"$dir/test.log"
                if (cd "$dir/src/Test" && timeout 60 ../bc/bc -l "$t.b" </dev/null) \
                    >"$dir/bc-tests/$t.out" 2>&1; then
                    echo "$t" >>"$dir/tests-passed.txt"
                    pass=$((pass + 1))
                else
                    echo "  exit status $?" >>"$dir/test.log"
                    fail=$((fail + 1))
                    failed_tests+="$t "
                fi
            done
            test_result="$pass scripts exit 0, $fail do not"
            ((fail > 0)) && test_result+=" ($failed_tests)"
            ((status == 0 && fail == 0)) || { test_result="FAILED: $test_result"; status=1; }
            ;;
        sqlite3)
            run_unprivileged test.log make -k test || status=$?
            sqlite_results
            ;;
    esac
    test_pass=$(wc -l <"$dir/tests-passed.txt")
    [[ $project == sqlite3 ]] && test_pass=$sqlite_pass
    test_us=$(($(now_us) - t0))
    return "$status"
}

# Reads sqlite3's test.log and test-out.txt (see the header): sets
# test_result, sqlite_pass and status (1 when a part failed or did not run),
# writes $dir/tests-passed.txt.
sqlite_results() {
    local log=$dir/test.log out=$dir/src/test-out.txt summary fuzz n m part src
    local testdb=/testdir/test.db
    local parts=() broken=() names=()
    # The Tcl suite: "N errors out of M tests on HOST ..." and the names.
    # pager1-16.1.N counts N from L, the length of the test database's full
    # path (SRC/testdir/test.db), L-5 to L+19, which differs between
    # WORK/sqlite3 and WORK/sqlite3-gcc: named pager1-16.1.L-5 ... L+19.
    if [[ -e $out ]]; then
        src=$(cd "$dir/src" && pwd -P)
        sed -n 's/^\([^ ]*\)\.\.\. Ok$/\1/p' "$out" |
            awk -v len=$((${#src} + ${#testdb})) '/^pager1-16\.1\.[0-9]+$/ {
                    d = substr($0, 13) - len
                    $0 = "pager1-16.1.L" (d > 0 ? "+" d : d < 0 ? d : "")
                } { print }' >"$dir/tests-passed.tmp"
    else
        : >"$dir/tests-passed.tmp"
    fi
    summary=$(grep -E '^[0-9]+ errors out of [0-9]+ tests' "$log" | tail -n 1 || true)
    if [[ -n $summary ]]; then
        read -r n _ _ _ m _ <<<"$summary"
        sqlite_pass=$((m - n))
        parts+=("Tcl: $n errors out of $m tests")
        if ((n > 0)); then
            read -ra names < <(sed -n 's/^!Failures on these tests: *//p' "$log" | tail -n 1)
            broken+=("${names[@]}")
        fi
    else
        # testfixture died or never ran: its Ok lines are all we have.
        sqlite_pass=$(wc -l <"$dir/tests-passed.tmp")
        part=$(tail -n 1 "$out" 2>/dev/null | sed 's/\.\.\..*//' || true)
        parts+=("Tcl: no \"errors out of\" line, $sqlite_pass Ok${part:+, stopped at $part}")
        broken+=(testfixture)
    fi
    # fuzzcheck: one "DB: ... 100% - N tests" line per database, then
    # "fuzzcheck: 0 errors out of M tests" (it exits at the first error).
    grep -E '^fuzzdata[^ ]*\.db: .* - [0-9]+ tests$' "$log" | sed 's/:.*//; s/^/fuzzcheck:/' \
        >>"$dir/tests-passed.tmp" || true
    fuzz=$(sed -n 's/^fuzzcheck: 0 errors out of \([0-9]*\) tests.*/\1/p' "$log" | tail -n 1)
    if [[ -n $fuzz ]]; then
        sqlite_pass=$((sqlite_pass + fuzz))
        parts+=("fuzzcheck: 0 errors out of $fuzz tests")
    else
        parts+=("fuzzcheck FAILED")
        broken+=(fuzzcheck)
    fi
    if grep -qE '^[^ ]*: +[0-9]+ cases, 0 crashes$' "$log"; then
        echo sessionfuzz >>"$dir/tests-passed.tmp"
        parts+=("sessionfuzz: $(grep -oE '[0-9]+ cases, 0 crashes$' "$log" | tail -n 1)")
    else
        parts+=("sessionfuzz FAILED")
        broken+=(sessionfuzz)
    fi
    # srcck1 prints nothing when sqlite3.c passes; make reports its failure.
    if grep -q '^\./srcck1 sqlite3\.c$' "$log" && ! grep -q '^make: \*\*\* .*sourcetest\]' "$log"; then
        echo srcck1 >>"$dir/tests-passed.tmp"
        parts+=("srcck1 OK")
    else
        parts+=("srcck1 FAILED")
        broken+=(srcck1)
    fi
    LC_ALL=C sort -u "$dir/tests-passed.tmp" >"$dir/tests-passed.txt"
    rm -f "$dir/tests-passed.tmp"
    test_result=$(printf '%s, ' "${parts[@]}")
    test_result=${test_result%, }
    if ((${#broken[@]})); then
        test_result+="; failed: ${broken[*]}"
    fi
    if ((status != 0 || ${#broken[@]})); then
        test_result="FAILED (status $status): $test_result"
        status=1
    fi
}

# NUL-separated list of the object files of the build tree: every *.o, and
# every *.lo that is an ELF object (zlib's PIC objects for libz.so; libtool's
# .lo files are text and are skipped).
build_objects() {
    local f
    find "$dir/src" -type f \( -name '*.o' -o -name '*.lo' \) -print0 | sort -z |
        while IFS= read -r -d '' f; do
            if [[ $f == *.o || $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]]; then
                printf '%s\0' "$f"
            fi
        done
}

# Extracts .debug_site_info from every object of the build tree; sets sites_result.
sites_check() {
    local obj rc n_obj=0 n_missing=0 n_broken=0 n_sites=0 out=$dir/sites.txt
    : >"$out"
    : >"$dir/sites.err"
    while IFS= read -r -d '' obj; do
        n_obj=$((n_obj + 1))
        rc=0
        "$extract" --require .debug_site_info "$obj" >"$dir/sites.tmp" 2>>"$dir/sites.err" || rc=$?
        case $rc in
            0) cat "$dir/sites.tmp" >>"$out" ;;
            1) n_missing=$((n_missing + 1)); echo "missing: ${obj#"$dir/src/"}" >>"$dir/sites.err" ;;
            *) n_broken=$((n_broken + 1)) ;;
        esac
    done < <(build_objects)
    rm -f "$dir/sites.tmp"
    n_sites=$(grep -cvE '^[[:space:]]*(<sites[[:space:]>]|</sites>|$)' "$out" || true)
    units="$((n_obj - n_missing - n_broken))/$n_obj" sites=$n_sites
    sites_result="sites: $n_obj objects, $n_missing without .debug_site_info, $n_sites site lines"
    if ((n_broken > 0)); then
        sites_result+=", $n_broken UNREADABLE (see $dir/sites.err)"
        return 1
    fi
}

# The warnings of build.log in $1 as sorted "file:line: message" lines
# (column dropped; paths under the build tree made relative to it).
normalised_warnings() {
    sed -n 's|'"$1"'/src/||g; /warning:/p' "$1/build.log" |
        sed -E 's/^([^: ]+):([0-9]+):[0-9]+: warning:/\1:\2: warning:/' | LC_ALL=C sort
}

# bc: a script passes built with --cc when it also prints what gcc's bc
# prints; rewrites $dir/tests-passed.txt and test_pass accordingly.
bc_compare_outputs() {
    local gcc_dir=$1 t kept=()
    while IFS= read -r t; do
        if cmp -s "$dir/bc-tests/$t.out" "$gcc_dir/bc-tests/$t.out"; then
            kept+=("$t")
        else
            echo "$t: output differs from gcc's bc (diff $gcc_dir/bc-tests/$t.out $dir/bc-tests/$t.out)" \
                >>"$dir/test.log"
        fi
    done <"$dir/tests-passed.txt"
    printf '%s\n' "${kept[@]}" | sed '/^$/d' >"$dir/tests-passed.txt"
    test_pass=${#kept[@]}
}

# Builds $project a second time with plain gcc in $dir-gcc, runs its test
# suite there and compares the warnings and the passing tests; sets
# compare_result, gcc_build_us, gcc_test_pass, wdiff and tests_vs; fails when
# they differ or gcc's build does. $1: true when this compiler's tests ran.
compare_with_gcc() {
    local ours_dir=$dir gcc_dir=$dir-gcc n tested=$1 only
    # configure_and_build and run_tests set these: keep this compiler's.
    local configure_us=$configure_us build_us=$build_us warnings=$warnings build_state=$build_state
    local ours=$test_pass
    local test_us=$test_us test_result=$test_result test_pass=$test_pass
    dir=$gcc_dir
    unpack "$project" "$gcc_dir" >/dev/null
    echo "==> $project: configure and build with CC=gcc CFLAGS=\"$gcc_cflags\" (warnings and tests compared)"
    if ! configure_and_build gcc "$gcc_cflags"; then
        dir=$ours_dir
        compare_result="gcc's build FAILED ($gcc_dir)"
        return 1
    fi
    gcc_build_us=$build_us
    echo "==> $project: test suite of gcc's build"
    run_tests || true
    gcc_test_pass=$test_pass
    test_pass=$ours
    dir=$ours_dir
    diff <(normalised_warnings "$gcc_dir") <(normalised_warnings "$ours_dir") |
        sed -n 's/^< /- /p; s/^> /+ /p' >"$dir/warnings-diff.txt" || true
    n=$(wc -l <"$dir/warnings-diff.txt")
    wdiff=$n
    compare_result="gcc: build $(secs "$gcc_build_us") s"
    if $tested; then
        [[ $project == bc ]] && bc_compare_outputs "$gcc_dir"
        ours_pass=$test_pass
        tests_vs="$test_pass PASS / $gcc_test_pass with gcc"
        compare_result+=", tests: $tests_vs"
        LC_ALL=C comm -13 "$dir/tests-passed.txt" "$gcc_dir/tests-passed.txt" \
            >"$dir/tests-gcc-only.txt"
        only=$(wc -l <"$dir/tests-gcc-only.txt")
        if ((only > 0)); then
            compare_result+=" (passing with gcc only: $(head -n 10 "$dir/tests-gcc-only.txt" | tr '\n' ' ')"
            ((only > 10)) && compare_result+="and $((only - 10)) more "
            compare_result="${compare_result% }; all in $dir/tests-gcc-only.txt)"
            n=$((n + 1))
        fi
    fi
    if ((wdiff == 0)); then
        compare_result+=", warnings as gcc's"
    else
        compare_result+=", $wdiff warning differences (see $dir/warnings-diff.txt)"
        sed 's/^/    /' "$dir/warnings-diff.txt"
    fi
    ((n == 0))
}

# Wall-clock ratio of two durations in microseconds, e.g. "2.4x".
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

if [[ " ${projects[*]} " == *" sqlite3 "* ]]; then
    ensure_tcl
fi

summaries=()
rows=()
failed=0
for project in "${projects[@]}"; do
    dir=$work/$project
    configure_us=0 build_us=0 test_us=0 warnings=0 build_state='' test_result='' sites_result=''
    compare_result='' units=- sites=- gcc_build_us=0 gcc_test_pass=- wdiff=- tests_vs=- test_pass=0
    ours_pass=-
    tested=false
    if [[ -e $dir-gcc && ! -e $dir-gcc/.sampler-corpus ]]; then
        die "$dir-gcc exists and was not made by corpus.sh; not wiping it"
    fi
    unpack "$project"
    echo "==> $project: configure and build with CC=$cc CFLAGS=\"$cflags\""
    if configure_and_build; then
        echo "==> $project: test suite"
        run_tests || failed=1
        tested=true
        ours_pass=$test_pass
        if $sites_check; then
            echo "==> $project: sites check"
            sites_check || failed=1
        fi
        line="$project: $build_state, $warnings warnings, tests ($(secs "$test_us") s): $test_result"
    else
        failed=1
        line="$project: $build_state, $warnings warnings, tests not run"
    fi
    [[ -n $sites_result ]] && line+=", $sites_result"
    if $compare_warnings; then
        compare_with_gcc "$tested" || failed=1
        line+=", $compare_result"
    fi
    line+=", logs: $dir"
    echo "$line"
    summaries+=("$line")
    build_col="$(secs "$build_us") s"
    if [[ $build_state == *FAILED* ]]; then
        build_col="FAILED"
    elif ((gcc_build_us > 0)); then
        build_col+=" / $(secs "$gcc_build_us") s gcc ($(ratio "$build_us" "$gcc_build_us"))"
    fi
    [[ $tests_vs == - ]] && tests_vs="$ours_pass PASS"
    rows+=("$(printf '%-7s | %-7s | %-6s | %-30s | %-22s | %s' "$project" "$units" "$sites" \
        "$build_col" "$tests_vs" "$wdiff")")
done

echo
echo "==> summary (CC=$cc CFLAGS=\"$cflags\")"
printf '%s\n' "${summaries[@]}"
echo
printf '%-7s | %-7s | %-6s | %-30s | %-22s | %s\n' project units sites build tests "warning diffs"
printf '%s\n' "${rows[@]}"
exit "$failed"
