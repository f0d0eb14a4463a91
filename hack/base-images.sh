#!/usr/bin/env bash
# Makes the two base images the Dockerfile names, locally and from Debian packages only (no image
# is pulled from a registry), into buildah's storage under $MTO_CACHE, unless they are there:
#   docker.io/library/debian:bookworm-slim   mmdebstrap --variant=minbase bookworm
#   docker.io/library/rust:1.95-bookworm     that, plus gcc, libc6-dev, pkg-config and
#                                            ca-certificates, plus this machine's rustup toolchain
#                                            (RUSTUP_HOME=/usr/local/rustup, CARGO_HOME=/usr/local/cargo
#                                            and cargo/rustc on PATH, as in the official image),
#                                            trusting this machine's CA bundle: cargo in a build
#                                            stage reaches crates.io as the host does (through a
#                                            proxy with its own CA here), with no flag on `buildah
#                                            build`; made again when that bundle changes
# FORCE=1 makes them again.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
DEBIAN=docker.io/library/debian:bookworm-slim
RUST=docker.io/library/rust:1.95-bookworm
TOOLCHAIN=${RUST_TOOLCHAIN_DIR:-$HOME/.rustup/toolchains/stable-x86_64-unknown-linux-gnu}
RUST_VERSION=1.95

have() { [ -z "${FORCE:-}" ] && buildah inspect --type image "$1" >/dev/null 2>&1; }
HOST_CA=${SYSTEM_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
HOST_CA_SUM=$(sha256sum "$HOST_CA" | cut -c1-16)
# The rust image, made with this machine's CA bundle as it is now.
have_rust() {
  have "$RUST" && [ "$(buildah inspect --type image \
    --format '{{index .OCIv1.Config.Labels "io.mcp-task-operator.host-ca"}}' "$RUST" 2>/dev/null)" = "$HOST_CA_SUM" ]
}

# One maker at a time (make test makes them in the background, hack/prebuild.sh, while the
# release tier may get here): the second waits and finds them made.
exec 9>"$BUILDAH_DIR/.base-images.lock"
flock 9

if ! have "$DEBIAN"; then
  command -v mmdebstrap >/dev/null || apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  t0=$(date +%s)
  tmp=$(mktemp -d)
  # minbase: Essential and apt, as the official slim image; no documentation, like it.
  mmdebstrap --quiet --variant=minbase --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$tmp/rootfs.tar" http://deb.debian.org/debian
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$tmp/rootfs.tar" / >/dev/null
  buildah config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --os linux --arch amd64 "$ctr"
  buildah commit --quiet --rm "$ctr" "$DEBIAN" >/dev/null
  rm -rf "$tmp"
  echo "made $DEBIAN in $(($(date +%s) - t0)) s"
fi

if ! have_rust; then
  [ -x "$TOOLCHAIN/bin/cargo" ] || { echo "no Rust toolchain at $TOOLCHAIN (set RUST_TOOLCHAIN_DIR)" >&2; exit 1; }
  t0=$(date +%s)
  ctr=$(buildah from "$DEBIAN")
  buildah run --network host "$ctr" -- sh -c 'apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      gcc libc6-dev pkg-config ca-certificates >/dev/null && rm -rf /var/lib/apt/lists/*'
  mnt=$(buildah mount "$ctr")
  tc=$mnt/usr/local/rustup/toolchains/stable-x86_64-unknown-linux-gnu
  mkdir -p "$tc" "$mnt/usr/local/cargo/bin"
  # The toolchain without its documentation (share/doc is most of its size).
  cp -a "$TOOLCHAIN/bin" "$TOOLCHAIN/lib" "$tc/"
  [ -d "$TOOLCHAIN/libexec" ] && cp -a "$TOOLCHAIN/libexec" "$tc/"
  for b in "$tc"/bin/*; do ln -s "../../rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/${b##*/}" \
    "$mnt/usr/local/cargo/bin/${b##*/}"; done
  cp "$HOST_CA" "$mnt/etc/ssl/certs/ca-certificates.crt"
  buildah umount "$ctr" >/dev/null
  buildah config --label "io.mcp-task-operator.host-ca=$HOST_CA_SUM" --env RUSTUP_HOME=/usr/local/rustup --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env RUST_VERSION=$RUST_VERSION "$ctr"
  buildah commit --quiet --rm "$ctr" "$RUST" >/dev/null
  echo "made $RUST in $(($(date +%s) - t0)) s"
fi
buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$DEBIAN" "$RUST" 2>/dev/null || true
