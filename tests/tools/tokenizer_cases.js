// Golden tokenizer cases (tests/data/golden/tokenizers/*/cases.jsonl): ids from Hugging Face's tokenizers (the Rust library, npm binding),
// cross-checked against @lenml/tokenizers (transformers.js port), whose decode gives `decoded`.
// usage: node tokenizer_cases.js NAME TEXTS.jsonl OUT.jsonl (beside node_modules holding tokenizers@0.23.2
// and @lenml/tokenizer-NAME@3.7.2)
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
const [name, textsPath, outPath] = process.argv.slice(2);
const pkg = require(`@lenml/tokenizer-${name}`);
const js = pkg.fromPreTrained();
const rust = Tokenizer.fromFile(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
(async () => {
  const texts = fs.readFileSync(textsPath, 'utf8').split('\n').filter(l => l).map(l => JSON.parse(l).text);
  const out = [];
  let disagree = 0;
  for (const text of texts) {
    const ids = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
    const withSpecial = (await rust.encode(text, null, { addSpecialTokens: true })).getIds();
    const jsIds = js.encode(text, { add_special_tokens: false });
    const jsWith = js.encode(text, { add_special_tokens: true });
    if (JSON.stringify(jsIds) !== JSON.stringify(ids) || JSON.stringify(jsWith) !== JSON.stringify(withSpecial)) {
      disagree++; console.error('disagree:', JSON.stringify(text).slice(0, 80), JSON.stringify(ids).slice(0,80), JSON.stringify(jsIds).slice(0,80));
    }
    out.push(JSON.stringify({ text, ids, ids_with_special: withSpecial, decoded: js.decode(ids) }));
  }
  fs.writeFileSync(outPath, out.join('\n') + '\n');
  console.error(`${name}: ${texts.length} cases, ${disagree} where transformers.js disagrees with tokenizers`);
})();
