#!/bin/sh
# Build kafka-chaos/kfake:latest offline: franz-go's kfake (Go module proxy) as a broker binary in an
# image FROM the local base image (docs/broker-contract.md). Same as `kafka-chaos images build-kfake`.
set -e
cd "$(dirname "$0")/.."
exec python -m harness.cli images build-kfake "$@"
