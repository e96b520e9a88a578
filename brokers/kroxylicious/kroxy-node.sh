#!/bin/sh
# One node of "Kroxylicious in front of Apache Kafka" (docs/examples/kroxylicious.toml): a KRaft
# node (broker + controller) of Apache Kafka, reachable only on the cluster network, and a Kroxylicious
# proxy in front of it that is the node's only published listener. Faults on the node's container hit
# both (the proxy is a child of the Kafka JVM's container: when Kafka exits, the container stops).
#
# Variables (set by the distribution file's [env] templates):
#   KC_NODE_ID      this node's id ({node_id});  KC_NODE_IDS  every node id ({node_ids})
#   KC_CLUSTER_ID   the KRaft cluster id ({cluster_id})
#   KC_PROXY_PORT   the proxy's port for this node ({port}); the harness publishes it on the host
#   KC_ADVERTISED_HOST  the host the proxy advertises every node at ({advertised_host})
#   KAFKA_*         broker properties (the file's config_env_prefix, apache/kafka naming:
#                   KAFKA_MIN_INSYNC_REPLICAS=2 -> min.insync.replicas=2; '__' -> '_', '___' -> '-')
# The proxy advertises node N at KC_ADVERTISED_HOST:(first port + N's index among the sorted ids)
# (Kroxylicious's portIdentifiesNode): the distribution file asks the harness for contiguous ports
# in node id order (ports = "contiguous").
set -eu
: "${KC_NODE_ID:?}" "${KC_NODE_IDS:?}" "${KC_CLUSTER_ID:?}" "${KC_PROXY_PORT:?}"
ADV="${KC_ADVERTISED_HOST:-127.0.0.1}"
ids=$(printf '%s\n' "$KC_NODE_IDS" | tr ',' '\n' | sort -n)
voters=""
ranges=""
i=0
idx=-1
for id in $ids; do
  voters="${voters:+$voters,}$id@broker$id:9094"
  ranges="$ranges
            - name: node$id
              start: $id
              end: $id"
  if [ "$id" = "$KC_NODE_ID" ]; then idx=$i; fi
  i=$((i + 1))
done
if [ "$idx" -lt 0 ]; then echo "KC_NODE_ID $KC_NODE_ID is not in KC_NODE_IDS $KC_NODE_IDS" >&2; exit 2; fi
start=$((KC_PROXY_PORT - idx))

props=$(env | grep '^KAFKA_' | grep -v -e '^KAFKA_HEAP_OPTS=' -e '^KAFKA_OPTS=' | while IFS='=' read -r k v; do
  p=$(printf '%s' "${k#KAFKA_}" | tr 'A-Z' 'a-z' | sed -e 's/___/-/g' -e 's/__/#/g' -e 's/_/./g' -e 's/#/_/g')
  printf '%s=%s\n' "$p" "$v"
done)
KC_CONFIG="node.id=$KC_NODE_ID
process.roles=broker,controller
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=INTERNAL://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094
advertised.listeners=INTERNAL://broker$KC_NODE_ID:9093
listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
$props"
export KC_CONFIG KC_CLUSTER_ID

mkdir -p /etc/kafka-chaos
cat > /etc/kafka-chaos/kroxylicious.yaml <<YAML
virtualClusters:
  - name: kafka-chaos
    targetCluster:
      bootstrapServers: broker$KC_NODE_ID:9093
    gateways:
      - name: host
        portIdentifiesNode:
          bootstrapAddress: 0.0.0.0:9192
          advertisedBrokerAddressPattern: $ADV
          nodeStartPort: $start
          nodeIdRanges:$ranges
YAML
echo "kroxylicious node $KC_NODE_ID: proxy ports from $start for node ids $(echo $ids), this node on $KC_PROXY_PORT -> broker$KC_NODE_ID:9093"
java ${KC_PROXY_HEAP_OPTS:--Xms32m -Xmx160m} -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${KC_PROXY_LOG_LEVEL:-warn}" \
  -cp '/opt/kroxylicious/kroxylicious-broker.jar:/opt/kroxylicious/lib/*' kafkachaos.KroxyliciousBroker \
  /etc/kafka-chaos/kroxylicious.yaml &
exec /opt/kafka-chaos/entrypoint.sh kraft
