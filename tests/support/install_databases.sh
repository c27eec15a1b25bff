#!/bin/sh
# The catalog tests' servers on a Debian machine: PostgreSQL and MariaDB, installed (as root, with
# apt-get) only when missing, never started as services — the tests start their own instances.
set -eu
missing=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 || missing="$missing mariadb-server"
command -v mariadb-install-db >/dev/null 2>&1 || missing="$missing mariadb-server"
command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
[ -z "$missing" ] && exit 0
missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "databases: installing $missing" >&2
    apt-get update -qq
    # policy-rc.d keeps the packages from starting their own services
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d.drsg && chmod +x /usr/sbin/policy-rc.d.drsg
    [ -e /usr/sbin/policy-rc.d ] || ln -s /usr/sbin/policy-rc.d.drsg /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    [ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" = /usr/sbin/policy-rc.d.drsg ] && rm -f /usr/sbin/policy-rc.d
    rm -f /usr/sbin/policy-rc.d.drsg
else
    echo "databases: the catalog tests need Debian packages: $missing (apt-get install -y $missing)" >&2
    exit 1
fi
