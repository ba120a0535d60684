// The Dockerfile, read as Docker reads it (dockerfile-ast), and checked for
// syntax and semantics (dockerfile-utils: unknown instructions and flags, bad
// arguments). Prints what tests/install/check_manifests.sh needs to run its
// stages without a container engine, as JSON:
//   {stages: [{name, from, workdir, user, runs: [...], copies: [{from, src, dest}],
//              entrypoint: [...], cmd: [...]}],
//    image_paths: [paths inside the image that the Kubernetes manifests use]}
//
//   node docker_check.mjs DOCKERFILE MANIFEST...
// Exits 1 on a syntax or semantic problem (each printed).
import fs from "node:fs";
import { DockerfileParser } from "dockerfile-ast";
import { validate } from "dockerfile-utils";
import { parseAllDocuments } from "yaml";

const [dockerfile, ...manifests] = process.argv.slice(2);
const text = fs.readFileSync(dockerfile, "utf8");
const problems = validate(text);
for (const p of problems) console.error(`${dockerfile}:${p.range.start.line + 1}: ${p.message}`);

const stages = [];
for (const ins of DockerfileParser.parse(text).getInstructions()) {
  const kw = ins.getKeyword();
  const args = ins.getArguments().map((a) => a.getValue());
  if (kw === "FROM") {
    stages.push({ name: args[2] ?? null, from: args[0], workdir: "/", user: "root", runs: [], copies: [],
                  entrypoint: null, cmd: null });
    continue;
  }
  const s = stages[stages.length - 1];
  const json = () => { try { return JSON.parse(ins.getRawArgumentsContent ? ins.getRawArgumentsContent() : args.join(" ")); } catch { return null; } };
  if (kw === "WORKDIR") s.workdir = args[0];
  else if (kw === "USER") s.user = args[0];
  else if (kw === "RUN") s.runs.push(ins.getRawArgumentsContent());
  else if (kw === "COPY") {
    const flags = Object.fromEntries(ins.getFlags().map((f) => [f.getName(), f.getValue()]));
    const paths = args.filter((a) => !a.startsWith("--"));
    s.copies.push({ from: flags.from ?? null, src: paths.slice(0, -1), dest: paths[paths.length - 1] });
  } else if (kw === "ENTRYPOINT") s.entrypoint = json();
  else if (kw === "CMD") s.cmd = json();
}

// The paths inside the image that the manifests run or copy.
const imagePaths = [];
for (const f of manifests) {
  for (const d of parseAllDocuments(fs.readFileSync(f, "utf8"))) {
    const o = d.toJS();
    const pod = o?.spec?.template?.spec ?? o?.spec;
    for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
      if (!String(c.image).includes("gpscope")) continue;  // the user's own images
      const argv = c.command ?? [];
      if (argv[0] === "cp") imagePaths.push(argv[1]);
      else if (argv[0]) imagePaths.push(argv[0]);
    }
  }
}
console.log(JSON.stringify({ stages, image_paths: imagePaths }, null, 1));
process.exit(problems.length ? 1 : 0);
