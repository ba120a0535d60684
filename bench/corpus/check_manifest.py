#!/usr/bin/env python3
"""bench/corpus/check_manifest.py: checks bench/corpus/manifest.json against
the code it describes (ctest corpus_manifest).

  check_manifest.py [--manifest M] [--rules tools/analyses/rules.cc] [--update]

Checks: every workload has the fields run_corpus.py and compare.py read;
names are unique; its program exists (a Python file here, or a corpus_*
target of CMakeLists.txt with its native/*.cu source); each site's line
carries the comment `site:TAG` (and every `site:` tag in a workload's
program is listed); `expected` is "none" exactly for healthy controls
(whose bottleneck says "healthy: nothing above info"), a rule id of the
analyzer's catalogue (rules.cc), or, with needs_new_rule, a proposed id
that is not in the catalogue yet, listed under proposed_rules, with its
expected_cause in words; acceptable ids are known too; at least 24
workloads, 4 healthy, 5 marked for issue 20; README.md's workload table
is the manifest's. --update rewrites each site's line number from the
tags (for when code moved) and README.md's table, and checks again.
Exit 0 when all hold, 1 with one line per problem, 2 on bad usage.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TAG = re.compile(r"(?:#|//)\s*site:([a-z0-9_]+)")
FIELDS = {"name": str, "kind": str, "program": str, "seconds": (int, float), "timeout_s": (int, float),
          "est_s": (int, float), "libraries": list, "env": dict, "healthy": bool, "bottleneck": str,
          "expected": str, "needs_new_rule": bool, "acceptable": list, "sites": list, "issue20": bool}


def catalogue(rules_cc):
    """Rule ids of the analyzer's catalogue, read from rules.cc."""
    with open(rules_cc) as f:
        text = f.read()
    ids = set(re.findall(r'\{\{"([a-z0-9-]+)",\s*"', text))  # {{"id", "Title", ...
    ids |= set(re.findall(r'rules->push_back\(\{"([a-z0-9-]+)",\s*"', text))
    return ids


def source_of(w):
    """The repository path of the file a workload's sites live in."""
    if w["kind"] == "python":
        return os.path.join("bench/corpus", w["program"])
    return os.path.join("bench/corpus/native", w["program"][len("corpus_"):] + ".cu")


def tags_in(path):
    """{tag: [line numbers]} of the site comments in a file."""
    out = {}
    with open(os.path.join(REPO, path)) as f:
        for n, line in enumerate(f, 1):
            for t in TAG.findall(line):
                out.setdefault(t, []).append(n)
    return out


def check(m, rules):
    problems = []
    ws = m.get("workloads")
    if not isinstance(ws, list):
        return ["manifest: no workloads list"]
    proposed = m.get("proposed_rules", {})
    for pid in proposed:
        if pid in rules:
            problems.append(f"proposed_rules: {pid} is already a rule of the catalogue")
    with open(os.path.join(HERE, "CMakeLists.txt")) as f:
        cmake = f.read()
    seen = set()
    for i, w in enumerate(ws):
        where = f"workload {i} ({w.get('name', '?')})"
        for k, t in FIELDS.items():
            if not isinstance(w.get(k), t) or isinstance(w.get(k), bool) and t in ((int, float),):
                problems.append(f"{where}: field {k} missing or not {t}")
        if problems and problems[-1].startswith(where):
            continue
        name = w["name"]
        if not re.fullmatch(r"[a-z0-9_]+", name):
            problems.append(f"{where}: name must be [a-z0-9_]+")
        if name in seen:
            problems.append(f"{where}: duplicate name")
        seen.add(name)
        if w["kind"] == "python":
            if not os.path.isfile(os.path.join(HERE, w["program"])):
                problems.append(f"{where}: {w['program']} does not exist")
        elif w["kind"] == "native":
            stem = w["program"][len("corpus_"):] if w["program"].startswith("corpus_") else None
            if stem is None or not os.path.isfile(os.path.join(HERE, "native", stem + ".cu")):
                problems.append(f"{where}: native program must be corpus_X with native/X.cu")
            elif not re.search(r"foreach\(w [^)]*\b" + re.escape(stem) + r"\b", cmake):
                problems.append(f"{where}: {stem} is not built by bench/corpus/CMakeLists.txt")
        else:
            problems.append(f"{where}: kind must be python or native")
            continue
        if not (0 < w["seconds"] < w["timeout_s"]) or w["est_s"] < w["seconds"]:
            problems.append(f"{where}: need 0 < seconds < timeout_s and est_s >= seconds")
        if not all(isinstance(v, str) for v in w["env"].values()):
            problems.append(f"{where}: env values must be strings")
        exp = w["expected"]
        if w["healthy"]:
            if exp != "none":
                problems.append(f"{where}: a healthy control expects 'none'")
            if not w["bottleneck"].startswith("healthy: nothing above info"):
                problems.append(f"{where}: a healthy control's bottleneck starts "
                                "'healthy: nothing above info'")
        elif exp == "none":
            problems.append(f"{where}: expects 'none' but is not marked healthy")
        elif w["needs_new_rule"]:
            if exp in rules:
                problems.append(f"{where}: {exp} exists in rules.cc; needs_new_rule should be false")
            if exp not in proposed:
                problems.append(f"{where}: new rule {exp} is not listed under proposed_rules")
            if len(w.get("expected_cause", "")) < 40:
                problems.append(f"{where}: a new rule needs expected_cause in words")
        elif exp not in rules:
            problems.append(f"{where}: {exp} is not a rule of rules.cc (mark needs_new_rule?)")
        for a in w["acceptable"]:
            if a != "none" and a not in rules and a not in proposed:
                problems.append(f"{where}: acceptable {a} is neither a rule nor proposed")
            if a == exp:
                problems.append(f"{where}: acceptable repeats expected {a}")
        src = source_of(w)
        try:
            tags = tags_in(src)
        except OSError as e:
            problems.append(f"{where}: {src}: {e}")
            continue
        listed = set()
        for s in w["sites"]:
            if not isinstance(s, dict) or not {"tag", "file", "line", "what"} <= set(s):
                problems.append(f"{where}: a site needs tag, file, line, what")
                continue
            listed.add(s["tag"])
            if s["file"] != src:
                problems.append(f"{where}: site {s['tag']}: file {s['file']} is not {src}")
                continue
            lines = tags.get(s["tag"], [])
            if len(lines) != 1:
                problems.append(f"{where}: site {s['tag']}: {len(lines)} 'site:{s['tag']}' comments "
                                f"in {src}")
            elif lines[0] != s["line"]:
                problems.append(f"{where}: site {s['tag']}: line {s['line']} but the tag is on line "
                                f"{lines[0]} of {src} (check_manifest.py --update)")
        for t in sorted(set(tags) - listed):
            problems.append(f"{where}: {src} has 'site:{t}' that the manifest does not list")
    healthy = sum(1 for w in ws if w.get("healthy"))
    if len(ws) < 24:
        problems.append(f"manifest: {len(ws)} workloads, want at least 24")
    if healthy < 4:
        problems.append(f"manifest: {healthy} healthy controls, want at least 4")
    if sum(1 for w in ws if w.get("issue20")) < 5:
        problems.append("manifest: fewer than 5 workloads marked issue20 (its must-show list)")
    return problems


README = os.path.join(HERE, "README.md")
BEGIN, END = "<!-- corpus-table: made by check_manifest.py --update -->", "<!-- /corpus-table -->"


def table(m):
    """The manifest as a Markdown table (README.md's copy is checked)."""
    rows = ["| # | workload | built on | bottleneck | expected top | also right | sites |",
            "|---|---|---|---|---|---|---|"]
    for i, w in enumerate(m["workloads"], 1):
        short = "healthy control" if w["healthy"] else w["bottleneck"].split(":")[0]
        exp = w["expected"] + (" (new rule)" if w["needs_new_rule"] else "")
        sites = ", ".join(f"{os.path.basename(s['file'])}:{s['line']}" for s in w["sites"])
        env = " ".join(f"{k}={v}" for k, v in w["env"].items())
        label = f"{w['name']} ({env})" if env else w["name"]
        rows.append(f"| {i} | {label} | {', '.join(w['libraries'])} | "
                    f"{short} | {exp} | {', '.join(w['acceptable'])} | {sites} |")
    return "\n".join(rows)


def readme_problems(m, path=README):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return [f"{path}: {e}"]
    if BEGIN not in text or END not in text:
        return [f"{path}: no table markers"]
    inside = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    if inside == table(m):
        return []
    return [f"{path}: the workload table is stale (check_manifest.py --update)"]


def write_readme_table(m, path=README):
    with open(path) as f:
        text = f.read()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(path, "w") as f:
        f.write(f"{head}{BEGIN}\n{table(m)}\n{END}{tail}")


def update(m):
    """Sets each site's line from its tag; returns how many changed."""
    changed = 0
    for w in m.get("workloads", []):
        try:
            tags = tags_in(source_of(w))
        except (OSError, KeyError):
            continue
        for s in w.get("sites", []):
            lines = tags.get(s.get("tag"), [])
            if len(lines) == 1 and s.get("line") != lines[0]:
                s["line"] = lines[0]
                changed += 1
    return changed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--rules", default=os.path.join(REPO, "tools/analyses/rules.cc"))
    ap.add_argument("--update", action="store_true", help="rewrite site line numbers from the tags")
    args = ap.parse_args()
    try:
        with open(args.manifest) as f:
            m = json.load(f)
        rules = catalogue(args.rules)
    except (OSError, ValueError) as e:
        print(f"check_manifest: {e}", file=sys.stderr)
        return 2
    if not rules:
        print(f"check_manifest: {args.rules}: no rule ids found", file=sys.stderr)
        return 2
    if args.update:
        n = update(m)
        with open(args.manifest, "w") as f:
            json.dump(m, f, indent=2)
            f.write("\n")
        print(f"check_manifest: {n} site line(s) updated in {args.manifest}")
        if os.path.abspath(args.manifest) == os.path.join(HERE, "manifest.json"):
            write_readme_table(m)
    problems = check(m, rules)
    if os.path.abspath(args.manifest) == os.path.join(HERE, "manifest.json"):
        problems += readme_problems(m)
    for p in problems:
        print(f"check_manifest: {args.manifest}: {p}")
    if not problems:
        ws = m["workloads"]
        print(f"check_manifest: ok: {len(ws)} workloads ({sum(w['healthy'] for w in ws)} healthy, "
              f"{sum(w['needs_new_rule'] for w in ws)} awaiting a new rule), "
              f"{sum(len(w['sites']) for w in ws)} sites, {len(rules)} rules in the catalogue")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
