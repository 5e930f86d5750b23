// Aggregate generated tokens/s of OpenAI-compatible servers at several client concurrencies:
// C clients each send requests back to back (raw fetch, /v1/completions, greedy, fixed
// max_tokens, ignore_eos where the server takes it) until the point's fixed number of requests is
// done; tokens/s = the completion_tokens of all requests / the point's wall time. Servers are
// measured in turn for every point and repeat (interleaved), and the median of the repeats is
// reported, with the ratio of each server to the first one (the baseline) per concurrency.
// usage: node serve_bench.mjs --server NAME=URL [--server NAME=URL ...] [--concurrency 1,4,16,64]
//          [--requests-per-client 2] [--min-requests 8] [--max-tokens 16] [--repeats 3] [--json OUT]
//          [--model NAME] [--baseline NAME]
import { writeFileSync } from 'node:fs';

function parseArgs(argv) {
  const a = { servers: [], concurrency: [1, 4, 16, 64], perClient: 2, minRequests: 8, maxTokens: 16, repeats: 3, json: null, model: 'm', baseline: null };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === '--server') { const [name, url] = v.split(/=(.*)/s); if (!url) throw new Error(`--server ${v}: give NAME=URL`); a.servers.push({ name, url: url.replace(/\/$/, '') }); }
    else if (k === '--concurrency') a.concurrency = v.split(',').map(Number);
    else if (k === '--requests-per-client') a.perClient = Number(v);
    else if (k === '--min-requests') a.minRequests = Number(v);
    else if (k === '--max-tokens') a.maxTokens = Number(v);
    else if (k === '--repeats') a.repeats = Number(v);
    else if (k === '--json') a.json = v;
    else if (k === '--model') a.model = v;
    else if (k === '--baseline') a.baseline = v;
    else throw new Error(`unknown option ${k}`);
  }
  if (!a.servers.length) throw new Error('give at least one --server NAME=URL');
  for (const n of [...a.concurrency, a.perClient, a.minRequests, a.maxTokens, a.repeats]) {
    if (!Number.isInteger(n) || n < 1) throw new Error(`counts must be positive integers (got ${n})`);
  }
  return a;
}

const words = ['river', 'stone', 'quiet', 'engine', 'maple', 'orbit', 'copper', 'lantern', 'violet', 'harbor'];
// Request i's prompt: distinct per request, all of similar length (about 16 tokens).
const promptOf = (i) => `Note ${i}: ${Array.from({ length: 8 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' ')}`;

async function complete(server, body) {
  const r = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${server.name}: HTTP ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

// Whether the server accepts ignore_eos (vLLM's and llama.cpp's extension); plexus may or may not.
async function takesIgnoreEos(server, model) {
  try { await complete(server, { model, prompt: 'x', max_tokens: 1, temperature: 0, ignore_eos: true }); return true; } catch { return false; }
}

async function point(server, args, clients, requests, ignoreEos) {
  let next = 0;
  let tokens = 0;
  let short = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let i = next++; i < requests; i = next++) {
      const body = { model: args.model, prompt: promptOf(i), max_tokens: args.maxTokens, temperature: 0 };
      if (ignoreEos) body.ignore_eos = true;
      const r = await complete(server, body);
      tokens += r.usage.completion_tokens;
      if (r.usage.completion_tokens !== args.maxTokens) ++short;
    }
  }));
  const s = (performance.now() - t0) / 1000;
  return { tokens, seconds: s, tokens_per_s: tokens / s, short_requests: short };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ignore = {};
  for (const s of args.servers) {
    ignore[s.name] = await takesIgnoreEos(s, args.model);
    // Warm-up: one request (first-touch of the weights and caches).
    await complete(s, { model: args.model, prompt: promptOf(0), max_tokens: args.maxTokens, temperature: 0 });
  }
  const runs = {};  // name -> concurrency -> [result]
  for (let rep = 0; rep < args.repeats; ++rep) {
    for (const c of args.concurrency) {
      const requests = Math.max(args.minRequests, c * args.perClient);
      for (const s of args.servers) {
        const r = await point(s, args, c, requests, ignore[s.name]);
        ((runs[s.name] ??= {})[c] ??= []).push({ ...r, requests });
        console.error(`repeat ${rep + 1}/${args.repeats} ${s.name} clients=${c} requests=${requests}: ${r.tokens} tokens in ${r.seconds.toFixed(2)} s = ${r.tokens_per_s.toFixed(1)} tok/s`);
      }
    }
  }
  const base = args.baseline ?? args.servers[0].name;
  const table = args.concurrency.map((c) => {
    const row = { clients: c, requests: Math.max(args.minRequests, c * args.perClient) };
    for (const s of args.servers) row[s.name] = median(runs[s.name][c].map((r) => r.tokens_per_s));
    for (const s of args.servers) if (s.name !== base) row[`${s.name}/${base}`] = row[s.name] / row[base];
    return row;
  });
  const names = args.servers.map((s) => s.name);
  const ratios = names.filter((n) => n !== base).map((n) => `${n}/${base}`);
  const header = ['clients', 'requests', ...names.map((n) => `${n} tok/s`), ...ratios];
  const lines = [header, ...table.map((r) => [r.clients, r.requests, ...names.map((n) => r[n].toFixed(1)), ...ratios.map((k) => `${r[k].toFixed(2)}x`)])];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  for (const l of lines) console.log(l.map((x, i) => String(x).padStart(widths[i])).join('  '));
  const shortAll = Object.values(runs).flatMap((byC) => Object.values(byC).flat()).reduce((n, r) => n + r.short_requests, 0);
  if (shortAll) console.log(`note: ${shortAll} requests ended before max_tokens (end of sequence): tokens/s counts the tokens actually generated`);
  if (args.json) {
    writeFileSync(args.json, JSON.stringify({
      max_tokens: args.maxTokens, repeats: args.repeats, statistic: 'median of repeats', baseline: base,
      servers: args.servers.map((s) => ({ ...s, ignore_eos: ignore[s.name] })), table, runs,
    }, null, 2) + '\n');
    console.error(`wrote ${args.json}`);
  }
}

main().catch((e) => { console.error(`serve_bench: ${e.message}`); process.exit(1); });
