#!/usr/bin/env bash
# Build rhysd/actionlint (the GitHub Actions workflow linter the tests run on .github/workflows/*.yml and
# docs/examples/ci/github-actions.yml) from the Go module proxy, once: the binary is cached as
# ~/.cache/kafka-chaos/actionlint/actionlint-<version> and reused offline afterwards.
# Prints the binary's path. Usage: scripts/build-actionlint.sh [VERSION]
set -euo pipefail
MODULE=github.com/rhysd/actionlint/cmd/actionlint
VERSION="${1:-${ACTIONLINT_VERSION:-v1.7.12}}"
CACHE="${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/actionlint"
BIN="$CACHE/actionlint-$VERSION"
if [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { echo "build-actionlint: go is not installed" >&2; exit 2; }
mkdir -p "$CACHE"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
start=$(date +%s)
GOBIN="$work" GOFLAGS=-mod=mod nice -n "${NICE:-19}" go install -trimpath "$MODULE@$VERSION" >&2 \
  || { echo "build-actionlint: go install $MODULE@$VERSION failed" >&2; exit 2; }
mv "$work/actionlint" "$BIN.part" && mv "$BIN.part" "$BIN"
echo "build-actionlint: built $BIN in $(( $(date +%s) - start )) s" >&2
echo "$BIN"
