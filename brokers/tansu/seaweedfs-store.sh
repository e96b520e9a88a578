#!/bin/sh
# SeaweedFS as the S3 store of a distribution file's [[service]] (docs/examples/tansu.toml): one
# `weed server` (master, volume, filer, S3 gateway) in the container, its S3 port on every interface of
# the cluster network, the others on the container's loopback. Creates the buckets in $KC_S3_BUCKETS
# (comma separated) and then logs "seaweedfs-store ready" (the service's ready_log_line), also after a
# restart of the container, whose data (/data) is kept. With KC_S3_ACCESS_KEY / KC_S3_SECRET_KEY,
# requests must be signed with that key (as against any S3 store).
set -eu
port="${KC_S3_PORT:-8333}"
buckets="${KC_S3_BUCKETS:-tansu}"
data="${KC_S3_DATA:-/data}"
mkdir -p "$data"
auth=""
if [ -n "${KC_S3_ACCESS_KEY:-}" ]; then
  printf '{"identities":[{"name":"kafka-chaos","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}\n' \
    "$KC_S3_ACCESS_KEY" "${KC_S3_SECRET_KEY:?KC_S3_SECRET_KEY is needed with KC_S3_ACCESS_KEY}" > "$data/s3.json"
  auth="-s3.config=$data/s3.json"
fi
# shellcheck disable=SC2086
weed server -ip=127.0.0.1 -ip.bind=0.0.0.0 -dir="$data" -master.telemetry=false -master.volumeSizeLimitMB=64 \
  -volume.max=100 -volume.preStopSeconds=0 -filer -s3 -s3.port="$port" -s3.port.iceberg=0 -s3.port.lance=0 \
  -metricsPort=0 $auth &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
until nc -z 127.0.0.1 "$port" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { echo "seaweedfs-store: weed server exited" >&2; exit 1; }
  sleep 0.5
done
for b in $(echo "$buckets" | tr ',' ' '); do
  tries=0
  until echo "s3.bucket.list" | weed shell -master=127.0.0.1:9333 2>/dev/null | grep -q "^  $b[[:space:]]"; do
    echo "s3.bucket.create -name $b" | weed shell -master=127.0.0.1:9333 >/dev/null 2>&1 || true
    tries=$((tries + 1))
    [ "$tries" -lt 120 ] || { echo "seaweedfs-store: could not create bucket $b" >&2; exit 1; }
    sleep 0.5
  done
done
echo "seaweedfs-store ready: S3 on port $port, buckets $buckets"
wait "$pid"
