#!/usr/bin/env bash
# Offline checks of the packaging files, without a cluster or a container
# engine (neither runs here):
#   1. the Kubernetes manifests (packaging/kubernetes/*.yaml and the YAML in
#      docs/running.md) against the Kubernetes API's schemas, with a
#      self-test that broken copies are rejected (lint/validate_k8s.mjs);
#   2. the Dockerfile: dockerfilelint (best practices) and dockerfile-utils
#      (syntax, instructions, flags) report nothing; its shape (a Debian 12
#      build stage that runs packaging/docker/build-stage.sh, a Debian 12
#      runtime stage that copies the build stage's output);
#   3. a dry run of its stages: the build context made as Docker makes it
#      (the tree less .dockerignore) configures with the release preset and
#      builds in a version passed as GPSCOPE_VERSION (the context has no .git);
#      with --full-docker-build the build stage's RUN line itself runs on that
#      context (a whole release build, minutes), else its output is the
#      release tree's tarball unpacked the way build-stage.sh unpacks it;
#      then the runtime stage's COPY --from lays out the image's files, its
#      ENTRYPOINT + CMD run as its USER (65534) with a bare environment, and
#      every path the manifests use inside the image exists (the init
#      container's cp runs as 65534 into a 0777 directory, like an emptyDir).
# Not checked (no engine here): the apt step of the build stage (it reaches
# Debian's and NVIDIA's repositories), the base image's contents.
#
#   tests/install/check_manifests.sh [--release-tree DIR] [--full-docker-build]
#
# Prints one "ok:" line per check and "N passed, N failed" last.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lint=$repo/tests/install/lint
release=$repo/build-release full=0
while [ $# -gt 0 ]; do
  case "$1" in
    --release-tree) release=$(cd "$2" && pwd); shift 2 ;;
    --full-docker-build) full=1; shift ;;
    *) echo "usage: $0 [--release-tree DIR] [--full-docker-build]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/gpscope-manifests.XXXXXX)
chmod 0755 "$work"  # the image's user (65534) reads the laid-out image below it
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ $failed -eq 0 ]; exit $?; }

(cd "$lint" && npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1) ||
  { cat "$work/npm.log"; bad "npm ci in tests/install/lint"; finish; }

# ---- 1. Kubernetes
manifests=("$repo"/packaging/kubernetes/*.yaml)
if (cd "$repo" && node "$lint/validate_k8s.mjs" --self-test packaging/kubernetes/*.yaml docs/running.md) >"$work/k8s.txt" 2>&1; then
  ok "Kubernetes: $(tail -1 "$work/k8s.txt")"; grep '^ok:' "$work/k8s.txt" | sed 's/^/    /'
else
  cat "$work/k8s.txt"; bad "Kubernetes manifests"
fi

# ---- 2. the Dockerfile
dockerfile=$repo/packaging/docker/Dockerfile
if (cd "$lint" && npx --no-install dockerfilelint "$dockerfile") >"$work/dockerfilelint.txt" 2>&1; then
  ok "Dockerfile: dockerfilelint: no issues"
else
  cat "$work/dockerfilelint.txt"; bad "Dockerfile: dockerfilelint reports issues"
fi
if node "$lint/docker_check.mjs" "$dockerfile" "${manifests[@]}" >"$work/stages.json" 2>"$work/stages.err"; then
  ok "Dockerfile: dockerfile-utils: no syntax or semantic problems"
else
  cat "$work/stages.err"; bad "Dockerfile: dockerfile-utils reports problems"
fi
# The shape, and the build stage's RUN line and paths, as shell assignments.
python3 - "$work/stages.json" >"$work/shape.sh" <<'PY' || { cat "$work/shape.sh"; bad "Dockerfile: its shape"; finish; }
import json, shlex, sys
d = json.load(open(sys.argv[1]))
st = d["stages"]
def die(msg):
    print(msg); sys.exit(1)
if len(st) != 2: die(f"{len(st)} stages, expected 2 (build, runtime)")
build, final = st
if not (build["name"] and build["from"].startswith("debian:12") and final["from"].startswith("debian:12")):
    die(f"stages {build['from']} AS {build['name']}, {final['from']}: expected two Debian 12 stages, the first named")
ctx_copy = [c for c in build["copies"] if c["from"] is None and c["src"] == ["."]]
run = build["runs"][-1].split()
if not ctx_copy or run[:2] != ["bash", "packaging/docker/build-stage.sh"] or len(run) != 4:
    die(f"the build stage must COPY . and end with RUN bash packaging/docker/build-stage.sh SRC OUT: {build['runs'][-1]}")
if run[2] != ctx_copy[0]["dest"] or build["workdir"] != run[2]:
    die(f"the build stage's WORKDIR {build['workdir']}, COPY . {ctx_copy[0]['dest']} and SRC {run[2]} differ")
copies = [c for c in final["copies"] if c["from"] == build["name"]]
if not copies or final["runs"]: die("the runtime stage must only COPY --from the build stage")
if not final["entrypoint"]: die("the runtime stage has no exec-form ENTRYPOINT")
print(f"src={shlex.quote(run[2])} out={shlex.quote(run[3])} user={shlex.quote(final['user'])}")
print("copies=(" + " ".join(shlex.quote(c["src"][0] + "=" + c["dest"]) for c in copies) + ")")
print("entry=(" + " ".join(shlex.quote(a) for a in final["entrypoint"] + (final["cmd"] or [])) + ")")
print("image_paths=(" + " ".join(shlex.quote(p) for p in d["image_paths"]) + ")")
print(f"stage_run={shlex.quote(build['runs'][-1])}")
PY
source "$work/shape.sh"
ok "Dockerfile: two Debian 12 stages; the build stage runs '$stage_run'; the runtime stage copies ${copies[*]}, runs as $user"

# ---- 3. dry run of the stages
# The build context: the tree (tracked and untracked, less what git ignores) less .dockerignore.
ctx=$work/ctx
python3 - "$repo" "$ctx" <<'PY' || { bad "the build context"; finish; }
import fnmatch, os, shutil, subprocess, sys
repo, ctx = sys.argv[1:3]
files = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "-z"],
                       capture_output=True, check=True).stdout.decode().split("\0")
pats = [l.strip() for l in open(os.path.join(repo, ".dockerignore")) if l.strip() and not l.startswith("#")]
def ignored(path):
    parts = path.split("/")
    for p in pats:  # a pattern matches the path or any of its parent directories
        p = p.rstrip("/")
        for i in range(1, len(parts) + 1):
            head = "/".join(parts[:i])
            if fnmatch.fnmatchcase(head, p) or (p.startswith("**/") and fnmatch.fnmatchcase(parts[i - 1], p[3:])):
                return True
    return False
n = 0
for f in filter(None, files):
    if ignored(f) or not os.path.isfile(os.path.join(repo, f)):
        continue
    os.makedirs(os.path.dirname(os.path.join(ctx, f)), exist_ok=True)
    shutil.copy2(os.path.join(repo, f), os.path.join(ctx, f))
    n += 1
pass
PY
[ -d "$ctx/.git" ] && bad "the build context holds .git" || ok "the build context: $(find "$ctx" -type f | wc -l) files, no .git, build trees or node_modules"
# What the Dockerfile's comment passes as GPSCOPE_VERSION, and what Version.cmake makes of it.
project_version=$(sed -n 's/^project(gpscope VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
version=$(cd "$repo" && cmake -DGPSCOPE_SOURCE_DIR="$repo" -DGPSCOPE_FALLBACK_VERSION="$project_version" \
  -DGPSCOPE_VERSION_OVERRIDE="$(git describe --tags --always --dirty)" \
  -DGPSCOPE_VERSION_HEADER="$work/expected_version.h" -P cmake/Version.cmake >/dev/null 2>&1 &&
  sed -n 's/^#define GPSCOPE_VERSION "\(.*\)"$/\1/p' "$work/expected_version.h")
passed_version=$(git -C "$repo" describe --tags --always --dirty)
stage_out=$work/stage-out
if [ $full = 1 ]; then
  cmd=${stage_run//$src/$ctx}; cmd=${cmd//$out/$stage_out}
  if (cd "$ctx" && GPSCOPE_VERSION=$passed_version bash -c "$cmd") >"$work/stage.log" 2>&1; then
    ok "build stage: '$stage_run' ran on the context (--full-docker-build): $(tail -1 "$work/stage.log")"
  else
    tail -30 "$work/stage.log"; bad "build stage: '$stage_run' failed on the context"; finish
  fi
else
  if (cd "$ctx" && cmake --preset release -B "$ctx/build-release" -DGPSCOPE_VERSION_OVERRIDE="$passed_version" >"$work/stage.log" 2>&1 &&
      cmake --build "$ctx/build-release" --target gpscope_version_header >>"$work/stage.log" 2>&1) &&
     grep -qF "\"$version\"" "$ctx/build-release/gpscope_version.h"; then
    ok "build stage (dry): the context configures with the release preset and builds in GPSCOPE_VERSION=$passed_version as $version"
  else
    tail -20 "$work/stage.log"; bad "build stage (dry): the context does not configure"
  fi
  # Its output, from the release tree's tarball, unpacked the way build-stage.sh unpacks it.
  tarball=$(ls "$release"/packages/gpscope-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
  [ -n "$tarball" ] || { bad "no tarball in $release/packages (run scripts/package.sh first)"; finish; }
  mkdir -p "$stage_out/gpscope" && tar -xzf "$tarball" -C "$stage_out/gpscope" --strip-components=1
  version=$(basename "$tarball" | sed 's/^gpscope-\(.*\)-linux-x86_64\.tar\.gz$/\1/')
fi
# The runtime stage: COPY --from=build SRC DEST, then ENTRYPOINT + CMD as USER with the image's PATH.
img=$work/image
for c in "${copies[@]}"; do
  from=${c%%=*} dest=${c#*=}
  mkdir -p "$(dirname "$img$dest")" && cp -a "$stage_out${from#$out}" "$img$dest" ||
    bad "runtime stage: COPY --from $from $dest"
done
uid=${user%%:*} gid=${user#*:}
if [ "$(id -u)" = 0 ]; then
  as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups env -i PATH="$img/opt/gpscope/bin:/usr/bin:/bin" "$@"; }
else  # only root can take another uid: then as this user, and say so
  echo "note: not root: the image's commands run as $(id -un), not as $user"
  as_user() { env -i PATH="$img/opt/gpscope/bin:/usr/bin:/bin" "$@"; }
fi
entry_bin=$img${entry[0]}
if [ -x "$entry_bin" ] && as_user "$entry_bin" "${entry[@]:1}" >"$work/entry.txt" 2>&1 &&
   grep -q '^usage: gpscope-monitor' "$work/entry.txt" &&
   [ "$(as_user "$entry_bin" --version)" = "gpscope-monitor $version" ]; then
  ok "runtime stage: ENTRYPOINT ${entry[*]} runs as $user: usage, version $version"
else
  cat "$work/entry.txt" 2>/dev/null; bad "runtime stage: ENTRYPOINT ${entry[*]} does not run as $user"
fi
for p in "${image_paths[@]}"; do
  if [ ! -f "$img$p" ]; then bad "the manifests use $p, which the image lacks"; continue; fi
  case $p in
    *.so)  # the init container: cp into an emptyDir (mode 0777), as 65534
      mkdir -m 0777 "$work/emptydir"
      if as_user cp "$img$p" "$work/emptydir/" && out=$(bash "$repo/scripts/check_exports.sh" "$work/emptydir/$(basename "$p")"); then
        ok "init container: cp $p into an emptyDir as $user; the copy: $out"
      else
        bad "init container: cp $p as $user failed"
      fi ;;
    *) [ -x "$img$p" ] && ok "the manifests' command $p is in the image and executable" ||
         bad "the manifests' command $p is not executable in the image" ;;
  esac
done
finish
