#!/usr/bin/env bash
# Make sure a Docker engine answers. If none does and we are root on Debian, install Debian's
# docker.io and start dockerd with an address pool of its own; otherwise say what to do.
# Exit 0 when `docker info` works, 2 otherwise.
set -u
log() { echo "[ensure-docker] $*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ -n "${DOCKER_HOST:-}" ]; then
  log "DOCKER_HOST=$DOCKER_HOST is set but no Docker engine answers there; start it or unset DOCKER_HOST."
  exit 2
fi
if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  log "no Docker engine answers on /var/run/docker.sock; start Docker (or set DOCKER_HOST) and retry."
  exit 2
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  log "installing docker.io from Debian"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq docker.io iptables; } >/tmp/kafka-chaos-apt-docker.log 2>&1 \
    || { log "apt-get install docker.io failed; see /tmp/kafka-chaos-apt-docker.log"; exit 2; }
fi
# Our own address pool (RFC 5737/6598-free private range unlikely to clash with the host), loopback-only API.
POOL="${KAFKA_CHAOS_DOCKER_POOL:-10.213.0.0/16}"
BIP="${KAFKA_CHAOS_DOCKER_BIP:-10.212.0.1/24}"
log "starting dockerd (address pool $POOL)"
nohup dockerd --host=unix:///var/run/docker.sock --bip="$BIP" \
  --default-address-pool "base=$POOL,size=24" >/var/log/kafka-chaos-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "Docker engine is up"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; see /var/log/kafka-chaos-dockerd.log"
tail -n 20 /var/log/kafka-chaos-dockerd.log >&2
exit 2
