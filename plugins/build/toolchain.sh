#!/bin/sh
# The plugin toolchain on a Debian machine: installs what is missing (as root, with apt-get), or says
# what to install. Quick when everything is there (it only looks).
set -eu
missing=""
command -v clang >/dev/null 2>&1 || missing="$missing clang"
command -v wasm-ld >/dev/null 2>&1 || missing="$missing lld"
[ -f /usr/lib/wasm32-wasi/libc.a ] || missing="$missing wasi-libc"
ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing="$missing libclang-rt-dev-wasm32"
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "plugins: installing$missing" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "plugins: the toolchain needs Debian packages:$missing (apt-get install -y$missing)" >&2
    exit 1
fi
