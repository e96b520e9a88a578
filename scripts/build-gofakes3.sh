#!/usr/bin/env bash
# Fallback S3 server for the object-storage tests when SeaweedFS (scripts/build-seaweedfs.sh) cannot be built
# in time: gofakes3's server, from the Go module proxy, cached as ~/.cache/kafka-chaos/gofakes3/gofakes3.
# Use it with KAFKA_CHAOS_S3_SERVER=gofakes3 (it accepts any credentials; the credential test skips).
set -euo pipefail
VERSION="${1:-v1.2.0}"
BIN_DIR="${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/gofakes3"
if [ -x "$BIN_DIR/gofakes3" ]; then echo "$BIN_DIR/gofakes3"; exit 0; fi
GOBIN="$BIN_DIR" GOFLAGS=-mod=mod nice -n "${NICE:-10}" go install "github.com/johannesboyne/gofakes3/cmd/gofakes3@$VERSION" >&2
echo "$BIN_DIR/gofakes3"
