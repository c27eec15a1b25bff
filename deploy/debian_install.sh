#!/bin/sh
# Installs Debian packages for one part of drsg: `debian_install.sh WHAT PACKAGE...` (the missing
# ones; WHAT names the part in what it says). As root with apt-get it installs them, reading the
# package lists once an hour at most (`make test` installs three parts in a row on a fresh machine);
# packages never start their own services (the tests start their own instances). Otherwise it says
# what to install and fails.
set -eu
what=$1
shift
[ $# -eq 0 ] && exit 0
packages=$(printf '%s\n' "$@" | sort -u | paste -sd ' ' -)
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$what: needs Debian packages: $packages (apt-get install -y $packages)" >&2
    exit 1
fi
echo "$what: installing $packages" >&2
# (a stamp of our own: apt dates the lists by the server's Last-Modified, not by when it read them)
stamp=/var/cache/apt/drsg-lists-read
if [ -z "$(find "$stamp" -mmin -60 2>/dev/null)" ]; then
    apt-get update -qq
    touch "$stamp"
fi
# policy-rc.d keeps the packages from starting their own services
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d.drsg && chmod +x /usr/sbin/policy-rc.d.drsg
[ -e /usr/sbin/policy-rc.d ] || ln -s /usr/sbin/policy-rc.d.drsg /usr/sbin/policy-rc.d
status=0
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null || status=$?
[ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" = /usr/sbin/policy-rc.d.drsg ] && rm -f /usr/sbin/policy-rc.d
rm -f /usr/sbin/policy-rc.d.drsg
exit $status
