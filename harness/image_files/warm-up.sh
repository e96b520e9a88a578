#!/bin/sh
# Build-time warm-up of an image that can run KRaft (Kafka 3.3+); run once by `docker build`.
#
# 1. Formats a storage template with Kafka's own tool: /opt/kafka-chaos/kraft-template/ keeps the
#    meta.properties and the bootstrap checkpoint it wrote (bootstrap.checkpoint until 4.3, the metadata
#    log's zero checkpoint from 4.4). The entrypoint formats a node's empty log dir
#    from it (its cluster id, node id and a fresh directory id) instead of starting the tool's JVM at
#    every cluster start.
# 2. Starts one combined KRaft node and, when the image has ZooKeeper (before 4.0), a ZooKeeper server
#    and a ZooKeeper-mode broker, each listing the classes it loaded while starting
#    (-XX:DumpLoadedClassList); the lists together become one class-data-sharing archive,
#    /opt/kafka-chaos/kafka.jsa (-Xshare:dump), which every JVM of the image maps instead of loading
#    and verifying those classes again.
#
# Measured on the 4.1.2 image, one node, idle 2-core host: storage format 1.55 s -> 0 (template),
# node start to "Kafka Server started" 5.3 s -> 3.7 s (archive). On 3.9.2 a ZooKeeper-mode broker's
# start took 1.54 CPU-s without an archive, 1.02 with the earlier archive of the KRaft node's classes
# alone and 0.81 with this one; a ZooKeeper server 0.34 -> 0.27 (3 starts each). Either step failing
# leaves an image that works as before (the entrypoint uses what exists); the build log says which
# step failed.
set -u
OUT=/opt/kafka-chaos
WORK=$(mktemp -d /tmp/kc-warm-up.XXXXXX)
CP='/opt/kafka/libs/*'
LOG4J="-Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties"
cat > "$WORK/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:19093
listeners=PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093
advertised.listeners=PLAINTEXT://localhost:19092
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$WORK/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF

# The bootstrap records are where the tool puts them: bootstrap.checkpoint in the log dir until 4.3,
# the zero checkpoint of the metadata log (__cluster_metadata-0/00000000000000000000-0000000000.checkpoint)
# from 4.4 (KAFKA-19648, apache/kafka#20707: the Formatter appends them to the KRaft bootstrap snapshot,
# written for controllers only). The template keeps whichever the tool wrote, under the same name.
ZERO=__cluster_metadata-0/00000000000000000000-0000000000.checkpoint
if java -Xmx256m $LOG4J -cp "$CP" kafka.tools.StorageTool format -t AAAAAAAAAAAAAAAAAAAAAA \
     -c "$WORK/server.properties" > "$WORK/format.out" 2>&1 && [ -f "$WORK/data/meta.properties" ]; then
  if [ -f "$WORK/data/bootstrap.checkpoint" ] || [ -f "$WORK/data/$ZERO" ]; then
    for f in meta.properties bootstrap.checkpoint "$ZERO"; do
      if [ -f "$WORK/data/$f" ]; then
        mkdir -p "$(dirname "$OUT/kraft-template/$f")"
        cp "$WORK/data/$f" "$OUT/kraft-template/$f"
      fi
    done
    find "$OUT/kraft-template" -type f -exec chmod 0444 {} +
    echo "[warm-up] storage template: $(tr '\n' ' ' < "$OUT/kraft-template/meta.properties")$(cd "$OUT/kraft-template" && find . -name '*.checkpoint' | tr '\n' ' ')"
  else
    echo "[warm-up] the storage tool wrote no bootstrap file this script knows; nodes will run the tool at their first start:"
    (cd "$WORK/data" && find . -type f) | head -5
  fi
else
  echo "[warm-up] storage format failed; nodes will run the storage tool at their first start:"
  tail -5 "$WORK/format.out"
  rm -rf "$WORK"
  exit 0
fi

JVM="-Djava.awt.headless=true -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1"
LOG4J_SERVER="-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"

# wait_for PID FILE LINE: until FILE has LINE (at most 120 s, while PID lives); true when it has
wait_for() {
  i=0
  while [ $i -lt 600 ] && kill -0 "$1" 2>/dev/null && ! grep -q "$3" "$2"; do
    sleep 0.2; i=$((i + 1))
  done
  grep -q "$3" "$2"
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# the JVMs with the entrypoint's options (harness/image_files/entrypoint.sh), each listing its classes
java -Xms128m -Xmx512m $JVM -XX:DumpLoadedClassList="$WORK/kraft.classlist" $LOG4J_SERVER \
  -cp "$CP" kafka.Kafka "$WORK/server.properties" > "$WORK/server.out" 2>&1 &
pid=$!
if wait_for $pid "$WORK/server.out" "Kafka Server started"; then stop $pid; else
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  echo "[warm-up] the warm-up node did not start in 120 s; JVMs start without a class-data-sharing archive:"
  tail -5 "$WORK/server.out"
  rm -rf "$WORK"
  exit 0
fi
lists="$WORK/kraft.classlist"
if ls /opt/kafka/libs/zookeeper-[0-9]*.jar > /dev/null 2>&1; then
  mkdir -p "$WORK/zk" "$WORK/zk-broker"
  printf 'tickTime=500\ndataDir=%s/zk\nclientPort=12181\nadmin.enableServer=false\n' "$WORK" > "$WORK/zk.properties"
  printf 'broker.id=1\nzookeeper.connect=localhost:12181\nlisteners=PLAINTEXT://localhost:19192\nlog.dirs=%s/zk-broker\noffsets.topic.replication.factor=1\n' \
    "$WORK" > "$WORK/zk-broker.properties"
  java -Xms64m -Xmx256m $JVM -XX:DumpLoadedClassList="$WORK/zookeeper.classlist" $LOG4J_SERVER \
    -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$WORK/zk.properties" > "$WORK/zk.out" 2>&1 &
  zpid=$!
  java -Xms128m -Xmx512m $JVM -XX:DumpLoadedClassList="$WORK/zk-broker.classlist" $LOG4J_SERVER \
    -cp "$CP" kafka.Kafka "$WORK/zk-broker.properties" > "$WORK/zk-broker.out" 2>&1 &
  bpid=$!
  if wait_for $bpid "$WORK/zk-broker.out" "\] started"; then
    stop $bpid; stop $zpid
    lists="$lists $WORK/zookeeper.classlist $WORK/zk-broker.classlist"
  else
    kill -KILL $bpid $zpid 2>/dev/null; wait $bpid $zpid 2>/dev/null
    echo "[warm-up] the ZooKeeper-mode warm-up broker did not start in 120 s; the archive has the KRaft node's classes only:"
    tail -5 "$WORK/zk-broker.out"
  fi
fi
cat $lists > "$WORK/all.classlist"
if java -Xshare:dump -XX:SharedClassListFile="$WORK/all.classlist" -XX:SharedArchiveFile="$OUT/kafka.jsa" \
     -XX:+UseG1GC -cp "$CP" > "$WORK/dump.out" 2>&1 && [ -s "$OUT/kafka.jsa" ]; then
  chmod 0444 "$OUT/kafka.jsa"
  echo "[warm-up] class-data-sharing archive: $(du -h "$OUT/kafka.jsa" | cut -f1), classes of $(echo $lists | wc -w) JVM(s)"
else
  rm -f "$OUT/kafka.jsa"
  echo "[warm-up] the class-data-sharing dump failed; JVMs start without an archive:"
  tail -5 "$WORK/dump.out"
fi
rm -rf "$WORK"
exit 0
