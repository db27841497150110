#!/usr/bin/env bash
# Installs the Debian packages the tests need that this machine lacks:
# chromium (the web page's test), kubernetes-client (kubectl: kubectl proxy
# in front of the page's test, and the local stack's smoke test), podman
# and runc (`make image` and the image test; hack/podman/containers.conf
# has the settings they run with) and postgresql (PostgreSQL, the sidecar's
# PostgreSQL store tests; its server programs under
# /usr/lib/postgresql/*/bin). As root it runs apt-get update once, then
# apt-get install; otherwise it prints the command that does and fails.
set -euo pipefail

packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
command -v podman >/dev/null 2>&1 || packages+=(podman)
command -v runc >/dev/null 2>&1 || packages+=(runc)
compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null || packages+=(postgresql)
((${#packages[@]})) || exit 0

install="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${packages[*]}"
if ((EUID != 0)); then
  echo "The tests need the Debian packages ${packages[*]}. Install them as root, then run the tests again:" >&2
  echo "  sudo sh -c '$install'" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The tests need what the Debian packages ${packages[*]} install, and this machine has no apt-get: install their equivalents." >&2
  exit 1
fi
echo "Installing the Debian packages the tests need: ${packages[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
