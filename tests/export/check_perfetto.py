#!/usr/bin/env python3
"""check_perfetto.py BINARY SOURCE_DIR: the Perfetto export, read back by a
real protobuf decoder (`protoc --decode` with tests/export/perfetto_subset.proto).

1. The committed sample (tests/export/sample.pftrace, written by
   export_formats_test from a built trace) decodes, and says what it should:
   the first packet clears the incremental state, the process track carries
   the rank, the tracks are named (the overlap's second lane included), one
   slice per kernel, BEGIN/END balanced per track, flows, counters.
2. Bundled traces exported again: the same numbers as their Chrome JSON
   export (slices per category, counters, flows, call stacks), every slice
   closed; each call stack (TrackEvent.callstack_iid) resolves through
   interned callstacks, frames, function names and mappings defined no
   later than its packet, and names the same frames, in the same order, as
   the Chrome export's stackFrames chain of that slice.

   check_perfetto.py BINARY SOURCE_DIR --stacks TRACE CHROME_JSON: only the
   stack check, for a trace built by a test (symbolize_test: native frames
   symbolized here, with a build id).
"""
import collections
import json
import os
import re
import subprocess
import sys

BIN, SRC = sys.argv[1], sys.argv[2]
PROTO_DIR = os.path.join(SRC, "tests", "export")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def decode(data):
    r = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--decode=perfetto.protos.Trace",
                        os.path.join(PROTO_DIR, "perfetto_subset.proto")],
                       input=data, capture_output=True, check=True)
    return r.stdout.decode("utf-8")


def packets(text):
    """Each top-level packet's text."""
    out, cur = [], None
    for line in text.splitlines():
        if line == "packet {":
            cur = []
        elif line == "}":
            out.append("\n".join(cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    return out


def field(block, name):
    return re.findall(r"^\s*%s: (.*)$" % name, block, re.M)


def unquote(quoted):
    """A text-format string literal: octal and C escapes over UTF-8 bytes."""
    return unquote_bytes(quoted).decode("utf-8")


def unquote_bytes(quoted):
    """A text-format bytes literal."""
    body = quoted[1:-1]
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "r": 13, '"': 34, "'": 39, "\\": 92}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def parse_message(lines):
    """Text format -> {field: [values]}; a nested message is a dict."""
    root, stack = {}, []
    cur = root
    for line in lines:
        line = line.strip()
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        elif line:
            k, v = line.split(": ", 1)
            cur.setdefault(k, []).append(v)
    return root


def one(msg, name, default=None):
    v = msg.get(name)
    return v[0] if v else default


def intern_stacks(p, s, where):
    """The packet's interned call-stack entries, into s["interned"]."""
    tables = s["interned"]
    for d in parse_message(p.splitlines()).get("interned_data", []):
        for kind in ("function_names", "mapping_paths", "source_paths"):
            for e in d.get(kind, []):
                tables[kind][one(e, "iid")] = unquote(one(e, "str"))
        for e in d.get("build_ids", []):
            tables["build_ids"][one(e, "iid")] = unquote_bytes(one(e, "str")).hex()
        for kind in ("mappings", "frames", "callstacks"):
            for e in d.get(kind, []):
                iid = one(e, "iid")
                check(iid not in tables[kind], "%s: %s iid %s defined twice" % (where, kind, iid))
                tables[kind][iid] = e


def resolve_stack(s, iid, where):
    """A callstack's frames, outermost first: (name, mapping path, build id hex, rel_pc)."""
    t = s["interned"]
    cs = t["callstacks"].get(iid)
    check(cs is not None, "%s: callstack_iid %s not interned before use" % (where, iid))
    out = []
    for fid in (cs or {}).get("frame_ids", []):
        f = t["frames"].get(fid)
        check(f is not None, "%s: frame %s not interned" % (where, fid))
        if f is None:
            continue
        name = t["function_names"].get(one(f, "function_name_id"))
        check(name is not None, "%s: frame %s: no function name" % (where, fid))
        m = t["mappings"].get(one(f, "mapping_id"))
        check(m is not None, "%s: frame %s: mapping not interned" % (where, fid))
        m = m or {}
        path = t["mapping_paths"].get(one(m, "path_string_ids"))
        check(path is not None, "%s: frame %s: mapping without a path" % (where, fid))
        bid = one(m, "build_id")
        build_id = t["build_ids"].get(bid, "") if bid is not None else ""
        check(bid is None or bid in t["build_ids"], "%s: build id %s not interned" % (where, bid))
        sp = one(f, "source_path_iid")
        check(sp is None or sp in t["source_paths"], "%s: source path %s not interned" % (where, sp))
        out.append((name, path, build_id, int(one(f, "rel_pc", "0")),
                    t["source_paths"].get(sp), int(one(f, "line_number", "0"))))
    return out


def summarize(text):
    s = {"names": {}, "cats": {}, "tracks": {}, "begins": collections.Counter(),
         "open": collections.Counter(), "counters": 0, "flows": collections.Counter(),
         "flags": [], "processes": [], "instants": 0, "unclosed": 0, "stacks": 0,
         "chains": collections.Counter(), "frames": {},
         "interned": {k: {} for k in ("function_names", "build_ids", "mapping_paths",
                                      "source_paths", "mappings", "frames", "callstacks")}}
    for n, p in enumerate(packets(text)):
        s["flags"].append(field(p, "sequence_flags"))
        if "interned_data {" in p:
            intern_stacks(p, s, "packet %d" % n)
        for iid, name in re.findall(r"event_names \{\s*iid: (\d+)\s*name: (\".*\")", p):
            s["names"][iid] = unquote(name)
        for iid, name in re.findall(r"event_categories \{\s*iid: (\d+)\s*name: (\".*\")", p):
            s["cats"][iid] = unquote(name)
        if "track_descriptor {" in p:
            uuid = field(p, "uuid")[0]
            names = field(p, "name")
            s["tracks"][uuid] = unquote(names[0]) if names else None
            for pn in field(p, "process_name"):
                s["processes"].append(unquote(pn))
        if "track_event {" in p:
            typ = field(p, "type")[0]
            track = field(p, "track_uuid")[0]
            check(track in s["tracks"], "event on a track not declared before it: " + track)
            if typ == "TYPE_SLICE_BEGIN":
                cat = s["cats"].get(field(p, "category_iids")[0])
                s["begins"][cat] += 1
                s["open"][track] += 1
                check("callstack {" not in p.split("interned_data {")[0],
                      "an inline callstack: stacks are interned (callstack_iid)")
                for iid in field(p, "callstack_iid"):
                    s["stacks"] += 1
                    frames = resolve_stack(s, iid, "packet %d" % n)
                    check(frames, "packet %d: an empty callstack" % n)
                    s["chains"][tuple(f[0] for f in frames)] += 1
                    for f in frames:
                        s["frames"][f[0]] = f
                for f in field(p, "flow_ids"):
                    s["flows"][f] += 1
            elif typ == "TYPE_SLICE_END":
                if s["open"][track] == 0:
                    s["unclosed"] += 1
                s["open"][track] -= 1
            elif typ == "TYPE_COUNTER":
                s["counters"] += 1
                check(field(p, "double_counter_value"), "counter without a value")
            elif typ == "TYPE_INSTANT":
                s["instants"] += 1
    return s


def export(trace, fmt):
    r = subprocess.run([BIN, "export", "--format", fmt, trace], capture_output=True, check=True)
    return r.stdout


def chrome_chains(doc):
    """Per API event with an sf, its stackFrames chain, outermost first."""
    frames = doc.get("stackFrames", {})
    out = collections.Counter()
    for e in doc["traceEvents"]:
        node, chain = e.get("sf"), []
        while node is not None:
            chain.append(frames[node]["name"])
            node = frames[node].get("parent")
        if chain:
            out[tuple(reversed(chain))] += 1
    return out


def check_stacks(name, pf, doc):
    """Perfetto's stacks name the frames the Chrome export names."""
    chrome = chrome_chains(doc)
    check(pf["chains"] == chrome, "%s: perfetto's stacks differ from chrome's: %s vs %s" % (
        name, sorted(pf["chains"].items())[:3], sorted(chrome.items())[:3]))


if len(sys.argv) > 3 and sys.argv[3] == "--stacks":
    # A test's own trace and its Chrome export: the stacks only, and the
    # frames printed (name, mapping, build id, rel_pc, source, line).
    trace, chrome_json = sys.argv[4], sys.argv[5]
    pf = summarize(decode(export(trace, "perfetto")))
    with open(chrome_json) as f:
        check_stacks(trace, pf, json.load(f))
    check(pf["stacks"] > 0, "%s: no call stacks" % trace)
    for f in sorted(pf["frames"].values()):
        print("frame\t%s\t%s\t%s\t%#x\t%s\t%d" % (f[0], f[1], f[2], f[3], f[4], f[5]))
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


# 1. The committed sample.
with open(os.path.join(PROTO_DIR, "sample.pftrace"), "rb") as f:
    sample = summarize(decode(f.read()))
check(sample["flags"][0] == ["1"], "first packet does not clear the incremental state: %s" % sample["flags"][0])
check(all(f in ([], ["2"]) for f in sample["flags"][1:]), "later packets' sequence flags")
check(sample["processes"] == ["rank 0 · pid 40 on testhost"], "process names: %s" % sample["processes"])
want_tracks = {"GPU 0 stream 7", "GPU 0 stream 8", "GPU 0 stream 8 (2)", "tid 40 CUDA API",
               "tid 40 NVTX", "sync waits (ctx 1)", "gpu_util gpu0"}
check(want_tracks <= set(sample["tracks"].values()), "tracks: %s" % sorted(
    t for t in sample["tracks"].values() if t))
check(sample["begins"]["kernel"] == 3, "kernel slices: %s" % sample["begins"])
check(sample["begins"]["cuda_api"] == 5, "API slices: %s" % sample["begins"])
check(sample["begins"]["memcpy"] == 1 and sample["begins"]["memset"] == 1, "copy slices")
check(all(v == 0 for v in sample["open"].values()) and sample["unclosed"] == 0,
      "BEGIN/END not balanced per track: %s" % dict(sample["open"]))
check(sum(1 for v in sample["flows"].values() if v == 2) == 3,
      "flows with both ends (kernel, memcpy, memset): %s" % dict(sample["flows"]))
check(sample["counters"] == 2, "counter samples: %d" % sample["counters"])
check(sample["instants"] == 1, "NVTX marks: %d" % sample["instants"])
check({"gemm(float*, float*)", "relu", "Memcpy HtoD", "Sync: stream synchronize"} <=
      set(sample["names"].values()), "interned names: %s" % sorted(sample["names"].values()))

# 2. Bundled traces, against their Chrome export.
for name in ("torch_train_starved.gpscope", "h200_metrics_phases.gpscope",
             "stacks/item_then_host.gpscope", "stacks/h200_item_then_host.gpscope"):
    trace = os.path.join(SRC, "tests", "data", name)
    pf = summarize(decode(export(trace, "perfetto")))
    ev = json.loads(export(trace, "chrome"))["traceEvents"]
    cats = collections.Counter(e.get("cat") for e in ev if e["ph"] == "X")
    for cat in ("kernel", "cuda_api", "memcpy", "memset", "sync", "nvtx"):
        check(pf["begins"][cat] == cats[cat],
              "%s: %s slices: perfetto %d, chrome %d" % (name, cat, pf["begins"][cat], cats[cat]))
    counters = sum(1 for e in ev if e["ph"] == "C" and e["args"]["value"] is not None)
    check(pf["counters"] == counters, "%s: counters %d vs %d" % (name, pf["counters"], counters))
    chrome_flows = sum(1 for e in ev if e["ph"] == "s")
    both_ends = sum(v - 1 for v in pf["flows"].values() if v >= 2)
    check(both_ends == chrome_flows, "%s: flows %d vs %d" % (name, both_ends, chrome_flows))
    check(all(v == 0 for v in pf["open"].values()) and pf["unclosed"] == 0,
          "%s: BEGIN/END not balanced" % name)
    with_sf = sum(1 for e in ev if "sf" in e)
    check(pf["stacks"] == with_sf, "%s: call stacks %d vs %d" % (name, pf["stacks"], with_sf))
    check_stacks(name, pf, json.loads(export(trace, "chrome")))
    if name == "stacks/item_then_host.gpscope":
        # A Python frame: summary's text; its file as mapping and source, its line.
        f = pf["frames"].get("/home/user/proj/train.py:37 train_step")
        check(f is not None and f[1:] == ("/home/user/proj/train.py", "", 0,
                                          "/home/user/proj/train.py", 37),
              "%s: the Python frame train.py:37: %s" % (name, f))
    print("%s: %d kernels, %d API calls, %d counters, %d flows, %d stacks" %
          (name, pf["begins"]["kernel"], pf["begins"]["cuda_api"], pf["counters"], both_ends,
           pf["stacks"]))

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
