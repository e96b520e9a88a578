#!/bin/sh
# The body of /etc/init.d/kafka and /etc/init.d/zookeeper on an SSH test host (kafka-chaos/sshhost
# images, harness/host_image.py): sourced by them after they set NAME, MAIN_CLASS, CONFIG, PIDFILE,
# LOG, HEAP_OPTS and HOME_DIR. Start, stop and status of one JVM as the user `kafka`, the way a
# packaged service does it: start-stop-daemon with a pidfile, stdout and stderr appended to LOG.
#
#   start    start the JVM unless it runs; 1 when there is no readable CONFIG or the JVM died at once
#   stop     SIGTERM, then SIGKILL after STOP_TIMEOUT_S (default 60) seconds; 0 when it was not running
#   restart  stop, then start
#   status   0 running (pid N), 1 not running but a stale pidfile, 3 not running (LSB codes)
set -u
RUN_USER=kafka
[ -r /etc/default/kafka ] && . /etc/default/kafka
JVM_OPTS="${KAFKA_JVM_OPTS:-}"
if [ -r /opt/kafka-chaos/kafka.jsa ]; then JVM_OPTS="$JVM_OPTS -XX:SharedArchiveFile=/opt/kafka-chaos/kafka.jsa"; fi
[ -n "${LOG4J_COMPATIBILITY:-}" ] && export LOG4J_COMPATIBILITY

now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# is_running: the pidfile names a live process running MAIN_CLASS (a reused pid or a zombie is not it)
is_running() {
  pid=""
  [ -r "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null)
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- " $MAIN_CLASS "
}

do_start() {
  if is_running; then echo "$NAME is already running (pid $pid)"; return 0; fi
  if [ ! -r "$CONFIG" ]; then echo "$NAME: cannot start: no readable configuration $CONFIG" >&2; return 1; fi
  rundir=$(dirname "$PIDFILE"); logdir=$(dirname "$LOG")
  mkdir -p "$rundir" "$logdir" && chown "$RUN_USER:$RUN_USER" "$rundir" "$logdir"
  rm -f "$PIDFILE"
  # one marker line per start: what a reader of the log looks for to tell this start from the earlier ones
  echo "[kafka-chaos-service] $NAME starting at $(now)" >> "$LOG" && chown "$RUN_USER:$RUN_USER" "$LOG"
  # shellcheck disable=SC2086  # the option strings are word-split on purpose
  start-stop-daemon --start --quiet --background --make-pidfile --pidfile "$PIDFILE" --user "$RUN_USER" \
    --chuid "$RUN_USER" --chdir "$HOME_DIR" --startas /usr/local/lib/kafka-chaos/run-jvm -- "$LOG" \
    java $HEAP_OPTS $JVM_OPTS -cp '/opt/kafka/libs/*' "$MAIN_CLASS" "$CONFIG" || return 1
  # a JVM that cannot start at all (no java, a bad option) is gone within half a second
  sleep 0.5
  if ! is_running; then
    echo "$NAME: the JVM exited at once; the end of $LOG:" >&2
    tail -n 5 "$LOG" >&2
    return 1
  fi
  echo "$NAME started (pid $pid)"
}

do_stop() {
  if ! is_running; then rm -f "$PIDFILE"; echo "$NAME is not running"; return 0; fi
  start-stop-daemon --stop --quiet --pidfile "$PIDFILE" --user "$RUN_USER" \
    --retry "TERM/${STOP_TIMEOUT_S:-60}/KILL/5"
  rc=$?
  rm -f "$PIDFILE"
  [ $rc -le 1 ] && echo "$NAME stopped" && return 0
  echo "$NAME: could not stop pid $pid" >&2
  return 1
}

do_status() {
  if is_running; then echo "$NAME is running (pid $pid)"; return 0; fi
  if [ -e "$PIDFILE" ]; then echo "$NAME is not running (stale pidfile $PIDFILE)"; return 1; fi
  echo "$NAME is not running"
  return 3
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  restart|force-reload) do_stop && do_start ;;
  status) do_status ;;
  *) echo "usage: /etc/init.d/$NAME {start|stop|restart|status}" >&2; exit 2 ;;
esac
