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
# Class-data sharing: the archive of the classes Kafka loads at start, written when the image was built
# (warm-up.sh; absent before 3.3 or when that step failed): every JVM maps it instead of loading and
# verifying those classes (4.1.2 node start 5.3 s -> 3.7 s idle).
CDS_OPTS=""
if [ -r /opt/kafka-chaos/kafka.jsa ]; then CDS_OPTS="-XX:SharedArchiveFile=/opt/kafka-chaos/kafka.jsa"; fi
JAVA_BASE_OPTS="-Djava.awt.headless=true -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError $JIT_OPTS $CDS_OPTS $DNS_OPTS -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"
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
    dirs=$(printf '%s\n' "$KC_CONFIG" | sed -n 's/^log\.dirs=//p' | tail -1)
    logdir=$(printf '%s' "$dirs" | cut -d, -f1)
    logdir="${logdir:-/var/lib/kafka/data}"
    tpl=/opt/kafka-chaos/kraft-template
    zero=__cluster_metadata-0/00000000000000000000-0000000000.checkpoint
    if [ -f "$logdir/meta.properties" ]; then
      :
    elif [ -f "$tpl/meta.properties" ] && { [ -f "$tpl/bootstrap.checkpoint" ] || [ -f "$tpl/$zero" ]; } \
         && ! printf '%s\n' "$KC_CONFIG" | grep -q -e '^metadata\.log\.dir=' -e '^unstable\.' -e '^log\.dir=' \
         && printf '%s\n' "$KC_CONFIG" | grep -q '^controller\.quorum\.voters=' \
         && [ -n "$dirs" ] && [ "${dirs#*,}" = "$dirs" ]; then
      # what the storage tool writes for one log dir and a static quorum (controller.quorum.voters,
      # no unstable features; anything else runs the tool below) (warm-up.sh ran it when the
      # image was built): the bootstrap records as they are, meta.properties with this node's ids. A
      # directory id must not start with '-' (MetaPropertiesEnsemble.generateValidDirectoryId).
      # The records are in bootstrap.checkpoint, on every node, until 4.3; from 4.4 in the metadata
      # log's zero checkpoint, which the tool writes for a node with the controller role only
      # (KAFKA-19648; warm-up.sh).
      node_id=$(printf '%s\n' "$KC_CONFIG" | sed -n 's/^node\.id=//p' | head -1)
      dir_id=-
      while [ "${dir_id#-}" != "$dir_id" ]; do
        dir_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
      done
      mkdir -p "$logdir"
      if [ -f "$tpl/bootstrap.checkpoint" ]; then
        cp "$tpl/bootstrap.checkpoint" "$logdir/bootstrap.checkpoint"
        chmod 0644 "$logdir/bootstrap.checkpoint"
      fi
      if [ -f "$tpl/$zero" ] && printf '%s\n' "$KC_CONFIG" | grep -q '^process\.roles=.*controller'; then
        mkdir -p "$logdir/${zero%/*}"
        cp "$tpl/$zero" "$logdir/$zero"
        chmod 0644 "$logdir/$zero"
      fi
      sed -e "s/^cluster\.id=.*/cluster.id=$KC_CLUSTER_ID/" -e "s/^node\.id=.*/node.id=$node_id/" \
          -e "s/^directory\.id=.*/directory.id=$dir_id/" "$tpl/meta.properties" > "$logdir/meta.properties.tmp"
      mv "$logdir/meta.properties.tmp" "$logdir/meta.properties"
      echo "Formatting metadata directory $logdir from the image's storage template (cluster.id=$KC_CLUSTER_ID node.id=$node_id)."
    else
      java -Xmx256m $CDS_OPTS -XX:TieredStopAtLevel=1 -Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties \
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
