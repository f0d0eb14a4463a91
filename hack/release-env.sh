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
# Defaults of a `buildah build` without flags, as README's commands run it: RUN steps in the
# host's network namespace (this machine has no container networking for builds; cargo fetches
# crates in the build stage), and every step kept as a layer, so the three targets share one
# build stage and a second build reuses it.
cat >"$BUILDAH_DIR/containers.conf" <<CONF
[containers]
netns = "host"
CONF
export CONTAINERS_CONF=$BUILDAH_DIR/containers.conf BUILDAH_LAYERS=true
# This machine's CA bundle plus the cluster's CA, written by `hack/registry.sh start`.
REGISTRY_TRUST=$MTO_STATE/registry/trust.pem
# Makes buildah, skopeo and helm (Go programs: crypto/x509 reads SSL_CERT_FILE) trust the local
# registry, as a user's tools trust theirs; call it once the registry runs.
trust_registry() {
  [ -f "$REGISTRY_TRUST" ] ||
    { echo "no $REGISTRY_TRUST: start the registry first (hack/registry.sh start)" >&2; return 1; }
  export SSL_CERT_FILE=$REGISTRY_TRUST
}
