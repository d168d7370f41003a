#!/usr/bin/env bash
# busybox_image.sh OUT.tar: an OCI image of the node's static busybox (/bin/busybox and the
# applets tests use), tagged 1, with `sh` as its command, written as an OCI layout tar for
# `ctr -n k8s.io images import --base-name docker.io/library/busybox OUT.tar`. Built with umoci,
# so that no registry is needed.
set -euo pipefail
out=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
layout=$dir/image bundle=$dir/bundle
umoci init --layout "$layout"
umoci new --image "$layout:1"
umoci unpack --image "$layout:1" "$bundle"
mkdir -p "$bundle/rootfs/bin"
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for t in sh sleep cat echo ls true false test; do ln -s busybox "$bundle/rootfs/bin/$t"; done
umoci repack --image "$layout:1" "$bundle"
umoci config --image "$layout:1" --config.cmd /bin/sh
tar -C "$layout" -cf "$out" .
