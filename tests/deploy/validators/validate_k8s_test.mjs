// Proves validate_k8s.mjs can fail: it accepts a generated example, then rejects copies of it
// broken one way each (a wrong type, a missing required field, unknown fields, a bad quantity,
// an unknown kind, bad YAML), naming the file and the path of every problem.
// usage: node validate_k8s_test.mjs EXAMPLE_DIR   (holding deployment.yaml and service.yaml)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
const example = process.argv[2];
if (!example) {
  console.error("usage: node validate_k8s_test.mjs EXAMPLE_DIR");
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), "validate_k8s_test-"));
let failures = 0;

function run(path) {
  return spawnSync(process.execPath, [join(here, "validate_k8s.mjs"), path], { encoding: "utf8" });
}

function expectValid(path) {
  const r = run(path);
  if (r.status !== 0) {
    failures++;
    console.error(`FAIL: ${path} should be valid, exit ${r.status}:\n${r.stderr}`);
  } else {
    console.log(`ok: ${path} valid`);
  }
}

// `mutate` breaks a copy of the example file (its object, or its text when `{ text: fn }`); every
// string of `expected` must be in the report.
function expectInvalid(name, file, mutate, expected) {
  const path = join(tmp, `${name}.yaml`);
  const text = readFileSync(join(example, file), "utf8");
  writeFileSync(path, mutate.text ? mutate.text(text) : stringify(mutate(parse(text))));
  const r = run(path);
  const missing = expected.filter((e) => !r.stderr.includes(e));
  if (r.status !== 1 || missing.length) {
    failures++;
    console.error(`FAIL: ${name}: exit ${r.status} (want 1), missing ${JSON.stringify(missing)} in:\n${r.stderr}`);
  } else {
    console.log(`ok: ${name} rejected`);
  }
}

const server = (d) => d.spec.template.spec.containers[0];

expectValid(join(example, "deployment.yaml"));
expectValid(example);
expectInvalid("wrong-type", "deployment.yaml", (d) => ({ ...d, spec: { ...d.spec, replicas: "one" } }),
  ["wrong-type.yaml: document 1 (Deployment", "/spec/replicas: must be integer"]);
expectInvalid("missing-containers", "deployment.yaml", (d) => { delete d.spec.template.spec.containers; return d; },
  ["/spec/template/spec: must have required property containers"]);
expectInvalid("missing-image-name", "deployment.yaml", (d) => { delete server(d).name; return d; },
  ["/spec/template/spec/containers/0: must have required property name"]);
expectInvalid("unknown-field", "deployment.yaml", (d) => { d.spec.replica = d.spec.replicas; delete d.spec.replicas; return d; },
  ['/spec/replica: unknown field "replica"']);
expectInvalid("unknown-nested-fields", "deployment.yaml", (d) => {
  server(d).imagePullPolcy = server(d).imagePullPolicy;
  server(d).readinessProbe.httpGet.paths = "/health";
  d.spec.template.spec.volumes[0].emptyDir2 = {};
  return d;
}, ['/spec/template/spec/containers/0/imagePullPolcy: unknown field', '/spec/template/spec/containers/0/readinessProbe/httpGet/paths: unknown field',
    '/spec/template/spec/volumes/0/emptyDir2: unknown field']);
expectInvalid("bad-quantity", "deployment.yaml", (d) => { server(d).resources.requests.memory = "lots"; return d; },
  ['/spec/template/spec/containers/0/resources/requests/memory: must match format "quantity"']);
expectInvalid("bad-enum", "deployment.yaml", (d) => { server(d).ports[0].protocol = "HTTP"; return d; },
  ["/spec/template/spec/containers/0/ports/0/protocol: must be equal to one of the allowed values"]);
expectInvalid("service-port-type", "service.yaml", (d) => { d.spec.ports[0].port = "http"; d.spec.clusterIp = "None"; return d; },
  ["/spec/ports/0/port: must be integer", '/spec/clusterIp: unknown field "clusterIp"']);
expectInvalid("unknown-kind", "service.yaml", (d) => ({ ...d, apiVersion: "v1", kind: "Servce" }),
  ['apiVersion "v1" kind "Servce" is not a Kubernetes API type']);
expectInvalid("second-document", "service.yaml", { text: (t) => `${t}---\napiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports: 80\n` },
  ["second-document.yaml: document 2 (Service x): /spec/ports: must be array"]);
expectInvalid("bad-yaml", "service.yaml", { text: (t) => `${t}  selector: [\n` }, ["bad-yaml.yaml: document 1: YAML:"]);

rmSync(tmp, { recursive: true, force: true });
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("validate_k8s.mjs accepts the example and rejects every broken copy");
