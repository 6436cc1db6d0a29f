#!/bin/sh
# Rebuilds the project's own wasm kernels from their C sources (src/core/engine/kernels/c/) into
# TypeScript modules that hold the bytes (src/core/engine/kernels/*-wasm-bytes.ts), committed so
# that nobody else needs a compiler. Needs clang and wasm-ld (Debian: apt-get install clang lld).
# Usage: sh scripts/build-kernels.sh   (about 1 s; test/unit/kernels/attention-wasm.test.ts and
# bmm-wasm.test.ts check that the committed bytes are what this script builds, where the same clang
# version is installed; each bytes file records it)
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# build NAME CONST OPT: c/NAME.c -> NAME-wasm-bytes.ts exporting CONST and CONST_COMPILER, at clang's -OPT.
# Each module stays under 4 KB: browsers refuse to compile a larger one synchronously on the main thread.
build() {
  clang --target=wasm32 -O$3 -msimd128 -nostdlib -fno-builtin \
    -Wl,--no-entry -Wl,--initial-memory=131072 -Wl,--stack-first -Wl,-z,stack-size=65536 \
    -o "$out/$1.wasm" "src/core/engine/kernels/c/$1.c"
  node -e '
const fs = require("fs");
const [wasm, target, name, source, compiler] = process.argv.slice(1);
const b64 = fs.readFileSync(wasm).toString("base64");
// the base64 in string literals of 128 characters, one a line, so that no line is over 160
const chunks = b64.match(/.{1,128}/g).map((c) => `  ${JSON.stringify(c)}`).join(" +\n");
fs.writeFileSync(target, `/** Built by scripts/build-kernels.sh from ./c/${source} (wasm32, SIMD): do not edit. */\n`
  + `export const ${name}_COMPILER = ${JSON.stringify(compiler)};\nexport const ${name} =\n${chunks};\n`);
' "$out/$1.wasm" "src/core/engine/kernels/$1-wasm-bytes.ts" "$2" "$1.c" "$(clang --version | head -n 1)"
  echo "built src/core/engine/kernels/$1-wasm-bytes.ts"
}
build attention ATTENTION_WASM 3
build bmm BMM_WASM s  # 2.1 KB; its 4 x 8 tile is written out, so -Os loses no speed
