#!/usr/bin/env bash
# Keeps the shared cargo build directory ($CARGO_TARGET_DIR, shared by every checkout on this
# machine, CI's clean clones included) from filling the disk. `make test` runs it first.
#
# Every build of a crate whose source or flags changed leaves a new artifact beside the old one
# (`deps/<name>-<hash>.<ext>`); cargo never deletes the old one. This removes, under each
# profile's `deps/`, every artifact that has a newer one of the same name and kind and is itself
# older than $MTO_PRUNE_AGE_DAYS (default 2): other checkouts on this machine may still be using
# the artifacts they built in the last days. Cargo rebuilds anything it finds missing. It also
# removes incremental-compilation sessions of the same age (`make` builds without them).
# A cut needs no lock: cargo writes a new artifact under a new name, and one older than days is
# not being written.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
TARGET=${CARGO_TARGET_DIR:-$MTO_CACHE/target}
AGE_DAYS=${MTO_PRUNE_AGE_DAYS:-2}
[ -d "$TARGET" ] || exit 0

before=$(du -sm "$TARGET" | cut -f1)
for deps in "$TARGET"/*/deps "$TARGET"/*/*/deps; do
  [ -d "$deps" ] || continue
  # Newest first; the key is the file name without its `-<hash>`. The first of each key is kept,
  # a later (older) one goes when it is past the age.
  find "$deps" -maxdepth 1 -type f -printf '%T@ %f\n' | sort -rn |
    awk -v cut="$(($(date +%s) - AGE_DAYS * 86400))" '{
      key = $2; ext = ""
      if (match(key, /\.[a-z]+$/)) { ext = substr(key, RSTART); key = substr(key, 1, RSTART - 1) }
      sub(/-[^-]*$/, "", key)
      if (seen[key ext]++ && $1 < cut) print $2
    }' | (cd "$deps" && xargs -r rm -f --)
done
find "$TARGET" -mindepth 3 -maxdepth 3 -path '*/incremental/*' -mmin "+$((AGE_DAYS * 1440))" \
  -exec rm -rf {} +
after=$(du -sm "$TARGET" | cut -f1)
echo "prune-cache: $TARGET ${before} MiB -> ${after} MiB (superseded artifacts older than $AGE_DAYS days)"
