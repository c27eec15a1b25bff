#!/bin/sh
# The catalog tests' servers on a Debian machine: PostgreSQL and MariaDB, installed only when
# missing, never started as services — the tests start their own instances.
set -eu
missing=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 || missing="$missing mariadb-server"
command -v mariadb-install-db >/dev/null 2>&1 || missing="$missing mariadb-server"
command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
exec "$(dirname "$0")/../../deploy/debian_install.sh" databases $missing
