#!/bin/sh
# kafka-chaos image entrypoint: runs a ZooKeeper server, a ZooKeeper-mode Kafka broker, or a KRaft
# node (kraft) from the same jars.
# The harness passes the whole properties file in $KC_CONFIG (newline separated).
set -e
# JIT: C1 only by default (-XX:TieredStopAtLevel=1). Up to eight JVMs share a small CI host, where C2
# compilation was the main CPU load (6 failover scenarios, 2 at a time: 139 s -> 81 s); the harness
# replaces it with $KC_JVM_OPTS when set (empty: the JVM's defaults).
JIT_OPTS="${KC_JVM_OPTS--XX:TieredStopAtLevel=1}"
# DNS: no caching of host names (the JVM keeps them 30 s). A restarted container may get another
# node's old address on the cluster network; with the cache, a controller kept sending a restarted
# broker's LeaderAndIsr to the node that had taken its old address (unclean.out_of_sync_elected).
DNS_OPTS="-Dsun.net.inetaddr.ttl=0 -Dsun.net.inetaddr.negative.ttl=0"
JAVA_BASE_OPTS="-Djava.awt.headless=true -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError $JIT_OPTS $DNS_OPTS -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"
mode="${1:-}"
case "$mode" in
  zookeeper)
    mkdir -p /var/lib/zookeeper /etc/kafka-chaos
    if [ -n "${KC_ZK_MYID:-}" ]; then echo "$KC_ZK_MYID" > /var/lib/zookeeper/myid; fi
    printf '%s\n' "$KC_CONFIG" > /etc/kafka-chaos/zookeeper.properties
    exec java ${KC_HEAP_OPTS:--Xms64m -Xmx256m} $JAVA_BASE_OPTS -Dzookeeper.admin.enableServer=false \
      -cp '/opt/kafka/libs/*' org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/kafka-chaos/zookeeper.properties
    ;;
  broker)
    mkdir -p /var/lib/kafka/data /etc/kafka-chaos
    printf '%s\n' "$KC_CONFIG" > /etc/kafka-chaos/server.properties
    exec java ${KC_HEAP_OPTS:--Xms128m -Xmx512m} $JAVA_BASE_OPTS \
      -cp '/opt/kafka/libs/*' kafka.Kafka /etc/kafka-chaos/server.properties
    ;;
  kraft)
    # KRaft node (broker, controller or both, per process.roles in $KC_CONFIG): format the storage
    # with the cluster id in $KC_CLUSTER_ID (a no-op when already formatted, so a restarted
    # container keeps its data), then run the server.
    if [ -z "${KC_CLUSTER_ID:-}" ]; then
      echo "kraft mode needs KC_CLUSTER_ID (22-character base64 cluster id)" >&2
      exit 2
    fi
    mkdir -p /var/lib/kafka/data /etc/kafka-chaos
    printf '%s\n' "$KC_CONFIG" > /etc/kafka-chaos/server.properties
    # a restarted container is formatted already: skip the tool's JVM start (meta.properties is
    # written by the format into every log dir; the first of log.dirs is checked)
    logdir=$(printf '%s\n' "$KC_CONFIG" | sed -n 's/^log\.dirs=//p' | cut -d, -f1)
    if [ ! -f "${logdir:-/var/lib/kafka/data}/meta.properties" ]; then
      java -Xmx256m -Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties \
        -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
        -t "$KC_CLUSTER_ID" -c /etc/kafka-chaos/server.properties
    fi
    exec java ${KC_HEAP_OPTS:--Xms128m -Xmx512m} $JAVA_BASE_OPTS \
      -cp '/opt/kafka/libs/*' kafka.Kafka /etc/kafka-chaos/server.properties
    ;;
  *)
    exec "$@"
    ;;
esac
