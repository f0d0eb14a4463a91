#!/usr/bin/env bash
# Installs the Debian packages the local cluster and its tests need (tmux: the terminal the
# `kubectl mcp` test types into; docker-registry, skopeo, buildah and mmdebstrap: the cluster's
# registry and the release tier, docs/local-cluster.md), once (a no-op when all are present).
set -euo pipefail
PKGS=(containerd runc containernetworking-plugins iptables conntrack busybox-static
      iproute2 openssl gcc libc6-dev python3 python3-yaml procps util-linux curl
      tmux docker-registry skopeo buildah mmdebstrap)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
