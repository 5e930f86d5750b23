// Structured output and tool calls of `plexus serve` through the official OpenAI SDK (npm
// `openai`), on a random-weight model (which writes garbage unless constrained):
//   - response_format json_schema: random schemas (objects, arrays, enums, bounded numbers,
//     nested, required), every answer parsed and validated by ajv, streaming and not, with n > 1;
//     json_object; the grammar extension; the same answers again under 16 concurrent clients;
//   - tools with tool_choice "required" and a named function: the answers' tool_calls parse and
//     their arguments validate against the function's parameters, streaming (tool_calls deltas) and not;
//   - bad schemas and grammars as 400s naming the field.
// The model is make-model's tiny random llama (seed 0) with the llama3 tokenizer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import OpenAI, { BadRequestError } from 'openai';
import Ajv from 'ajv';
import { env, makeModel, scratchDir, startServer } from './serve_process.mjs';

setTimeout(() => { console.error('structured.test: overall limit of 280 s reached'); process.exit(1); }, 280_000).unref();

const kName = 'tiny';
const kSchemas = Number(process.env.PLEXUS_STRUCTURED_SCHEMAS || 200);
let server;
let client;
const ajv = new Ajv({ strict: false, allErrors: true });

before(async () => {
  const plexus = env('PLEXUS_BINARY');
  const model = makeModel(plexus, join(scratchDir('plexus-structured-'), 'model'), ['--tokenizer', env('PLEXUS_TOKENIZER_DIR')]);
  server = await startServer({
    plexus, model, limitS: 300,
    args: ['--served-model-name', kName, '--max-sequences', '16', '--threads', '2', '--context', '1024'],
  });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
});

after(async () => {
  if (server) await server.stop(5);
});

// A seeded generator (mulberry32), so that a failing schema can be made again.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A random schema of depth at most `depth`: objects (required, additionalProperties false),
// arrays (minItems/maxItems), strings (enum, maxLength), integers and numbers with bounds,
// booleans, enums and consts. Kept small, so that answers fit in max_tokens.
function randomSchema(r, depth) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const kinds = depth > 0 ? ['object', 'array', 'string', 'integer', 'number', 'boolean', 'enum'] : ['string', 'integer', 'number', 'boolean', 'enum'];
  const kind = pick(kinds);
  switch (kind) {
    case 'object': {
      const n = 1 + Math.floor(r() * 3);
      const properties = {};
      const names = ['id', 'name', 'size', 'ok', 'tags', 'kind'];
      for (let i = 0; i < n; ++i) properties[names[(i + Math.floor(r() * 6)) % 6] + i] = randomSchema(r, depth - 1);
      const keys = Object.keys(properties);
      return { type: 'object', properties, required: keys.filter(() => r() < 0.6), additionalProperties: false };
    }
    case 'array': {
      const min = Math.floor(r() * 2);
      return { type: 'array', items: randomSchema(r, depth - 1), minItems: min, maxItems: min + 1 + Math.floor(r() * 2) };
    }
    case 'string':
      return r() < 0.5 ? { type: 'string', maxLength: 1 + Math.floor(r() * 8) } : { type: 'string', enum: ['red', 'green', 'blue'].slice(0, 1 + Math.floor(r() * 3)) };
    case 'integer': {
      const lo = Math.floor(r() * 200) - 100;
      return { type: 'integer', minimum: lo, maximum: lo + Math.floor(r() * 1000) };
    }
    case 'number': {
      const lo = Math.round((r() * 20 - 10) * 10) / 10;
      return { type: 'number', minimum: lo, maximum: lo + 1 + Math.floor(r() * 50) };
    }
    case 'boolean':
      return { type: 'boolean' };
    default:
      return { enum: pick([['a', 'b'], [1, 2, 3], [true, null, 'x']]) };
  }
}

async function structured(schema, extra = {}) {
  return client.chat.completions.create({
    model: kName,
    messages: [{ role: 'user', content: 'Answer in JSON.' }],
    response_format: { type: 'json_schema', json_schema: { name: 's', schema } },
    max_tokens: 400,
    temperature: 0.8,
    seed: 7,
    ...extra,
  });
}

function checkAnswer(schema, text, finish, where) {
  // A choice cut by max_tokens says so ("length"); a complete one must parse and validate.
  if (finish === 'length') return false;
  assert.equal(finish, 'stop', `${where}: finish_reason ${finish}`);
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    assert.fail(`${where}: the answer is not JSON: ${JSON.stringify(text)}\nschema ${JSON.stringify(schema)}`);
  }
  const validate = ajv.compile(schema);
  assert.ok(validate(value), `${where}: ${JSON.stringify(value)} does not validate: ${ajv.errorsText(validate.errors)}\nschema ${JSON.stringify(schema)}`);
  return true;
}

const asked = [];  // [schema, extra, texts] asked alone: asked again by 16 concurrent clients at the end

test('random JSON schemas: every answer parses and validates, whole and streamed, n = 2', async () => {
  const r = rng(1234);
  let complete = 0;
  for (let i = 0; i < kSchemas; ++i) {
    const schema = randomSchema(r, 2);
    const extra = { n: i % 5 === 0 ? 2 : 1 };
    if (i % 2 === 0) {
      const res = await structured(schema, extra);
      assert.equal(res.choices.length, extra.n);
      for (const c of res.choices) complete += checkAnswer(schema, c.message.content, c.finish_reason, `schema ${i} choice ${c.index}`);
      asked.push([schema, extra, res.choices.map((c) => c.message.content)]);
    } else {
      const stream = await structured(schema, { ...extra, stream: true });
      const texts = Array(extra.n).fill('');
      const finish = Array(extra.n).fill(null);
      for await (const chunk of stream) {
        for (const c of chunk.choices) {
          texts[c.index] += c.delta?.content ?? '';
          if (c.finish_reason) finish[c.index] = c.finish_reason;
        }
      }
      for (let k = 0; k < extra.n; ++k) complete += checkAnswer(schema, texts[k], finish[k], `schema ${i} (streamed) choice ${k}`);
    }
  }
  assert.ok(complete >= kSchemas * 0.8, `only ${complete} answers completed within max_tokens`);
});

test('json_object and the grammar extension', async () => {
  const obj = await client.chat.completions.create({
    model: kName, messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' }, max_tokens: 300, temperature: 0.7, seed: 3,
  });
  if (obj.choices[0].finish_reason === 'stop') {
    const v = JSON.parse(obj.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(v !== null && !Array.isArray(v));
  }
  const grammar = 'root ::= "The answer is " ("yes" | "no" | [0-9]{1,3}) "."';
  for (let seed = 0; seed < 5; ++seed) {
    const res = await client.completions.create({ model: kName, prompt: 'Q?', max_tokens: 20, temperature: 1, seed, grammar });
    assert.match(res.choices[0].text, /^The answer is (yes|no|[0-9]{1,3})\.$/);
    assert.equal(res.choices[0].finish_reason, 'stop');
  }
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'], additionalProperties: false },
  },
};
const timeTool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'], additionalProperties: false } },
};

function checkCalls(calls, where) {
  assert.ok(calls.length >= 1, `${where}: no tool call`);
  for (const call of calls) {
    assert.equal(call.type, 'function');
    assert.ok(call.id, `${where}: a call without an id`);
    const tool = [weatherTool, timeTool].find((t) => t.function.name === call.function.name);
    assert.ok(tool, `${where}: unknown function ${call.function.name}`);
    const validate = ajv.compile(tool.function.parameters);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validate(args), `${where}: ${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
}

test('tool_choice required and a named function: calls that parse and validate, whole and streamed', async () => {
  let called = 0;
  for (const [choice, stream] of [['required', false], ['required', true], [{ type: 'function', function: { name: 'get_time' } }, false], [{ type: 'function', function: { name: 'get_weather' } }, true]]) {
    const params = { model: kName, messages: [{ role: 'user', content: 'Weather in Oslo and the time?' }], tools: [weatherTool, timeTool], tool_choice: choice, max_tokens: 300, temperature: 0.8, seed: 11 };
    const where = `tool_choice ${JSON.stringify(choice)}${stream ? ' (streamed)' : ''}`;
    let calls;
    let finish;
    if (!stream) {
      const res = await client.chat.completions.create(params);
      calls = res.choices[0].message.tool_calls ?? [];
      finish = res.choices[0].finish_reason;
    } else {
      const byIndex = new Map();
      for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
        const c = chunk.choices[0];
        if (!c) continue;
        for (const d of c.delta?.tool_calls ?? []) {
          const cur = byIndex.get(d.index) ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
          if (d.id) cur.id = d.id;
          if (d.function?.name) cur.function.name += d.function.name;
          if (d.function?.arguments) cur.function.arguments += d.function.arguments;
          byIndex.set(d.index, cur);
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      calls = [...byIndex.values()];
    }
    if (finish === 'length') continue;  // cut by max_tokens: said so
    assert.equal(finish, 'tool_calls', where);
    checkCalls(calls, where);
    if (typeof choice === 'object') for (const c of calls) assert.equal(c.function.name, choice.function.name, where);
    ++called;
  }
  assert.ok(called >= 3, `only ${called} of 4 answers finished within max_tokens`);
});

test('the same structured answers under 16 concurrent clients', async () => {
  const jobs = [];
  for (let k = 0; k < 16; ++k) {
    const [schema, extra, want] = asked[k % asked.length];
    jobs.push(structured(schema, extra).then((res) => assert.deepEqual(res.choices.map((c) => c.message.content), want, `schema ${JSON.stringify(schema)}`)));
  }
  await Promise.all(jobs);
});

test('bad schemas and grammars are 400s naming the field', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strange' } } } }, 'response_format'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a+$', format: 'madeup' } } } }, 'response_format'],
    [{ grammar: 'root ::= "a' }, 'grammar'],
    [{ grammar: 'root ::= missing' }, 'grammar'],
  ];
  for (const [extra, param] of cases) {
    await assert.rejects(
      client.chat.completions.create({ model: kName, messages: [{ role: 'user', content: 'x' }], max_tokens: 5, ...extra }),
      (e) => e instanceof BadRequestError && e.status === 400 && e.param === param,
      JSON.stringify(extra),
    );
  }
});
