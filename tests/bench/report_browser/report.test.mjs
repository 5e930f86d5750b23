// plexus bench's HTML report as a browser shows it: two real `plexus bench` runs on a tiny model
// (the tour's shape — 4 virtual devices, stages, 8 requests in batches of 4 — and a sweep over no
// devices and 2 virtual devices), each report opened in headless Chromium (Debian's chromium,
// through playwright-core) at 1,000 px: a screenshot per section, no horizontal overflow, every
// line chart with data over the whole run, the devices in the utilisation chart, every request's
// latency drawn, the dtype that ran and the reason energy is unavailable.
// Exit 77 (ctest: skipped) when chromium is missing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const kChromium = process.env.PLEXUS_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(kChromium)) {
  console.log(`SKIP: ${kChromium} not found: install Debian's chromium package (scripts/setup.sh does) to check the HTML report in a browser`);
  process.exit(77);
}
const { chromium } = await import('playwright-core');

// The whole file ends within this, whatever hangs (ctest's own timeout is larger).
setTimeout(() => { console.error('report.test: overall limit of 400 s reached'); process.exit(1); }, 400_000).unref();

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this test through ctest (ctest -R bench_report_browser), or set ${name} yourself`);
  return value;
}

const kWidth = 1000;
const plexus = env('PLEXUS_BINARY');
const screenshots = env('PLEXUS_SCREENSHOT_DIR');
const work = mkdtempSync(join(tmpdir(), 'plexus-report-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

function run(args) {
  const r = spawnSync(plexus, args, { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `plexus ${args.join(' ')} failed (exit ${r.status}, signal ${r.signal}):\n${r.stderr}`);
  return r;
}

// Writes a bench config, runs it, returns the path of its HTML report.
function bench(name, backendAndSweep) {
  const yaml = [
    `name: ${name}`,
    `model: ${join(work, 'model')}`,
    backendAndSweep,
    'scenario:',
    '  prompts: ["The capital of France is", "Once upon a time", "Call me Ishmael. Some years ago", "The quick brown fox"]',
    '  num_samples: 8',
    '  batch_size: 4',
    '  max_new_tokens: 48',
    '  ignore_eos: true',
    '  warmup_samples: 1',
    'monitor: {interval_ms: 10}',
    `output: {dir: ${join(work, 'results')}, formats: [json, html]}`,
    '',
  ].join('\n');
  const config = join(work, `${name}.yaml`);
  writeFileSync(config, yaml);
  run(['bench', config]);
  return join(work, 'results', `${name}.html`);
}

let context;
const reports = {};

before(async () => {
  run(['make-model', join(work, 'model'), '--preset', 'tiny', '--dtype', 'bf16', '--seed', '1', '--tokenizer', env('PLEXUS_TOKENIZER_DIR')]);
  reports.tour = bench('tour', 'backend:\n  virtual_devices: 4\n  device_map: stages');
  reports.sweep = bench('sweep', 'backend:\n  device_map: stages\nsweep:\n  backend.virtual_devices: [0, 2]');
  const profile = mkdtempSync(join(tmpdir(), 'plexus-chromium-'));  // a fresh user data dir
  process.on('exit', () => rmSync(profile, { recursive: true, force: true }));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: kChromium,
    headless: true,
    viewport: { width: kWidth, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (context) await context.close();
});

async function open(name) {
  const page = await context.newPage();
  await page.goto(`file://${reports[name]}`);
  return page;
}

// Everything the checks read from the page, measured as laid out at kWidth.
async function layout(page) {
  return page.evaluate(() => {
    const overflow = [];
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      const cls = typeof e.className === 'string' ? e.className : e.className.baseVal;
      if (r.right > window.innerWidth + 0.5) overflow.push(`${e.tagName.toLowerCase()}${cls ? '.' + cls : ''} right ${r.right.toFixed(0)}`);
    }
    const charts = [...document.querySelectorAll('svg')].filter((svg) => svg.querySelector('line.grid')).map((svg) => {
      // The plot area: its <rect class="plot">, else (a report without one) the grid lines' extent.
      const plot = svg.querySelector('rect.plot');
      const grid = svg.querySelector('line.grid');
      const x0 = plot ? plot.x.baseVal.value : grid.x1.baseVal.value;
      const w = plot ? plot.width.baseVal.value : grid.x2.baseVal.value - x0;
      const lines = [...svg.querySelectorAll('polyline')].map((p) => {
        const xs = [...p.points].map((pt) => (pt.x - x0) / w);
        return { series: p.dataset.series, points: xs.length, first: Math.min(...xs), last: Math.max(...xs),
                 dash: p.getAttribute('stroke-dasharray') || '', width: p.getAttribute('stroke-width') };
      });
      return { title: svg.querySelector('title').textContent, lines };
    });
    const spreads = [...document.querySelectorAll('svg.chart.spread')].map((svg) => ({
      title: svg.querySelector('title').textContent,
      dots: svg.querySelectorAll('circle.dot').length,
    }));
    const sections = [...document.querySelectorAll('section')].map((s) => s.id);
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, overflow, charts, spreads, sections,
             text: document.body.innerText };
  });
}

async function screenshotSections(page, name, sections) {
  mkdirSync(screenshots, { recursive: true });
  for (const id of sections) {
    const file = join(screenshots, `${name}-${id}.png`);
    await page.locator(`section#${id}`).screenshot({ path: file });
    assert.ok(readFileSync(file).length > 1000, `${file}: an empty screenshot`);
  }
}

function checkLayout(l, name) {
  assert.ok(l.scrollWidth <= l.innerWidth, `${name}: the page is ${l.scrollWidth} px wide at ${l.innerWidth} px`);
  assert.deepEqual(l.overflow, [], `${name}: elements past the right edge at ${kWidth} px`);
}

// Every line of every time chart spans the run: from its first tenth to its last tenth, with
// several samples; lines in one chart are drawn differently (equal ones stay visible).
function checkTimeCharts(l, name) {
  assert.ok(l.charts.length > 0, `${name}: no time charts`);
  for (const c of l.charts) {
    assert.ok(c.lines.length > 0, `${name}: "${c.title}" draws no line`);
    for (const line of c.lines) {
      const what = `${name}: "${c.title}", ${line.series}`;
      assert.ok(line.points >= 5, `${what}: ${line.points} samples`);
      assert.ok(line.first <= 0.1, `${what}: starts at ${(100 * line.first).toFixed(0)}% of the run`);
      assert.ok(line.last >= 0.9, `${what}: ends at ${(100 * line.last).toFixed(0)}% of the run`);
    }
    const styles = new Set(c.lines.map((line) => `${line.dash}|${line.width}`));
    assert.equal(styles.size, c.lines.length, `${name}: "${c.title}" draws two lines alike`);
  }
}

test('the tour: 4 virtual devices, 8 requests in batches of 4', async () => {
  const page = await open('tour');
  const l = await layout(page);
  await screenshotSections(page, 'tour', l.sections);
  checkLayout(l, 'tour');
  checkTimeCharts(l, 'tour');
  assert.deepEqual(l.sections, ['summary', 'run-0']);
  const json = JSON.parse(readFileSync(reports.tour.replace(/\.html$/, '.json'), 'utf8'));
  const util = l.charts.find((c) => c.title.startsWith('Utilisation per device'));
  assert.ok(util, 'tour: no utilisation chart');
  const series = util.lines.map((line) => line.series);
  assert.ok(series.includes('cpu'), `tour: the host is not in the utilisation chart: ${series}`);
  const computing = json.execution.devices.filter((d) => d.holds !== '').map((d) => d.name);
  assert.ok(computing.length >= 3, `tour: devices that compute: ${computing}`);
  for (const d of computing) assert.ok(series.includes(`${d} busy`), `tour: ${d} is not in the utilisation chart: ${series}`);
  assert.ok(l.charts.some((c) => c.title.startsWith('Memory in use per device')), 'tour: no executor memory chart');
  assert.equal(l.spreads.length, 2, 'tour: end-to-end and first-token latency charts');
  for (const s of l.spreads) assert.equal(s.dots, 8, `tour: "${s.title}" draws ${s.dots} of 8 requests`);
  assert.match(l.text, /dtype bfloat16/, 'tour: the dtype that ran');
  assert.doesNotMatch(l.text, /dtype n\/a/);
  if (json.energy.method === 'unavailable') assert.match(l.text, /Energy unavailable: no power source on this host/, 'tour: why energy is n/a');
  await page.close();
});

test('a sweep: one engine on the host, then 2 virtual devices', async () => {
  const page = await open('sweep');
  const l = await layout(page);
  await screenshotSections(page, 'sweep', l.sections);
  checkLayout(l, 'sweep');
  checkTimeCharts(l, 'sweep');
  assert.deepEqual(l.sections, ['summary', 'sweep', 'run-0', 'run-1']);
  assert.doesNotMatch(l.text, /dtype n\/a/, 'sweep: the dtype that ran, with and without devices');
  await page.close();
});
