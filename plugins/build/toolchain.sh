#!/bin/sh
# The plugin toolchain on a Debian machine: installs what is missing (deploy/debian_install.sh), or says
# what to install. Quick when everything is there (it only looks).
set -eu
missing=""
command -v clang >/dev/null 2>&1 || missing="$missing clang"
command -v wasm-ld >/dev/null 2>&1 || missing="$missing lld"
[ -f /usr/lib/wasm32-wasi/libc.a ] || missing="$missing wasi-libc"
ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing="$missing libclang-rt-dev-wasm32"
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
exec "$(dirname "$0")/../../deploy/debian_install.sh" plugins $missing
