#!/usr/bin/env bash
# Builds the toolchain in release mode and installs it under PREFIX:
#   PREFIX/bin/                  sampler-cc, extract-section, extract-report,
#                                resolve-samples, resolve-timestamps,
#                                resolve-backtrace, sampler-collector, sampler-run
#   PREFIX/lib/sampler/          libsampler_runtime.so and .a (the runtime)
#   PREFIX/libexec/sampler-cc/   cc1, the compiler stage gcc runs (a
#                                relative link to sampler-cc), and
#                                libclang, the path of the libclang found
#                                now (`sampler-cc --sampler-libclang`),
#                                which compiles then load without searching
#   PREFIX/include/sampler.h     the runtime's C interface
# sampler-cc finds the runtime and its stage from its own location, so the
# installed tree may be moved or copied whole (a staging PREFIX packaged
# elsewhere).
#
# Usage: scripts/install.sh PREFIX
set -euo pipefail

prefix=${1:?usage: scripts/install.sh PREFIX}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" \
    -p sampler-cc -p sampler-runtime -p sampler-extract -p sampler-resolve -p sampler-collector -p sampler-launcher
release="${CARGO_TARGET_DIR:-$root/target}/release"

mkdir -p "$prefix/bin" "$prefix/lib/sampler" "$prefix/libexec/sampler-cc" "$prefix/include"
prefix=$(cd "$prefix" && pwd)
for tool in sampler-cc extract-section extract-report resolve-samples resolve-timestamps resolve-backtrace \
    sampler-collector sampler-run; do
    install -m 755 "$release/$tool" "$prefix/bin/$tool"
done
SAMPLER_CC="$release/sampler-cc" "$root/scripts/package-runtime.sh" "$release/libsampler_runtime.a" "$prefix/lib/sampler"
ln -sfn ../../bin/sampler-cc "$prefix/libexec/sampler-cc/cc1"
# Found with the search (not an older record), as compiles would find it.
record=$prefix/libexec/sampler-cc/libclang
rm -f "$record"
if libclang=$(env -u LIBCLANG_PATH "$prefix/bin/sampler-cc" --sampler-libclang); then
    echo "$libclang" >"$record"
else
    echo "install.sh: no libclang found; compiles will search for it each time" >&2
fi
install -m 644 "$root/runtime/include/sampler.h" "$prefix/include/sampler.h"
echo "installed in $prefix"
