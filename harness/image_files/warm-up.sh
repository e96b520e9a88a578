#!/bin/sh
# Build-time warm-up of an image that can run KRaft (Kafka 3.3+); run once by `docker build`.
#
# 1. Formats a storage template with Kafka's own tool: /opt/kafka-chaos/kraft-template/ keeps the
#    meta.properties and bootstrap.checkpoint it wrote. The entrypoint formats a node's empty log dir
#    from it (its cluster id, node id and a fresh directory id) instead of starting the tool's JVM at
#    every cluster start.
# 2. Starts one combined KRaft node and stops it cleanly with -XX:ArchiveClassesAtExit: the classes
#    Kafka loaded while starting go into a class-data-sharing archive, /opt/kafka-chaos/kafka.jsa,
#    which every JVM of the image maps instead of loading and verifying those classes again.
#
# Measured on the 4.1.2 image, one node, idle 2-core host: storage format 1.55 s -> 0 (template),
# node start to "Kafka Server started" 5.3 s -> 3.7 s (archive). Either step failing leaves an image
# that works as before (the entrypoint uses what exists); the build log says which step failed.
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

if java -Xmx256m $LOG4J -cp "$CP" kafka.tools.StorageTool format -t AAAAAAAAAAAAAAAAAAAAAA \
     -c "$WORK/server.properties" > "$WORK/format.out" 2>&1 \
   && [ -f "$WORK/data/meta.properties" ] && [ -f "$WORK/data/bootstrap.checkpoint" ]; then
  mkdir -p "$OUT/kraft-template"
  cp "$WORK/data/meta.properties" "$WORK/data/bootstrap.checkpoint" "$OUT/kraft-template/"
  chmod 0444 "$OUT/kraft-template/"*
  echo "[warm-up] storage template: $(tr '\n' ' ' < "$OUT/kraft-template/meta.properties")"
else
  echo "[warm-up] storage format failed; nodes will run the storage tool at their first start:"
  tail -5 "$WORK/format.out"
  rm -rf "$WORK"
  exit 0
fi

# the server JVM with the entrypoint's options (harness/image_files/entrypoint.sh), dumping at exit
java -Xms128m -Xmx512m -Djava.awt.headless=true -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
  -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit="$OUT/kafka.jsa" \
  -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties \
  -cp "$CP" kafka.Kafka "$WORK/server.properties" > "$WORK/server.out" 2>&1 &
pid=$!
i=0
while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null && ! grep -q "Kafka Server started" "$WORK/server.out"; do
  sleep 0.2; i=$((i + 1))
done
if grep -q "Kafka Server started" "$WORK/server.out"; then
  kill -TERM $pid
  wait $pid
  if [ -s "$OUT/kafka.jsa" ]; then
    chmod 0444 "$OUT/kafka.jsa"
    echo "[warm-up] class-data-sharing archive: $(du -h "$OUT/kafka.jsa" | cut -f1)"
  else
    echo "[warm-up] the JVM wrote no class-data-sharing archive; JVMs start without one"
  fi
else
  kill -KILL $pid 2>/dev/null
  wait $pid 2>/dev/null
  rm -f "$OUT/kafka.jsa"
  echo "[warm-up] the warm-up node did not start in 120 s; JVMs start without a class-data-sharing archive:"
  tail -5 "$WORK/server.out"
fi
rm -rf "$WORK"
exit 0
