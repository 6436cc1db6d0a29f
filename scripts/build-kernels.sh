#!/bin/sh
# Rebuilds the project's own wasm kernels from their C sources (src/core/engine/kernels/c/) into
# TypeScript modules that hold the bytes (src/core/engine/kernels/*-wasm-bytes.ts), committed so
# that nobody else needs a compiler. Needs clang and wasm-ld (Debian: apt-get install clang lld).
# Usage: sh scripts/build-kernels.sh   (about 1 s; test/unit/kernels/attention-wasm.test.ts checks
# that the committed bytes are what this script builds, where the same clang version is installed;
# the bytes file records it)
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clang --target=wasm32 -O3 -msimd128 -nostdlib -fno-builtin \
  -Wl,--no-entry -Wl,--initial-memory=131072 -Wl,--stack-first -Wl,-z,stack-size=65536 \
  -o "$out/attention.wasm" src/core/engine/kernels/c/attention.c
node -e '
const fs = require("fs");
const [wasm, target, compiler] = process.argv.slice(1);
const b64 = fs.readFileSync(wasm).toString("base64");
// the base64 in string literals of 128 characters, one a line, so that no line is over 160
const chunks = b64.match(/.{1,128}/g).map((c) => `  ${JSON.stringify(c)}`).join(" +\n");
fs.writeFileSync(target, `/** Built by scripts/build-kernels.sh from ./c/attention.c (wasm32, SIMD): do not edit. */\n`
  + `export const ATTENTION_WASM_COMPILER = ${JSON.stringify(compiler)};\nexport const ATTENTION_WASM =\n${chunks};\n`);
' "$out/attention.wasm" src/core/engine/kernels/attention-wasm-bytes.ts "$(clang --version | head -n 1)"
echo "built src/core/engine/kernels/attention-wasm-bytes.ts"
