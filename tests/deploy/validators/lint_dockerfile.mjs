// Checks Dockerfiles with the Docker language service's own tools, not our reading of them:
// dockerfile-utils' validate() (its linter; every check raised to an error, warnings count too)
// and dockerfile-ast's parser for the shape plexus deploy promises (a named build stage, a runtime
// stage running as a non-root USER with a HEALTHCHECK, EXPOSE and ENTRYPOINT).
// usage: node lint_dockerfile.mjs DOCKERFILE ...   exit 1 printing every problem found.
import { readFileSync } from "node:fs";
import { validate, ValidationSeverity } from "dockerfile-utils";
import { DockerfileParser } from "dockerfile-ast";

const strict = {
  deprecatedMaintainer: ValidationSeverity.ERROR,
  directiveCasing: ValidationSeverity.ERROR,
  emptyContinuationLine: ValidationSeverity.ERROR,
  instructionCasing: ValidationSeverity.ERROR,
  instructionCmdMultiple: ValidationSeverity.ERROR,
  instructionEntrypointMultiple: ValidationSeverity.ERROR,
  instructionHealthcheckMultiple: ValidationSeverity.ERROR,
  instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  instructionWorkdirRelative: ValidationSeverity.ERROR,
};

function shapeProblems(text) {
  const problems = [];
  const dockerfile = DockerfileParser.parse(text);
  const froms = dockerfile.getFROMs();
  if (froms.length < 2) return [`expected a build stage and a runtime stage, found ${froms.length} FROM`];
  if (!froms[0].getBuildStage()) problems.push("the first stage has no name (FROM ... AS build)");
  const runtimeStart = froms[froms.length - 1].getRange().start.line;
  const runtime = dockerfile.getInstructions().filter((i) => i.getRange().start.line > runtimeStart);
  const named = (k) => runtime.filter((i) => i.getKeyword() === k);
  const users = named("USER");
  if (users.length === 0) problems.push("the runtime stage sets no USER (it would run as root)");
  for (const u of users) {
    const who = u.getArgumentsContent();
    if (who === "root" || who === "0" || who?.startsWith("0:") || who?.startsWith("root:")) problems.push(`USER ${who} is root`);
  }
  if (named("HEALTHCHECK").length !== 1) problems.push("the runtime stage needs one HEALTHCHECK");
  else if (!/\/health\b/.test(named("HEALTHCHECK")[0].getArgumentsContent() ?? "")) problems.push("the HEALTHCHECK does not ask /health");
  if (named("EXPOSE").length === 0) problems.push("the runtime stage EXPOSEs no port");
  if (named("ENTRYPOINT").length !== 1) problems.push("the runtime stage needs one ENTRYPOINT");
  const copies = named("COPY").filter((c) => c.getFromFlag()?.getValue() === froms[0].getBuildStage());
  if (copies.length === 0) problems.push("the runtime stage copies nothing from the build stage");
  return problems;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint_dockerfile.mjs DOCKERFILE ...");
  process.exit(2);
}
let failed = false;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const severity = { 1: "error", 2: "warning", 3: "information", 4: "hint" };
  for (const d of validate(text, strict)) {
    failed = true;
    const where = `${file}:${d.range.start.line + 1}:${d.range.start.character + 1}`;
    console.log(`${where}: ${severity[d.severity] ?? d.severity}: ${d.message} (dockerfile-utils code ${d.code})`);
  }
  for (const p of shapeProblems(text)) {
    failed = true;
    console.log(`${file}: ${p}`);
  }
  if (!failed) console.log(`${file}: ok`);
}
process.exit(failed ? 1 : 0);
