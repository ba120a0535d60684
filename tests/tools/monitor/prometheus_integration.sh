#!/usr/bin/env bash
# A real Prometheus server scrapes gpscope-monitor, and queries over its HTTP
# API return the expected series; `promtool check metrics` passes on the page.
#
#   prometheus_integration.sh MONITOR_BINARY REPLAY_FILE WORK_DIR
#
# Without a GPU the monitor runs against REPLAYED NVML readings (REPLAY_FILE,
# synthetic values in nvml_probe's record format): this checks the exposition
# and the scrape path end to end, not real hardware readings.
# Exit 0 passed, 1 failed, 77 skipped (prometheus/promtool not installed;
# scripts/setup.sh installs the Debian package `prometheus`).
set -uo pipefail
monitor=$1 replay=$2 work=$3

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "SKIPPED: prometheus/promtool not installed (scripts/setup.sh installs the Debian package 'prometheus')"
  exit 77
fi
echo "NOTE: no GPU here: the monitor replays recorded NVML readings from $replay"

rm -rf "$work"; mkdir -p "$work"
mon_pid="" prom_pid=""
cleanup() {
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  [ -n "$mon_pid" ] && kill "$mon_pid" 2>/dev/null && wait "$mon_pid" 2>/dev/null
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  echo "--- monitor log"; cat "$work/monitor.log" 2>/dev/null
  echo "--- prometheus log (tail)"; tail -n 20 "$work/prometheus.log" 2>/dev/null
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The monitor on an ephemeral loopback port; it logs the port it got.
"$monitor" --replay "$replay" --interval-ms 200 --output "$work/out" --listen 127.0.0.1:0 \
  2>"$work/monitor.log" &
mon_pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/monitor.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "the monitor did not report its port"
sleep 1  # a few samples (GPM values start at the second)

# promtool on the page, as Prometheus text format.
curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "scrape of /metrics failed"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1 ||
  { cat "$work/promtool.txt"; fail "promtool check metrics found problems"; }
[ -s "$work/promtool.txt" ] && { cat "$work/promtool.txt"; fail "promtool check metrics warned"; }
echo "promtool check metrics: OK ($(grep -vc '^#' "$work/metrics.txt") series)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")
[ "$code" = 404 ] || fail "/nope answered $code, not 404"

# Prometheus on loopback, scraping every second.
prom_port=$(free_port)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpscope
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!

# query EXPR -> the JSON answer of /api/v1/query
query() { curl -sf -G "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
# expect EXPR PYTHON_CHECK: retries for up to 60 s until the check holds.
expect() {
  local expr=$1 check=$2 answer=""
  for _ in $(seq 120); do
    answer=$(query "$expr" 2>/dev/null) &&
      python3 -c "import json,sys; r=json.loads(sys.argv[1])['data']['result']; sys.exit(0 if ($check) else 1)" \
        "$answer" 2>/dev/null && { echo "query $expr: OK"; return 0; }
    sleep 0.5
  done
  fail "query '$expr' did not satisfy: $check; last answer: $answer"
}
expect 'up{job="gpscope"}' 'len(r)==1 and r[0]["value"][1]=="1"'
expect 'count(gpscope_gpu_info)' 'len(r)==1 and r[0]["value"][1]=="2"'
expect 'gpscope_gpu_sm_util_percent{gpu="0",uuid="GPU-8c3f0000-0000-4000-8000-000000000000"}' \
  'len(r)==1 and float(r[0]["value"][1]) in (70.0, 85.0) and r[0]["metric"]["job"]=="gpscope"'
expect 'gpscope_gpu_process_memory_bytes{pid="4242"}' \
  'len(r)==1 and r[0]["value"][1]=="75161927680" and r[0]["metric"]["name"]=="python3" and r[0]["metric"]["gpu"]=="0"'
expect 'gpscope_gpu_power_watts' 'len(r)==2'
expect 'gpscope_monitor_info{backend="replay"}' 'len(r)==1'
# Series Prometheus has ingested over time: the process that shares GPU 1
# (steps 10-19 of the replay) was seen.
expect 'max_over_time(gpscope_gpu_process_memory_bytes{pid="4344"}[5m])' \
  'len(r)==1 and r[0]["value"][1]=="16106127360"'
echo "PASSED: Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') scraped gpscope-monitor (replayed NVML readings, no GPU)"
