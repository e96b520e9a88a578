#!/usr/bin/env bash
# One entry point for people and CI.
#   ./run.sh setup   install what is missing (Debian packages, Docker engine, Python deps) and build the default image
#                    (`./run.sh setup demo`: only what the demo needs)
#   ./run.sh demo    setup, then a local cluster runs the smoke chaos suite and a report is written to ./report
#   ./run.sh test    setup, then the whole test suite (unit, integration on real clusters, smoke scenarios)
# Extra arguments after `test` go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
export TESTCONTAINERS_RYUK_DISABLED=true
PY="${PYTHON:-python3}"
log() { echo "[run.sh] $*" >&2; }
STEP_START=$SECONDS
pip_pid="" prep_pid="" pip_log="$(mktemp /tmp/kafka-chaos-pip.XXXXXX)" prep_log="$(mktemp /tmp/kafka-chaos-prep.XXXXXX)"
# a setup that stops early leaves no pip, mmdebstrap or Maven running and no log behind
# the background steps run in process groups of their own (set -m while starting them), so stopping one stops
# what it started too (pip's wheel builds, mmdebstrap, Maven)
stop_bg() {   # (set -e holds in a trap: every command here may fail harmlessly)
  local p
  for p in "$@"; do
    if [ -n "$p" ]; then kill -TERM -- "-$p" 2>/dev/null || true; fi
  done
}
trap 'rm -f "$pip_log" "$prep_log"; stop_bg "$pip_pid" "$prep_pid"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM   # so the EXIT trap runs on a signal too
took() { log "$1: $((SECONDS - STEP_START)) s"; STEP_START=$SECONDS; }   # each step prints its own time

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages: ${missing[*]}; install them (as root) and retry"; exit 2
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/kafka-chaos-apt.log 2>&1 \
    || { log "apt-get install failed; see /tmp/kafka-chaos-apt.log"; tail -n 20 /tmp/kafka-chaos-apt.log >&2; exit 2; }
}

# python_deps MODE IMPORTS PIP-ARGS...: pip install PIP-ARGS unless IMPORTS already import and nothing changed
# since; prints its own time ("Python dependencies: N s")
python_deps() {
  local mode="$1" imports="$2" t0=$SECONDS; shift 2
  if ! "$PY" -c "$imports" 2>/dev/null || [ pyproject.toml -nt ".setup-done-$mode" ] \
      || [ constraints/test.txt -nt ".setup-done-$mode" ]; then
    log "installing Python dependencies (beside the Debian packages and the Docker engine)"
    "$PY" -m pip install -q --disable-pip-version-check "$@" || true
    "$PY" -c "$imports" || { log "Python dependencies did not install"; return 2; }
    if [ "$mode" = test ]; then   # the pinned versions, not an older one pip kept after a failed download
      "$PY" -c 'import importlib.metadata as m, sys
want = dict(l.split("#")[0].strip().split("==") for l in open("constraints/test.txt") if "==" in l.split("#")[0])
bad = [f"{k} {m.version(k)} (constraints/test.txt pins {v})" for k, v in want.items() if m.version(k) != v]
sys.exit("[run.sh] installed " + ", ".join(bad) if bad else 0)' || return 2
    fi
    touch ".setup-done-$mode"
  fi
  log "Python dependencies: $((SECONDS - t0)) s"
}

# setup [demo|test]: the demo (the main job) needs the Docker engine, the image build's tools, Java for
# the Spark report and the package; the tests also need the test extras and chromium (the report
# screenshot tests)
setup() {
  local mode="${1:-test}"
  case "$mode" in test|demo) ;; *) log "setup: unknown mode '$mode' (demo or test)"; exit 2 ;; esac
  local packages=(docker.io iptables mmdebstrap maven openjdk-17-jre-headless) extras=".[test]" pins=()
  local imports="import harness, suites, confluent_kafka, kazoo, testcontainers, pyspark"
  if [ "$mode" = test ]; then
    packages+=(chromium); imports+=", hypothesis, importlinter, yaml"
    pins=(-c constraints/test.txt)   # pytest 9 and the newest pyspark in the bounds: what CI tests
  else
    extras=".[report]"   # the demo ends with the Spark report
  fi
  # the Python dependencies install while the Debian packages and the Docker engine come (neither needs the
  # other); its time is its own, printed when it is waited for
  set -m; python_deps "$mode" "$imports" "${pins[@]}" -e "$extras" >"$pip_log" 2>&1 & pip_pid=$!; set +m
  if [ -f /etc/debian_version ]; then
    apt_install "${packages[@]}"
    took "Debian packages"
  fi
  scripts/ensure-docker.sh
  took "Docker engine"
  # the broker image (the Debian base image and Kafka's jars at the same time, then docker build) needs only
  # the standard library: it is built while pip still installs (harness/images_prepare.py; cached: seconds)
  set -m; "$PY" -m harness.images_prepare >"$prep_log" 2>&1 & prep_pid=$!; set +m
  local pip_rc=0 prep_rc=0
  wait "$pip_pid" || pip_rc=$?
  pip_pid=""
  grep -v "Running pip as the 'root' user" "$pip_log" >&2 || true
  [ "$pip_rc" -eq 0 ] || exit 2
  wait "$prep_pid" || prep_rc=$?
  prep_pid=""
  cat "$prep_log" >&2
  [ "$prep_rc" -eq 0 ] || exit 2
  took "Python dependencies and the broker image (each timed above)"
  log "building the default broker image (cached after the first time)"
  "$PY" -m harness.cli images build
  took "broker image"
}

cmd="${1:-}"; shift || true
case "$cmd" in
  setup) setup "${1:-test}" ;;
  demo)
    setup demo
    runs="${KAFKA_CHAOS_RUNS_DIR:-runs}"
    set +e
    # the three smoke scenarios at once, each on its own cluster: 2026-11-29, idle 2-core host, 3/3 PASS in
    # 52 s and 48 s (two at a time: 61 s)
    "$PY" -m harness.cli run smoke --parallel 3 --runs-dir "$runs"; run_rc=$?
    took "smoke scenarios"
    "$PY" -m harness.cli report "$runs" -o report; report_rc=$?
    took "report"
    set -e
    log "run records in ./$runs, report in ./report/report.html (smoke exit $run_rc, report gate exit $report_rc); $SECONDS s in all"
    [ $run_rc -eq 0 ] && [ $report_rc -eq 0 ]
    ;;
  test)
    setup test
    # ZooKeeper jars of the ZooKeeper-mode default (the newest 3.9.x; 4.x has none), for the observer's
    # loopback ZooKeeper tests
    if [ -z "${KAFKA_CHAOS_ZK_CLASSPATH:-}" ]; then
      KAFKA_CHAOS_ZK_CLASSPATH="$("$PY" -c 'from harness import images; print(images.ensure_jars(images.resolve_version(None, images.ZK)))')/*"
      export KAFKA_CHAOS_ZK_CLASSPATH
    fi
    # default selection: unit + integration tests and the smoke scenarios; the full conformance /
    # chaos / nightly suites run with e.g. `./run.sh test -m conformance`
    # on two xdist workers: the cluster tests one at a time on one, the Spark-only tests on the other, the pure
    # tests on both (groups in conftest.py; README "Tests")
    if [ $# -eq 0 ]; then set -- -m "(smoke or not (conformance or chaos or nightly)) and not fleet and not s3 and not wheel and not long" \
      -n 2 --dist loadgroup --durations=30; fi
    set +e
    "$PY" -m pytest -p no:cacheprovider "$@"; rc=$?
    set -e
    if [ $rc -eq 5 ]; then log "pytest collected no tests: that is a failure"; exit 1; fi
    exit $rc
    ;;
  *)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
