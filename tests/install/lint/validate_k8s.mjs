// Validates Kubernetes manifests offline against the Kubernetes API's schemas,
// two independent ways, each document of each file:
//   1. kubernetes-models: the JSON schemas generated from the API's OpenAPI
//      spec (types, required fields, enums, formats), like kubeconform;
//   2. kubernetes-types + the TypeScript compiler: each document as an object
//      literal of its API type, so that a field the API does not know is an
//      error too (the API server's strict field validation rejects those;
//      kubeconform needs -strict for it).
// Markdown files contribute their ```yaml blocks.
//
//   node validate_k8s.mjs [--self-test] FILE...
//
// --self-test first checks that both ways reject broken copies of the first
// document (a wrong type, an unknown field, a missing required field).
// Prints one line per document; exits 1 if any is invalid.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { parseAllDocuments } from "yaml";
import ts from "typescript";

const require = createRequire(import.meta.url);
const here = path.dirname(new URL(import.meta.url).pathname);

function documents(file) {
  let text = fs.readFileSync(file, "utf8");
  if (file.endsWith(".md")) {
    text = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]).join("\n---\n");
  }
  const docs = [];
  parseAllDocuments(text).forEach((d, i) => {
    if (d.errors.length) throw new Error(`${file}: document ${i + 1}: ${d.errors[0].message}`);
    const o = d.toJS();
    if (o !== null) docs.push({ where: `${file} #${i + 1} ${o.kind}/${o.metadata?.name}`, o });
  });
  return docs;
}

// apps/v1 -> {group: "apps", version: "v1"}; v1 -> {group: "", version: "v1"}.
function groupVersion(o) {
  const parts = String(o.apiVersion).split("/");
  return parts.length === 2 ? { group: parts[0], version: parts[1] } : { group: "", version: parts[0] };
}

async function schemaErrors(o) {
  const { group, version } = groupVersion(o);
  const mod = `kubernetes-models/${group ? group + "/" : ""}${version}/${o.kind}`;
  let Model;
  try {
    Model = (await import(mod))[o.kind];
  } catch {
    return [`no schema for ${o.apiVersion} ${o.kind} (${mod})`];
  }
  try {
    new Model(o).validate();
    return [];
  } catch (e) {
    return [String(e.message || e)];
  }
}

// A resource.Quantity is a string or a number in JSON (limits: {nvidia.com/gpu: 1});
// kubernetes-types types it as a string, so the type check sees numbers there as strings.
function quantitiesAsStrings(v, key = "") {
  if (Array.isArray(v)) return v.map((x) => quantitiesAsStrings(x));
  if (v && typeof v === "object") {
    const quantities = key === "limits" || key === "requests" || key === "capacity";
    return Object.fromEntries(Object.entries(v).map(([k, x]) =>
      [k, quantities && typeof x === "number" ? String(x) : quantitiesAsStrings(x, k)]));
  }
  return key === "sizeLimit" && typeof v === "number" ? String(v) : v;
}

// All documents compiled in one program; returns one error list per document,
// each error with the line of the document (as JSON) that it is about.
function typeErrors(objs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpscope-k8s-"));
  const files = objs.map((o, i) => {
    const { group, version } = groupVersion(o);
    const f = path.join(dir, `doc${i}.ts`);
    fs.writeFileSync(f, `import type { ${o.kind} } from "kubernetes-types/${group ? group.split(".")[0] : "core"}/${version}";\n` +
      `export const doc: ${o.kind} = ${JSON.stringify(quantitiesAsStrings(o), null, 1)};\n`);
    return f;
  });
  const program = ts.createProgram(files, {
    noEmit: true, strict: true, types: [], moduleResolution: ts.ModuleResolutionKind.Node10,
    baseUrl: here, paths: { "kubernetes-types/*": [path.join(here, "node_modules/kubernetes-types/*")] },
  });
  const errors = files.map(() => []);
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const i = d.file ? files.indexOf(d.file.fileName) : -1;
    let msg = ts.flattenDiagnosticMessageText(d.messageText, " ");
    if (d.file && d.start !== undefined) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      msg += ` (at: ${d.file.text.split("\n")[line].trim()})`;
    }
    (i >= 0 ? errors[i] : errors[0]).push(msg);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return errors;
}

async function check(docs) {
  const types = typeErrors(docs.map((d) => d.o));
  const results = [];
  for (let i = 0; i < docs.length; ++i) {
    results.push([...(await schemaErrors(docs[i].o)), ...types[i]]);
  }
  return results;
}

const args = process.argv.slice(2);
const selfTest = args[0] === "--self-test";
const files = selfTest ? args.slice(1) : args;
if (!files.length) {
  console.error("usage: node validate_k8s.mjs [--self-test] FILE...");
  process.exit(2);
}
const docs = files.flatMap(documents);
let bad = 0;
if (selfTest) {
  // Broken copies of the first document with a pod template (or pod spec).
  const base = docs.find((d) => d.o.spec?.template?.spec || d.o.spec?.containers);
  const podSpec = (o) => o.spec.template?.spec ?? o.spec;
  // [what, how to break it, what the error must name]
  const cases = [
    ["a string where an integer goes", (o) => { podSpec(o).terminationGracePeriodSeconds = "fifteen"; },
     "terminationGracePeriodSeconds"],
    ["an unknown field", (o) => { podSpec(o).containers[0].imagePullPolicyy = "Always"; }, "imagePullPolicyy"],
    ["a missing required field", (o) => { delete podSpec(o).containers[0].name; }, "name"],
  ];
  const broken = cases.map(([what, f]) => {
    const o = structuredClone(base.o);
    f(o);
    return { where: `self-test: ${what}`, o };
  });
  const results = await check([base, ...broken]);
  if (results[0].length) { console.log(`FAILED: self-test: the unbroken ${base.where} is invalid`); ++bad; }
  broken.forEach((b, i) => {
    const hit = results[i + 1].find((e) => e.includes(cases[i][2]));
    if (hit) console.log(`ok: ${b.where} is rejected: ${hit.slice(0, 160)}`);
    else { console.log(`FAILED: ${b.where} was not rejected for '${cases[i][2]}': ${results[i + 1].join("; ")}`); ++bad; }
  });
}
const results = await check(docs);
results.forEach((errs, i) => {
  if (errs.length) { console.log(`INVALID: ${docs[i].where}:\n  ${errs.join("\n  ")}`); ++bad; }
  else console.log(`ok: ${docs[i].where} (schema and fields)`);
});
const kubernetesTypes = require("kubernetes-types/package.json").version;
console.log(`${docs.length} documents checked against the Kubernetes ${kubernetesTypes.replace(/\.\d+$/, "")} API (kubernetes-models, kubernetes-types ${kubernetesTypes})`);
process.exit(bad ? 1 : 0);
