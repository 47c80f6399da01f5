#!/usr/bin/env bash
# Packages the runtime as programs link it, from the staticlib cargo builds:
#   OUTDIR/libsampler_runtime.a   one prelinked object whose only global
#                                 symbols are the C ABI (runtime/exports.map)
#   OUTDIR/libsampler_runtime.so  the shared variant, exporting the same
#
# A Rust staticlib also carries the Rust standard library's and
# compiler-builtins' global symbols (`__rust_alloc`, `__muldc3`, ...), which
# would clash with another Rust library or shadow libgcc in the program;
# `ld -r` + `objcopy --keep-global-symbols` makes them local.
#
# Usage: scripts/package-runtime.sh target/release/libsampler_runtime.a OUTDIR
set -euo pipefail

staticlib=$1
out=$2
map="$(cd "$(dirname "$0")/.." && pwd)/runtime/exports.map"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

grep -oE '\bcbi_[A-Za-z0-9_]+' "$map" > "$work/keep"
ld -r --whole-archive "$staticlib" -o "$work/prelinked.o"
# The embedded LLVM bitcode is of no use to gcc and upsets binutils plugins.
objcopy --keep-global-symbols="$work/keep" \
    --remove-section=.llvmbc --remove-section=.llvmcmd \
    "$work/prelinked.o" "$work/sampler_runtime.o"
rm -f "$out/libsampler_runtime.a"
ar rcsD "$out/libsampler_runtime.a" "$work/sampler_runtime.o"
gcc -shared -o "$out/libsampler_runtime.so" "$work/sampler_runtime.o" \
    -Wl,-soname,libsampler_runtime.so -Wl,--version-script="$map" \
    -lgcc_s -lpthread -ldl -lm
