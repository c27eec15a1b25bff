#!/bin/sh
# Debian's chromium for the dashboard's end-to-end tests (tests/integration/test_web.py), driven by
# Playwright with executable_path=/usr/bin/chromium (`playwright install` downloads browsers: never
# used). Installs it when missing. Quick when it is there.
set -eu
[ -x /usr/bin/chromium ] && exit 0
exec "$(dirname "$0")/../../deploy/debian_install.sh" "web tests" chromium
