# Sourced by the release scripts (hack/base-images.sh, hack/registry.sh, hack/release-*.sh):
# where buildah keeps its images and build caches, and the local registry's address.
# buildah's storage is a cache like the others under $MTO_CACHE: `make cluster-down` never
# touches it. Source hack/versions.sh first.
BUILDAH_DIR=${BUILDAH_DIR:-$MTO_CACHE/buildah}
mkdir -p "$BUILDAH_DIR/tmp"
# The overlay driver on the cache's own file system (ext4 here); storage.conf names the paths.
if [ ! -f "$BUILDAH_DIR/storage.conf" ]; then
  cat >"$BUILDAH_DIR/storage.conf" <<CONF
[storage]
driver = "${BUILDAH_DRIVER:-overlay}"
graphroot = "$BUILDAH_DIR/storage"
runroot = "$BUILDAH_DIR/run"
CONF
fi
export CONTAINERS_STORAGE_CONF=$BUILDAH_DIR/storage.conf
# `RUN --mount=type=cache` directories live under TMPDIR (buildah-cache-<uid>), so they survive too.
export TMPDIR=$BUILDAH_DIR/tmp
# The local registry (hack/registry.sh): loopback only; containerd pulls localhost over plain HTTP.
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
REGISTRY=${REGISTRY:-localhost:${REGISTRY_ADDR##*:}}
