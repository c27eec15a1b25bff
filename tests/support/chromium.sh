#!/bin/sh
# Debian's chromium for the dashboard's end-to-end tests (tests/integration/test_web.py), driven by
# Playwright with executable_path=/usr/bin/chromium (`playwright install` downloads browsers: never
# used). Installs it when missing (as root, with apt-get), or says what to install. Quick when it is there.
set -eu
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "web tests: installing chromium" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
    echo "web tests: they need Debian's chromium (apt-get install -y chromium)" >&2
    exit 1
fi
