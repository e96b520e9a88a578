#!/usr/bin/env bash
# Build SeaweedFS's `weed` (a real S3-compatible server for the object-storage tests) from the Go module
# proxy, once: the binary is cached as ~/.cache/kafka-chaos/seaweedfs/weed-<version> and reused offline.
# `go install module@version` refuses this module (its go.mod has replace directives), so the module's
# source is downloaded through the proxy and built in a scratch copy, where its go.mod applies.
# Prints the binary's path. Usage: scripts/build-seaweedfs.sh [VERSION]
set -euo pipefail
MODULE=github.com/seaweedfs/seaweedfs
VERSION="${1:-${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}}"
CACHE="${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/seaweedfs"
BIN="$CACHE/weed-$VERSION"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "build-seaweedfs: go is not installed" >&2; exit 2; }
mkdir -p "$CACHE"
src="$(GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$src" ] || { echo "build-seaweedfs: could not download $MODULE@$VERSION" >&2; exit 2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/" && chmod -R u+w "$work"
start=$(date +%s)
(cd "$work" && GOFLAGS=-mod=mod nice -n "${NICE:-10}" go build -trimpath -o "$BIN.part" ./weed) >&2
mv "$BIN.part" "$BIN"
echo "build-seaweedfs: built $BIN in $(( $(date +%s) - start )) s" >&2
echo "$BIN"
