#!/bin/sh
# fetch-sdist.sh PYTHON PACKAGE VERSION SHA256 DIR OUT: one source distribution from PyPI, checked
# against its pinned SHA-256 (a mismatch deletes it and fails the build).
set -eu
python=$1 package=$2 version=$3 sha256=$4 dir=$5 out=$6
mkdir -p "$dir"
"$python" -m pip download --quiet --no-binary :all: --no-deps "$package==$version" -d "$dir"
actual=$(sha256sum "$out" | cut -d' ' -f1)
if [ "$actual" != "$sha256" ]; then
    rm -f "$out"
    echo "fetch-sdist: $out has sha256 $actual, expected $sha256" >&2
    exit 1
fi
