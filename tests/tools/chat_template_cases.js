// Chat-template renders by Hugging Face's @huggingface/jinja (transformers.js's Jinja), as
// apply_chat_template calls it: messages, tools, add_generation_prompt, the special tokens of
// tokenizer_config.json and the kwargs as variables. usage: node chat_template_cases.js TOKENIZER_CONFIG CASES.jsonl... > OUT.jsonl
const fs = require('fs');
const { Template } = require('@huggingface/jinja');
const [configPath, ...inputs] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
const template = new Template(config.chat_template);
// The messages the template's raise_exception calls give (the library raises them as plain errors).
const raised = [...config.chat_template.matchAll(/raise_exception\("([^"]*)"\)/g)].map(m => m[1]);
const tokens = {};
for (const k of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) if (typeof config[k] === 'string') tokens[k] = config[k];
for (const path of inputs) {
  for (const line of fs.readFileSync(path, 'utf8').split('\n').filter(l => l)) {
    const c = JSON.parse(line);
    const out = { messages: c.messages, add_generation_prompt: c.add_generation_prompt ?? false, kwargs: c.kwargs ?? {} };
    if (c.tools) out.tools = c.tools;
    try {
      out.rendered = template.render({ messages: c.messages, tools: c.tools, add_generation_prompt: out.add_generation_prompt, ...tokens, ...out.kwargs });
    } catch (e) {
      out.error = String(e.message); out.error_kind = raised.some(m => e.message === m) ? 'raise_exception' : 'other';
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  }
}
