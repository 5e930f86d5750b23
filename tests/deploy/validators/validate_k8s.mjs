// Checks Kubernetes manifests against the Kubernetes OpenAPI schemas (kubernetes-models: one class
// per kind, validated by the ajv code compiled from the schemas) and, like kubeconform --strict or
// kubectl's strict field validation, rejects fields the schema of their object does not define.
// usage: node validate_k8s.mjs FILE_OR_DIR...   (a directory: every *.yaml / *.yml in it)
// Exit 0 when every document is valid; else 1, one line per problem: file, document, path.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

const problems = [];
let checked = 0;

function files(args) {
  const out = [];
  for (const a of args) {
    let st;
    try {
      st = statSync(a);
    } catch (e) {
      problems.push(`${a}: cannot read it (${e.code ?? e.message})`);
      continue;
    }
    if (st.isDirectory()) {
      for (const f of readdirSync(a).sort()) if (/\.ya?ml$/.test(f)) out.push(join(a, f));
    } else {
      out.push(a);
    }
  }
  return out;
}

const escapeKey = (k) => k.replace(/~/g, "~0").replace(/\//g, "~1");

// A copy of `value` whose objects are proxies recording which keys the schema's validator reads.
// Ajv's code reads every property its schema defines (`data.spec`), and enumerates the keys of
// maps (additionalProperties: labels, resources.limits); any other key is not in the schema.
function traced(value, path, nodes) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const arr = value.map((v, i) => traced(v, `${path}/${i}`, nodes));
    return arr;
  }
  const node = { path, value, read: new Set(), enumerated: false };
  nodes.push(node);
  const target = {};
  for (const [k, v] of Object.entries(value)) target[k] = traced(v, `${path}/${escapeKey(k)}`, nodes);
  return new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === "string") node.read.add(key);
      return Reflect.get(t, key, receiver);
    },
    has(t, key) {
      if (typeof key === "string") node.read.add(key);
      return Reflect.has(t, key);
    },
    ownKeys(t) {
      node.enumerated = true;
      return Reflect.ownKeys(t);
    },
  });
}

// "apps/v1" + "Deployment" -> kubernetes-models/apps/v1/Deployment; core "v1" -> kubernetes-models/v1/...
async function modelClass(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Za-z0-9]+$/.test(kind) ||
      !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) {
    return null;
  }
  try {
    const mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return mod[kind] ?? null;
  } catch {
    return null;
  }
}

async function checkDocument(file, index, obj) {
  const where = (path) => `${file}: document ${index + 1}${obj?.kind ? ` (${obj.kind} ${obj?.metadata?.name ?? "?"})` : ""}: ${path || "/"}`;
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    problems.push(`${where("")}: not a mapping (a Kubernetes object)`);
    return;
  }
  const Model = await modelClass(obj.apiVersion, obj.kind);
  if (!Model) {
    problems.push(`${where("")}: apiVersion ${JSON.stringify(obj.apiVersion)} kind ${JSON.stringify(obj.kind)} is not a Kubernetes API type kubernetes-models knows`);
    return;
  }
  checked++;
  // The class's validate() runs the compiled schema on `this`: here the traced copy.
  const nodes = [];
  const proxy = traced(obj, "", nodes);
  try {
    Model.prototype.validate.call(proxy);
  } catch (err) {
    const errors = err.errors ?? [{ instancePath: "", message: err.message }];
    for (const e of errors) {
      const params = e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : "";
      problems.push(`${where(e.instancePath)}: ${e.message}${params}`);
    }
  }
  for (const node of nodes) {
    // Maps (enumerated) take any key; an object none of whose properties was read has a
    // free-form schema (or sits under an error above).
    if (node.enumerated || node.read.size === 0) continue;
    for (const key of Object.keys(node.value)) {
      if (!node.read.has(key)) problems.push(`${where(`${node.path}/${escapeKey(key)}`)}: unknown field "${key}" (not in the ${obj.apiVersion} ${obj.kind} schema)`);
    }
  }
}

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: node validate_k8s.mjs FILE_OR_DIR...");
  process.exit(2);
}
for (const file of files(args)) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    for (const e of doc.errors) problems.push(`${file}: document ${i + 1}: YAML: ${e.message}`);
  });
  for (let i = 0; i < list.length; i++) {
    if (list[i].errors.length) continue;
    const obj = list[i].toJS();
    if (obj === null || obj === undefined) continue;  // an empty document
    await checkDocument(file, i, obj);
  }
}
if (problems.length) {
  console.error(`${problems.length} problem(s) in Kubernetes manifests:`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
if (checked === 0) {
  console.error("no Kubernetes object found in " + args.join(" "));
  process.exit(1);
}
console.log(`${checked} Kubernetes object(s) valid against the kubernetes-models schemas, no unknown fields`);
