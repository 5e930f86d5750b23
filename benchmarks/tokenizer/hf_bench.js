// Encoding throughput of Hugging Face's Rust tokenizers (npm `tokenizers`), the peer of
// plexus_bench_tokenizer: same text (whole, then paragraph by paragraph through one encodeBatch
// call, serial with TOKENIZERS_PARALLELISM=false), same output format.
// usage: node hf_bench.js TEXT NAME=DIR... [--runs N]
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, 'node_modules', 'tokenizers'));

(async () => {
  const args = process.argv.slice(2);
  const text = fs.readFileSync(args[0], 'utf8');
  const bytes = Buffer.byteLength(text, 'utf8');
  let runs = 5;
  const specs = [];
  for (let i = 1; i < args.length; ++i) {
    if (args[i] === '--runs') runs = Math.max(1, parseInt(args[++i], 10));
    else specs.push(args[i]);
  }
  const paragraphs = [];
  for (let b = 0; b < text.length;) {
    let e = text.indexOf('\n\n', b);
    e = e < 0 ? text.length : e + 2;
    paragraphs.push(text.slice(b, e));
    b = e;
  }
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    let t0 = process.hrtime.bigint();
    const tok = Tokenizer.fromFile(path.join(spec.slice(eq + 1), 'tokenizer.json'));
    const loadS = Number(process.hrtime.bigint() - t0) / 1e9;
    let ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();  // warm-up
    const mbps = [];
    for (let r = 0; r < runs; ++r) {
      t0 = process.hrtime.bigint();
      const enc = await tok.encode(text, null, { addSpecialTokens: false });
      mbps.push(bytes / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9));
      ids = enc.getIds();
    }
    mbps.sort((a, b) => a - b);
    const paraMbps = [];
    let paraTokens = 0;
    for (let r = 0; r < runs; ++r) {
      t0 = process.hrtime.bigint();
      const encs = await tok.encodeBatch(paragraphs, { addSpecialTokens: false });
      paraMbps.push(bytes / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9));
      paraTokens = encs.reduce((n, e) => n + e.getIds().length, 0);
    }
    paraMbps.sort((a, b) => a - b);
    let hash = 1469598103934665603n;  // FNV-1a, as plexus_bench_tokenizer
    for (const id of ids) hash = ((hash ^ BigInt(id >>> 0)) * 1099511628211n) & 0xffffffffffffffffn;
    console.log(JSON.stringify({
      impl: 'hf-tokenizers', tokenizer: name, bytes, tokens: ids.length, ids_hash: hash.toString(16).padStart(16, '0'),
      load_s: +loadS.toFixed(3), mb_per_s_median: +mbps[Math.floor(mbps.length / 2)].toFixed(2),
      mb_per_s_best: +mbps[mbps.length - 1].toFixed(2), paragraphs: paragraphs.length, paragraph_tokens: paraTokens,
      paragraphs_mb_per_s_median: +paraMbps[Math.floor(paraMbps.length / 2)].toFixed(2),
      paragraphs_mb_per_s_best: +paraMbps[paraMbps.length - 1].toFixed(2),
    }));
  }
})();
