// One `plexus serve` process for the client tests and the serve benchmark: made on a free loopback
// port (--port 0, the port read from its "listening on" line), ready once /health answers 200, and
// always ended — by stop(), at this process's exit, or by coreutils `timeout` if node itself is killed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The settings CTest passes (tests/serve/clients/CMakeLists.txt); a clear message when run by hand without them.
export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this test through ctest (ctest -R serve_clients), or set ${name} yourself`);
  return value;
}

// A scratch directory removed at exit.
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// `plexus make-model DIR ...` (a tiny random model by default); throws with plexus' stderr when it fails.
export function makeModel(plexus, dir, args) {
  const r = spawnSync(plexus, ['make-model', dir, ...args], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) {
    throw new Error(`plexus make-model ${dir} ${args.join(' ')} failed (exit ${r.status}, signal ${r.signal}):\n${r.stderr}`);
  }
  return dir;
}

const live = new Set();  // servers not stopped yet: killed at exit whatever happened
function killAll() {
  for (const s of live) s.kill('SIGKILL');
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAll(); process.exit(128 + (sig === 'SIGINT' ? 2 : 15)); });
}

// The pid of `parent`'s only child (the server under `timeout`), from /proc.
function childPid(parent) {
  try {
    const kids = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (kids.length) return Number(kids[0]);
  } catch { /* no children file: scan /proc below */ }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) return Number(entry);
    } catch { /* gone meanwhile */ }
  }
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A time limit raced against an event: unref'd, so that a pending limit does not keep node alive.
const limit = (ms, value) => new Promise((r) => setTimeout(() => r(value), ms).unref());

// Starts `plexus serve MODEL --host 127.0.0.1 --port 0 ARGS...` under `timeout LIMIT_S` and waits
// until /health answers 200. Returns { url, port, pid, rssKiB(), stderr(), stop() }.
export async function startServer({ plexus, model, args = [], limitS = 600, readyS = 120, apiKey, env: extraEnv }) {
  const argv = ['--kill-after=5', String(limitS), plexus, 'serve', model, '--host', '127.0.0.1', '--port', '0', ...args];
  const child = spawn('timeout', argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CUDA_VISIBLE_DEVICES: '', ...extraEnv },
  });
  let err = '';
  let out = '';
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  child.stdout.on('data', (d) => { out += d; });
  let pid = null;
  const server = {
    url: null, port: null,
    get pid() { return pid; },
    stderr: () => err,
    stdout: () => out,
    kill(sig) {
      if (pid) try { process.kill(pid, sig); } catch { /* gone */ }
      if (exited === null) try { child.kill(sig); } catch { /* gone */ }
    },
    // VmRSS of the server process in KiB (Linux /proc).
    rssKiB() {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
      return Number(m[1]);
    },
    // SIGTERM (the server drains and exits), SIGKILL after `graceS`; resolves to { code, signal } of
    // the server (timeout passes its exit status on), or { code: null, signal: 'SIGKILL', forced: true }.
    async stop(graceS = 30) {
      if (exited) { live.delete(server); return exited; }
      if (pid) try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } else child.kill('SIGTERM');
      const res = await Promise.race([exit, limit(graceS * 1000, null)]);
      live.delete(server);
      if (res) return res;
      server.kill('SIGKILL');
      await exit;
      return { code: null, signal: 'SIGKILL', forced: true };
    },
  };
  live.add(server);

  const fail = async (why) => {
    await server.stop(5);
    throw new Error(`plexus serve ${model} ${args.join(' ')}: ${why}\n--- its stderr ---\n${err}`);
  };
  // The "listening on http://HOST:PORT" line on stderr.
  const listening = new Promise((resolve) => {
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^\s:]+:(\d+)/.exec(err);
      if (m) resolve(Number(m[1]));
    });
  });
  const port = await Promise.race([listening, exit.then(() => null), limit(readyS * 1000, undefined)]);
  if (port === null) return fail(`exited (${JSON.stringify(exited)}) before printing "listening on http://HOST:PORT"`);
  if (port === undefined) return fail(`printed no "listening on http://HOST:PORT" line within ${readyS} s`);
  server.port = port;
  server.url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 50 && !pid; ++i) { pid = childPid(child.pid); if (!pid) await sleep(20); }
  if (!pid) return fail(`cannot find the server's pid under timeout (pid ${child.pid})`);

  const deadline = Date.now() + readyS * 1000;
  let last = '';
  while (Date.now() < deadline) {
    if (exited) return fail(`exited (${JSON.stringify(exited)}) while loading`);
    try {
      const r = await fetch(`${server.url}/health`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
      last = `${r.status} ${await r.text()}`;
      if (r.status === 200) return server;
    } catch (e) { last = String(e); }
    await sleep(100);
  }
  return fail(`/health did not answer 200 within ${readyS} s (last: ${last})`);
}

// The sum of a Prometheus metric's samples in /metrics text — every label set, or those whose
// labels include `label` (e.g. 'reason="cancelled"'); null when absent.
export function metricValue(text, name, label) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && m[1] === name && (!label || (m[2] ?? '').includes(label))) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

// Reads a server-sent-events response body: the `data:` payloads in order (strings).
export async function readSse(response) {
  const decoder = new TextDecoder();
  let buf = '';
  const events = [];
  for await (const chunk of response.body) {
    buf = (buf + decoder.decode(chunk, { stream: true })).replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) events.push(data);
    }
  }
  buf += decoder.decode();
  if (buf.trim()) events.push({ incomplete: buf });
  return events;
}
