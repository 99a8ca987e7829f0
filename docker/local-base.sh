#!/usr/bin/env bash
# A base image with Python built without any registry: Debian bookworm (python3.11) from
# debootstrap, imported into the engine as pcgkit-local/bookworm-py311:minbase.
# For machines that cannot pull (CI here, the tests); GPU runners use docker/pins.toml's bases.
# The root filesystem tarball is cached (~60 MB) so a CI rerun only runs `docker import`.
#   docker/local-base.sh [TAG]     needs root (debootstrap) the first time, and a running engine
set -euo pipefail
tag="${1:-pcgkit-local/bookworm-py311:minbase}"
cache="${PCGKIT_CACHE:-$HOME/.cache/pcgkit}/docker"
tarball="$cache/bookworm-minbase-py311.tar"
mirror="${PCGKIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "local-base: $tag already in the engine" >&2
  exit 0
fi
if [ ! -s "$tarball" ]; then
  command -v debootstrap >/dev/null || { echo "local-base: debootstrap missing (apt-get install debootstrap)" >&2; exit 3; }
  mkdir -p "$cache"
  rootfs="$(mktemp -d /tmp/pcgkit-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  echo "local-base: debootstrap bookworm into $rootfs (a few minutes, once)" >&2
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$rootfs" "$mirror" >&2
  # The package cache and lists are not part of the image.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
fi
echo "local-base: docker import $tarball -> $tag" >&2
docker import --change 'CMD ["/bin/bash"]' "$tarball" "$tag" >/dev/null
docker image inspect --format '{{.Id}} {{.Size}}' "$tag"
