// The sampling fields of `plexus serve` driven by the official OpenAI SDK (npm `openai`): n,
// presence/frequency/repetition penalties, logit_bias, stop_token_ids, echo with logprobs (the
// prompt's log-probabilities), each alone and again under 16 concurrent clients (the same
// answers: greedy and seeded requests do not depend on what shares the batch); out-of-range
// values as 400s naming the field; a non-streaming client process that closes its connection
// early has its request cancelled (seen in /metrics, not by timing).
//
// The model is make-model's tiny random llama (seed 0) with the llama3 tokenizer: its raw logits
// lie within about 1 of one another, so biases of a few units decide the greedy token and the
// penalties' effect is predictable from vLLM's formulas with margins of 2 or more.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import OpenAI, { BadRequestError } from 'openai';
import { env, makeModel, metricValue, readSse, scratchDir, startServer } from './serve_process.mjs';

setTimeout(() => { console.error('sampling.test: overall limit of 240 s reached'); process.exit(1); }, 240_000).unref();

const kName = 'tiny';
let server;
let client;

before(async () => {
  const plexus = env('PLEXUS_BINARY');
  const model = makeModel(plexus, join(scratchDir('plexus-sampling-'), 'model'), ['--tokenizer', env('PLEXUS_TOKENIZER_DIR')]);
  server = await startServer({
    plexus, model, limitS: 300,
    args: ['--served-model-name', kName, '--max-sequences', '16', '--threads', '2'],
  });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60_000 });
});

after(async () => {
  if (server) await server.stop(5);
});

async function post(path, body) {
  const r = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, `${path}: ${r.status}`);
  return r.json();
}
const tokenize = async (prompt) => (await post('/tokenize', { prompt, add_special_tokens: false })).tokens;
const detokenize = async (tokens) => (await post('/detokenize', { tokens })).prompt;
async function metrics() {
  const r = await fetch(`${server.url}/metrics`);
  assert.equal(r.status, 200);
  return r.text();
}

const kPrompt = 'The quick brown fox';
const kA = 1000;  // token ids absent from kPrompt's tokens
const kB = 2000;
const greedy = { model: kName, prompt: kPrompt, temperature: 0, ignore_eos: true };

// What each check asked and got alone, asked again by 16 concurrent clients at the end.
const alone = [];
async function ask(params, keep = (r) => r.choices.map((c) => ({ index: c.index, text: c.text, finish_reason: c.finish_reason, logprobs: c.logprobs }))) {
  const r = await client.completions.create(params);
  alone.push({ params, want: keep(r) });
  return r;
}

test('n: seeded choices differ, repeat with the seed, choice 0 is the one-choice request; streamed alike', { timeout: 30_000 }, async () => {
  const params = { model: kName, prompt: kPrompt, max_tokens: 12, temperature: 1, seed: 42, n: 3, ignore_eos: true };
  const r = await ask(params);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = r.choices.map((c) => c.text);
  assert.equal(new Set(texts).size, 3, `three seeded choices, not all different: ${JSON.stringify(texts)}`);
  assert.equal(r.usage.completion_tokens, 36, 'completion_tokens: the sum over the choices');
  const again = await client.completions.create(params);
  assert.deepEqual(again.choices.map((c) => c.text), texts, 'the same seed gave other choices');
  const one = await ask({ ...params, n: 1 });
  assert.equal(one.choices[0].text, texts[0], 'choice 0 of n=3 differs from the n=1 request of the same seed');

  const stream = await client.completions.create({ ...params, stream: true });
  const streamed = ['', '', ''];
  const finishes = [null, null, null];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      streamed[c.index] += c.text ?? '';
      if (c.finish_reason) { assert.equal(finishes[c.index], null, `two finish chunks for choice ${c.index}`); finishes[c.index] = c.finish_reason; }
    }
  }
  assert.deepEqual(streamed, texts, 'streamed choices differ from the whole response');
  assert.deepEqual(finishes, ['length', 'length', 'length']);

  const chat = await client.chat.completions.create({ model: kName, messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, n: 2, temperature: 0 });
  assert.equal(chat.choices.length, 2);
  assert.equal(chat.choices[0].message.content, chat.choices[1].message.content, 'greedy chat choices differ');
});

test('logit_bias: +100 forces a token; -100 on the greedy token changes it', { timeout: 30_000 }, async () => {
  const forced = await ask({ ...greedy, max_tokens: 4, logit_bias: { [kA]: 100 } });
  assert.equal(forced.choices[0].text, await detokenize([kA, kA, kA, kA]), 'a +100 bias did not force its token');
  // The greedy first token's id: its text tokenized again (a token whose text round-trips).
  let checked = 0;
  for (const prompt of [kPrompt, 'Hello', 'Once upon a time', 'A B C', '1 2 3', 'the end']) {
    const plain = await client.completions.create({ ...greedy, prompt, max_tokens: 1 });
    const text = plain.choices[0].text;
    const ids = await tokenize(text);
    if (ids.length !== 1 || (await detokenize(ids)) !== text) continue;
    const banned = await ask({ ...greedy, prompt, max_tokens: 1, logit_bias: { [ids[0]]: -100 } });
    assert.notEqual(banned.choices[0].text, text, `a -100 bias on the greedy token ${ids[0]} (${JSON.stringify(text)}) left it greedy`);
    ++checked;
  }
  assert.ok(checked >= 2, `only ${checked} prompts had a greedy token whose text round-trips through /tokenize`);
});

test('penalties: vLLM\'s formulas decide between two biased tokens', { timeout: 30_000 }, async () => {
  const [a, b] = [kA, kB];
  const plain = await ask({ ...greedy, max_tokens: 3, logit_bias: { [a]: 10, [b]: 8 } });
  assert.equal(plain.choices[0].text, await detokenize([a, a, a]), 'without penalties the larger bias wins every step');
  // presence 2 + frequency 2: a repeat of A costs 4, then 2 more per time: A (10 vs 8), B (6 vs 8), A (6 vs 4).
  const fp = await ask({ ...greedy, max_tokens: 3, logit_bias: { [a]: 10, [b]: 8 }, presence_penalty: 2, frequency_penalty: 2 });
  assert.equal(fp.choices[0].text, await detokenize([a, b, a]), 'presence + frequency penalties');
  // repetition 2 (positive logits divided): A (30 vs 20), B (15 vs 20), A (15 vs 10), A (15 vs 10).
  const rep = await ask({ ...greedy, max_tokens: 4, logit_bias: { [a]: 30, [b]: 20 }, repetition_penalty: 2 });
  assert.equal(rep.choices[0].text, await detokenize([a, b, a, a]), 'repetition penalty');
  // The repetition penalty counts the prompt's tokens too: B in the prompt is penalized from the start.
  const inPrompt = await ask({ ...greedy, prompt: [a + 1, b], max_tokens: 1, logit_bias: { [a]: 30, [b]: 40 }, repetition_penalty: 2 });
  assert.equal(inPrompt.choices[0].text, await detokenize([a]), 'a prompt token is not penalized by repetition_penalty (40 / 2 < 30)');
  // Penalties count each choice's own output: two greedy choices are the same sequence.
  const two = await ask({ ...greedy, max_tokens: 3, n: 2, logit_bias: { [a]: 10, [b]: 8 }, presence_penalty: 2, frequency_penalty: 2 });
  assert.deepEqual(two.choices.map((c) => c.text), [fp.choices[0].text, fp.choices[0].text]);
});

test('stop_token_ids end a choice with "stop"; the stop token is not sent', { timeout: 30_000 }, async () => {
  const [a, b] = [kA, kB];
  const first = await ask({ ...greedy, max_tokens: 4, logit_bias: { [a]: 100 }, stop_token_ids: [a] });
  assert.equal(first.choices[0].finish_reason, 'stop');
  assert.equal(first.choices[0].text, '');
  assert.equal(first.usage.completion_tokens, 1, 'the stop token counts as generated');
  const later = await ask({ ...greedy, max_tokens: 6, logit_bias: { [a]: 10, [b]: 8 }, presence_penalty: 2, frequency_penalty: 2, stop_token_ids: [b] });
  assert.equal(later.choices[0].finish_reason, 'stop');
  assert.equal(later.choices[0].text, await detokenize([a]), 'A, then B stops');
  assert.equal(later.usage.completion_tokens, 2);
});

test('echo with logprobs: the prompt\'s log-probabilities, the first null; each equals the forced token\'s', { timeout: 30_000 }, async () => {
  const ids = await tokenize(`${kPrompt} jumps over`);
  assert.ok(ids.length >= 5, `prompt tokens ${ids}`);
  const r = await ask({ ...greedy, prompt: ids, max_tokens: 3, echo: true, logprobs: 2 });
  const c = r.choices[0];
  const lp = c.logprobs;
  const echoed = await detokenize(ids);
  assert.ok(c.text.startsWith(echoed), `the text does not start with the prompt: ${JSON.stringify(c.text)}`);
  assert.equal(lp.tokens.length, ids.length + 3, 'one entry per prompt and completion token');
  assert.equal(lp.token_logprobs[0], null, 'the first prompt token has no log-probability');
  assert.equal(lp.top_logprobs[0], null, 'nor top_logprobs');
  assert.equal(lp.text_offset[0], 0);
  for (let i = 1; i < lp.tokens.length; ++i) {
    assert.ok(typeof lp.token_logprobs[i] === 'number' && lp.token_logprobs[i] <= 0, `token_logprobs[${i}] ${lp.token_logprobs[i]}`);
    assert.equal(Object.keys(lp.top_logprobs[i]).length, 2, `top_logprobs[${i}]`);
    assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'text_offset decreases');
  }
  for (let i = 0; i < ids.length; ++i) assert.equal(lp.tokens[i], await detokenize([ids[i]]), `prompt token ${i}`);
  // Prompt position p's log-probability is that of token p after the prompt's first p tokens: the
  // log-probability (of the raw logits, before the bias) of that token forced as the next one.
  for (const p of [1, 2, ids.length - 1]) {
    const f = await client.completions.create({ ...greedy, prompt: ids.slice(0, p), max_tokens: 1, logprobs: 0, logit_bias: { [ids[p]]: 100 } });
    assert.equal(f.choices[0].text, await detokenize([ids[p]]));
    assert.ok(Math.abs(f.choices[0].logprobs.token_logprobs[0] - lp.token_logprobs[p]) < 1e-3,
      `position ${p}: echo says ${lp.token_logprobs[p]}, the token forced after the prefix ${f.choices[0].logprobs.token_logprobs[0]}`);
  }
  // The completion's part equals the completion without echo.
  const plain = await client.completions.create({ ...greedy, prompt: ids, max_tokens: 3, logprobs: 2 });
  assert.deepEqual(lp.token_logprobs.slice(ids.length), plain.choices[0].logprobs.token_logprobs);
  assert.equal(c.text, echoed + plain.choices[0].text);

  // max_tokens 0 (as vLLM, e.g. for scoring a text): the prompt alone, scored.
  const scoredOnly = await ask({ ...greedy, prompt: ids, max_tokens: 0, echo: true, logprobs: 2 });
  assert.equal(scoredOnly.choices[0].text, echoed);
  assert.equal(scoredOnly.choices[0].finish_reason, 'length');
  assert.equal(scoredOnly.usage.completion_tokens, 0);
  for (const k of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset']) {
    assert.deepEqual(scoredOnly.choices[0].logprobs[k], lp[k].slice(0, ids.length), `max_tokens 0: ${k}`);
  }

  // Streamed: the echo chunk carries the prompt's entries; all chunks together are the whole response's.
  const stream = await client.completions.create({ ...greedy, prompt: ids, max_tokens: 3, echo: true, logprobs: 2, n: 2, stream: true });
  const got = [0, 1].map(() => ({ text: '', tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] }));
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      got[ch.index].text += ch.text ?? '';
      if (!ch.logprobs) continue;
      for (const k of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset']) got[ch.index][k].push(...ch.logprobs[k]);
    }
  }
  for (const g of got) {
    assert.equal(g.text, c.text, 'streamed echo text');
    assert.deepEqual({ ...g, text: undefined }, { ...lp, text: undefined }, 'streamed logprobs differ from the whole response\'s');
  }
});

test('out-of-range values are 400s naming the field (param)', { timeout: 30_000 }, async () => {
  const bad = [
    [{ n: 17 }, 'n'], [{ n: 0 }, 'n'],
    [{ presence_penalty: 2.5 }, 'presence_penalty'], [{ frequency_penalty: -3 }, 'frequency_penalty'],
    [{ repetition_penalty: 0 }, 'repetition_penalty'], [{ min_p: 1.5 }, 'min_p'],
    [{ logit_bias: { abc: 1 } }, 'logit_bias'], [{ logit_bias: { 5: 101 } }, 'logit_bias'],
    [{ logit_bias: { 999999999: 1 } }, 'logit_bias'], [{ logit_bias: { 200000: 1 } }, 'logit_bias'],
    [{ stop_token_ids: [-1] }, 'stop_token_ids'], [{ stop_token_ids: [200000] }, 'stop_token_ids'],
    [{ suffix: 'x' }, 'suffix'],
  ];
  for (const [extra, param] of bad) {
    const e = await client.completions.create({ model: kName, prompt: 'x', max_tokens: 1, ...extra }).catch((x) => x);
    assert.ok(e instanceof BadRequestError, `${JSON.stringify(extra)}: ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.param, param, `${JSON.stringify(extra)}: param ${e.param} (${e.message})`);
  }
});

test('16 concurrent clients get what each request got alone', { timeout: 60_000 }, async () => {
  assert.ok(alone.length >= 12, `${alone.length} requests recorded`);
  const jobs = Array.from({ length: 16 }, (_, i) => alone[i % alone.length]);
  const got = await Promise.all(jobs.map((j) => client.completions.create(j.params)));
  for (let i = 0; i < jobs.length; ++i) {
    const want = jobs[i].want;
    const have = got[i].choices.map((c) => ({ index: c.index, text: c.text, finish_reason: c.finish_reason, logprobs: c.logprobs }));
    assert.equal(have.length, want.length);
    for (let k = 0; k < want.length; ++k) {
      assert.equal(have[k].text, want[k].text, `request ${JSON.stringify(jobs[i].params)} choice ${k}: text under load`);
      assert.equal(have[k].finish_reason, want[k].finish_reason);
      if (want[k].logprobs) {
        assert.deepEqual(have[k].logprobs.tokens, want[k].logprobs.tokens);
        want[k].logprobs.token_logprobs.forEach((v, t) => {
          const h = have[k].logprobs.token_logprobs[t];
          assert.ok(v === null ? h === null : Math.abs(h - v) < 1e-4, `logprob ${t}: ${h} under load, ${v} alone`);
        });
      }
    }
  }
});

test('a non-streaming client process that closes its connection cancels its request', { timeout: 60_000 }, async () => {
  const before = await metrics();
  const finished0 = metricValue(before, 'plexus_requests_finished_total', 'reason="finished"');
  const cancelled0 = metricValue(before, 'plexus_requests_finished_total', 'reason="cancelled"');
  const closed0 = metricValue(before, 'plexus_requests_total', 'status="499"') ?? 0;
  // curl, a process of its own, waits for the whole answer of a 2000-token completion (seconds of work).
  const body = JSON.stringify({ model: kName, prompt: 'Tell me a long story', max_tokens: 2000, temperature: 0, ignore_eos: true });
  const curl = spawn('curl', ['-sS', '-o', '/dev/null', `${server.url}/v1/completions`, '-H', 'Content-Type: application/json', '-d', body],
    { stdio: 'ignore' });
  const exited = new Promise((r) => curl.on('exit', r));
  // Once the request runs (the running gauge says so), the client process ends: its socket closes.
  let running = 0;
  for (let i = 0; i < 500 && running < 1; ++i) {
    running = metricValue(await metrics(), 'plexus_requests_running');
    if (running < 1) await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(running, 1, 'the request never ran');
  curl.kill('SIGTERM');
  await exited;
  let text = '';
  for (let i = 0; i < 500; ++i) {
    text = await metrics();
    if (metricValue(text, 'plexus_requests_running') === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(metricValue(text, 'plexus_requests_running'), 0, 'the request still runs after its client left');
  assert.equal(metricValue(text, 'plexus_requests_finished_total', 'reason="cancelled"') - cancelled0, 1, 'cancelled requests');
  assert.equal(metricValue(text, 'plexus_requests_finished_total', 'reason="finished"') - finished0, 0,
    'the request ran to max_tokens although its client left');
  assert.equal(metricValue(text, 'plexus_requests_total', 'status="499"') - closed0, 1, 'the request counted as closed by the client (499)');
});
