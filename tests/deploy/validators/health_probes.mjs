// Runs every generated compose.yaml's healthcheck test (parsed by the yaml package) against a
// local HTTP server: the probe must pass while /health answers 200, and fail when it answers 503
// and when nothing listens. The spec's port in the probe is swapped for the server's.
// usage: node health_probes.mjs COMPOSE_YAML ...   exit 1 on any probe that misjudges.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { spawn } from "node:child_process";
import { parse } from "yaml";

let status = 200;
const server = createServer((req, res) => {
  res.writeHead(req.url === "/health" ? status : 404, { "Content-Type": "text/plain" });
  res.end("probe\n");
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const port = server.address().port;

// The probe as Docker runs it (CMD: argv; CMD-SHELL: sh -c), asynchronously so that the server in
// this process answers meanwhile. Resolves to the exit code.
function probe(test, specPort) {
  const [kind, ...argv] = test.map((w) =>
    w.replaceAll(`localhost:${specPort}/`, `localhost:${port}/`).replaceAll(`/dev/tcp/localhost/${specPort} `, `/dev/tcp/localhost/${port} `));
  const cmd = kind === "CMD-SHELL" ? ["sh", "-c", argv.join(" ")] : argv;
  return new Promise((ok) => {
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["ignore", "ignore", "ignore"], timeout: 10000 });
    child.on("error", () => ok(127));
    child.on("close", (code) => ok(code));
  });
}

const cases = [];
for (const file of process.argv.slice(2)) {
  const doc = parse(readFileSync(file, "utf8"));
  for (const [name, svc] of Object.entries(doc.services)) {
    cases.push({ where: `${file}: ${name}`, test: svc.healthcheck?.test, specPort: String(svc.ports?.[0] ?? "").split(":").pop() });
  }
}
const results = [];
for (const c of cases) {
  if (!Array.isArray(c.test)) { results.push({ ...c, problem: "no healthcheck test" }); continue; }
  status = 200;
  c.up = await probe(c.test, c.specPort);
  status = 503;
  c.sick = await probe(c.test, c.specPort);
  results.push(c);
}
await new Promise((ok) => server.close(ok));
let failed = false;
for (const c of results) {
  if (c.problem) { console.log(`${c.where}: ${c.problem}`); failed = true; continue; }
  const down = await probe(c.test, c.specPort);
  const right = c.up === 0 && c.sick !== 0 && down !== 0;
  console.log(`${c.where}: ${c.test[1]} probe exits ${c.up} when healthy, ${c.sick} on 503, ${down} with no server: ${right ? "ok" : "WRONG"}`);
  if (!right) failed = true;
}
process.exit(failed ? 1 : 0);
