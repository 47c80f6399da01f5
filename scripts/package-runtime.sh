#!/usr/bin/env bash
# Packages the runtime as programs link it, from the staticlib cargo builds:
#   OUTDIR/libsampler_runtime.a   one prelinked object whose only global
#                                 symbols are the C ABI (runtime/exports.map)
#   OUTDIR/libsampler_runtime.so  the shared variant, exporting the same
#
# The work is sampler-cc's (sampler-cc/src/runtime_package.rs, which also
# packages cargo's staticlib found beside sampler-cc when it links):
# this runs `sampler-cc --sampler-package-runtime STATICLIB OUTDIR` with
# $SAMPLER_CC if set, else the sampler-cc cargo builds beside STATICLIB
# (built here first, in the same profile and target folder, when STATICLIB
# is in a cargo target folder; a no-op when it is up to date).
#
# Usage: scripts/package-runtime.sh target/release/libsampler_runtime.a OUTDIR
set -euo pipefail

staticlib=${1:?usage: scripts/package-runtime.sh STATICLIB OUTDIR}
out=${2:?usage: scripts/package-runtime.sh STATICLIB OUTDIR}
sampler_cc=${SAMPLER_CC:-}
if [ -z "$sampler_cc" ]; then
    profile_dir=$(cd "$(dirname "$staticlib")" && pwd)
    sampler_cc=$profile_dir/sampler-cc
    if [ -d "$profile_dir/.fingerprint" ]; then
        root=$(cd "$(dirname "$0")/.." && pwd)
        profile=$(basename "$profile_dir")
        [ "$profile" = debug ] && profile=dev
        "${CARGO:-cargo}" build --quiet --manifest-path "$root/Cargo.toml" -p sampler-cc --bin sampler-cc \
            --profile "$profile" --target-dir "$(dirname "$profile_dir")"
    elif [ ! -x "$sampler_cc" ]; then
        echo "package-runtime.sh: no sampler-cc beside $staticlib; set SAMPLER_CC to one" >&2
        exit 1
    fi
fi
exec "$sampler_cc" --sampler-package-runtime "$staticlib" "$out"
