#!/usr/bin/env python3
"""The Grafana dashboard (packaging/grafana/gpscope-monitor.json) against the
monitor's real exposition and a real Prometheus.

  dashboard_test.py MONITOR_BINARY DASHBOARD_JSON REPLAY_FILE WORK_DIR [TRACE...]

1. The dashboard's shape: an importable dashboard (title, uid, schemaVersion),
   one Prometheus datasource variable that every panel and target uses, unique
   panel ids, every non-row panel with targets, every target an expr.
2. Every metric name in every PromQL expression (panels and template
   variables) is one that gpscope-monitor's /metrics page serves.
3. A real Prometheus scrapes the monitor, and every expression, with the
   template variables set to 'all', runs without error and returns series.

The monitor replays REPLAY_FILE (h200x2.replay: synthetic H200 readings, no
GPU here), with GPM's FP16/FP32/FP64 pipe and PCIe/NVLink throughput readings
added to each step (that file has none: its GPUs report no NVLink peers), so
that every series the dashboard shows is on the page. The TRACE files (recorded
traces) are copied into a directory the monitor follows (--traces): their
runs' windows, closed by their end chunks, give the gpscope_window_* series of
the "Capture windows" row.
Exit 0 passed, 1 failed, 77 skipped (prometheus not installed).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

monitor, dashboard_path, replay_src, work = sys.argv[1:5]
traces = sys.argv[5:]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAILED: " + msg)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

# ---- 1. shape
dash = json.load(open(dashboard_path))
for key in ("title", "uid", "schemaVersion", "panels", "templating"):
    if key not in dash:
        fail(f"the dashboard has no '{key}'")
variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
if variables.get("datasource", {}).get("type") != "datasource" or \
        variables["datasource"].get("query") != "prometheus":
    fail("no Prometheus datasource variable named 'datasource'")
ds = {"type": "prometheus", "uid": "${datasource}"}
ids = [p["id"] for p in dash["panels"]]
if len(ids) != len(set(ids)):
    fail(f"panel ids repeat: {ids}")
exprs = []  # (where, expr)
for p in dash["panels"]:
    if p["type"] == "row":
        continue
    if p.get("datasource") != ds:
        fail(f"panel '{p['title']}' does not use the datasource variable")
    if not p.get("targets"):
        fail(f"panel '{p['title']}' has no targets")
    for t in p.get("targets", []):
        if t.get("datasource") != ds or not t.get("expr") or not t.get("refId"):
            fail(f"panel '{p['title']}' target {t.get('refId')}: needs refId, expr and the datasource variable")
        exprs.append((f"panel '{p['title']}' {t.get('refId')}", t.get("expr", "")))
for name, v in variables.items():
    if v["type"] == "query":
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        if not m:
            fail(f"variable {name}: '{q}' is not label_values(SELECTOR, LABEL)")
            continue
        exprs.append((f"variable {name}", m.group(1)))
print(f"ok: the dashboard's shape: {len(ids)} panels, {len(exprs)} expressions, variables {sorted(variables)}")

# ---- the monitor, on the replay with GPM pipes and link throughput added
replay = os.path.join(work, "full-gpm.replay")
with open(replay_src) as src, open(replay, "w") as out:
    for line in src:
        if line.startswith("unsupported ") and "nvlink" in line:
            continue  # this copy's GPUs have NVLink peers
        out.write(line)
        f = line.split()
        if len(f) == 3 and f[0] == "gpm.dram_bw_util":  # after each GPU's GPM block
            gpu, sm = f[1], float(f[2])
            for metric, value in (("gpm.fp16_util", sm * 0.6), ("gpm.fp32_util", sm * 0.2),
                                  ("gpm.fp64_util", 0), ("gpm.pcie_tx_bytes_per_s", 1.5e9 * sm / 100),
                                  ("gpm.pcie_rx_bytes_per_s", 6.0e9 * sm / 100),
                                  ("gpm.nvlink_tx_bytes_per_s", 1.2e11 * sm / 100),
                                  ("gpm.nvlink_rx_bytes_per_s", 1.2e11 * sm / 100)):
                out.write(f"{metric} {gpu} {value:g}\n")
traces_dir = os.path.join(work, "traces")
os.makedirs(traces_dir)
for t in traces:
    shutil.copy(t, traces_dir)
log = open(os.path.join(work, "monitor.log"), "w+")
mon = subprocess.Popen([monitor, "--replay", replay, "--interval-ms", "200", "--output",
                        os.path.join(work, "out"), "--listen", "127.0.0.1:0",
                        "--traces", traces_dir], stderr=log)
prom = None
try:
    port = None
    for _ in range(100):
        log.seek(0)
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", log.read())
        if m:
            port = m.group(1)
            break
        time.sleep(0.1)
    if port is None:
        log.seek(0)
        sys.exit(f"FAILED: the monitor did not report its port: {log.read()}")
    time.sleep(1)  # GPM values start at the second sample
    if traces:  # the window thread summarizes the traces' closed windows on its first polls
        for _ in range(100):
            if "\ngpscope_window_top_finding{" in get(f"http://127.0.0.1:{port}/metrics"):
                break
            time.sleep(0.1)

    # ---- 2. every metric name on the page
    page = get(f"http://127.0.0.1:{port}/metrics")
    served = set(re.findall(r"^# TYPE (\w+) ", page, re.M))
    used = {}
    for where, e in exprs:
        names = set(re.findall(r"\bgpscope_[a-z0-9_]+\b", e))
        if not names:
            fail(f"{where}: '{e}' names no gpscope metric")
        for n in names:
            used.setdefault(n, where)
    missing = sorted(n for n in used if n not in served)
    for n in missing:
        fail(f"{used[n]}: {n} is not on the monitor's /metrics page")
    if not missing:
        print(f"ok: all {len(used)} metric names in the dashboard are on the /metrics page "
              f"({len(served)} families served; not shown: {sorted(served - set(used))})")

    # ---- 3. every expression through a real Prometheus
    if not shutil.which("prometheus"):
        print("SKIPPED: prometheus is not installed (scripts/setup.sh installs the Debian package 'prometheus')")
        sys.exit(1 if failures else 77)
    prom_port = free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                f"  - job_name: gpscope\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml",
                             f"--storage.tsdb.path={work}/tsdb", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))

    def query(e):
        url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": e})
        try:
            return json.loads(get(url))
        except urllib.error.HTTPError as err:  # 400: a bad expression; the body says why
            return json.loads(err.read().decode())
        except OSError:
            return None

    # Until 8 scrapes are in (rate() over the 5 s interval below needs two).
    deadline = time.time() + 60
    while time.time() < deadline:
        a = query('count_over_time(up{job="gpscope"}[1m])')
        if a and a.get("status") == "success" and a["data"]["result"] and \
                float(a["data"]["result"][0]["value"][1]) >= 8:
            break
        time.sleep(0.5)
    else:
        fail("Prometheus did not scrape the monitor 8 times within 60 s")
    grafana = {"$__rate_interval": "5s", "$__range": "1m", "$__interval": "1s",
               "$instance": ".*", "$gpu": ".*"}
    empty = 0
    for where, e in exprs:
        q = e
        for k in sorted(grafana, key=len, reverse=True):
            q = q.replace(k, grafana[k])
        a = query(q)
        if not a or a.get("status") != "success":
            fail(f"{where}: Prometheus refused '{q}': {a and a.get('error')}")
        elif not a["data"]["result"]:
            fail(f"{where}: '{q}' returned no series")
            empty += 1
    if not [f for f in failures if "Prometheus" in f or "no series" in f]:
        version = subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout.split()[2]
        print(f"ok: all {len(exprs)} expressions run on Prometheus {version} and return series")
finally:
    for p in (prom, mon):
        if p and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
print("PASSED" if not failures else f"FAILED: {len(failures)} problem(s)")
sys.exit(1 if failures else 0)
