// Reference output from Hugging Face's Rust tokenizers (npm `tokenizers`), in the format of
// `plexus tokenize --jsonl`: node hf_tokenize.js TOKENIZER_DIR FILE.jsonl > out.jsonl
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, 'node_modules', 'tokenizers'));

function cleanUp(text) {  // transformers' clean_up_tokenization
  return text.split(' .').join('.').split(' ?').join('?').split(' !').join('!').split(' ,').join(',')
    .split(" ' ").join("'").split(" n't").join("n't").split(" 'm").join("'m").split(" 's").join("'s")
    .split(" 've").join("'ve").split(" 're").join("'re");
}

(async () => {
  const [dir, file] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  let cleanup = false;
  const cfgPath = path.join(dir, 'tokenizer_config.json');
  if (fs.existsSync(cfgPath)) cleanup = !!JSON.parse(fs.readFileSync(cfgPath, 'utf8')).clean_up_tokenization_spaces;
  const out = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const text = JSON.parse(line).text;
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const withSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    let decoded = await tok.decode(ids, false);
    if (cleanup) decoded = cleanUp(decoded);
    out.push(JSON.stringify({ ids, ids_with_special: withSpecial, decoded }));
  }
  process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
})();
