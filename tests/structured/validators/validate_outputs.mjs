// Validates every structured output of a JSON-lines file ({"schema", "text", "finish_reason"} a
// line, written by structured_random_schemas) with ajv, an implementation of JSON Schema
// independent of plexus. First shows that this ajv rejects values that break each kind of
// keyword the random schemas use, so that a pass means something.
// usage: node validate_outputs.mjs OUTPUTS.jsonl EXPECTED_COUNT
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const [file, expected] = process.argv.slice(2);
const ajv = new Ajv2020({ strict: false, allErrors: true });

const mustFail = [
  [{ type: "integer", minimum: 3, maximum: 5 }, 6],
  [{ type: "number", exclusiveMaximum: 1 }, 1],
  [{ type: "integer" }, 1.5],
  [{ type: "string", maxLength: 2 }, "abc"],
  [{ type: "string", minLength: 2 }, "\u{1F600}"],
  [{ enum: ["a", 1] }, "b"],
  [{ const: { k: 1 } }, { k: 2 }],
  [{ type: "object", properties: { a: { type: "null" } }, required: ["a"] }, {}],
  [{ type: "object", properties: { a: { type: "null" } }, additionalProperties: false }, { b: null }],
  [{ type: "array", items: { type: "boolean" }, maxItems: 1 }, [true, false]],
  [{ type: "array", minItems: 1 }, []],
  [{ oneOf: [{ type: "integer" }, { type: "number" }] }, 1],
  [{ anyOf: [{ type: "null" }, { type: "boolean" }] }, 0],
  [{ $defs: { d: { type: "string" } }, $ref: "#/$defs/d" }, 1],
];
let bad = 0;
for (const [schema, value] of mustFail) {
  if (ajv.validate(schema, value)) {
    console.error(`ajv accepted ${JSON.stringify(value)} under ${JSON.stringify(schema)}: the check would prove nothing`);
    bad++;
  }
}

const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0);
if (lines.length !== Number(expected)) {
  console.error(`${file}: ${lines.length} outputs, expected ${expected}`);
  bad++;
}
let valid = 0;
for (const [i, line] of lines.entries()) {
  const { schema, text, finish_reason } = JSON.parse(line);
  if (finish_reason !== "stop") {
    console.error(`output ${i}: finish_reason ${finish_reason}: not a complete output`);
    bad++;
    continue;
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    console.error(`output ${i}: not JSON (${e.message}): ${text}`);
    bad++;
    continue;
  }
  if (!ajv.validate(schema, value)) {
    console.error(`output ${i}: ${text}\n  schema ${JSON.stringify(schema)}\n  ${ajv.errorsText()}`);
    bad++;
    continue;
  }
  valid++;
}
console.log(`${valid} of ${lines.length} outputs valid under their schemas (ajv ${JSON.parse(readFileSync(new URL("./node_modules/ajv/package.json", import.meta.url))).version})`);
process.exit(bad === 0 ? 0 : 1);
