#!/usr/bin/env bash
# The docker target's files checked by independent tools: every generated Dockerfile (docker and
# compose targets, GPU and CPU) by lint_dockerfile.mjs (dockerfile-utils' linter, dockerfile-ast's
# parser), every run.sh by `bash -n`; and both checks shown to reject the broken files in bad/.
# usage: check_docker.sh VALIDATORS_DIR EXAMPLES_DIR BAD_DIR
set -uo pipefail
validators="$1"
examples="$2"
bad="$3"
fail=0
problem() { echo "FAIL: $*"; fail=1; }

dockerfiles=("$examples"/docker-plexus/Dockerfile "$examples"/docker-cpu/Dockerfile
             "$examples"/compose-plexus/Dockerfile "$examples"/compose-cpu/Dockerfile)
for f in "${dockerfiles[@]}"; do [ -f "$f" ] || problem "$f was not generated"; done
node "$validators/lint_dockerfile.mjs" "${dockerfiles[@]}" || problem "the linter found problems in a generated Dockerfile (above)"
for api in vllm tgi tei; do
  [ ! -e "$examples/docker-$api/Dockerfile" ] || problem "docker-$api has a Dockerfile: $api runs its published image"
done

out=$(node "$validators/lint_dockerfile.mjs" "$bad/Dockerfile" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 1 ] || problem "the linter passed $bad/Dockerfile (rc $rc)"
for want in "Instructions should be written in uppercase" "Unknown flag: every" "run as root" "/health"; do
  grep -qiF -- "$want" <<<"$out" || problem "the linter's report of $bad/Dockerfile lacks \"$want\""
done

for api in plexus vllm tgi tei cpu; do
  f="$examples/docker-$api/run.sh"
  [ -x "$f" ] || problem "$f is missing or not executable"
  bash -n "$f" || problem "bash -n rejected $f"
  grep -q "^docker run " "$f" || problem "$f has no docker run line"
done
if bash -n "$bad/run.sh" 2>/dev/null; then problem "bash -n passed $bad/run.sh"; fi

[ "$fail" = 0 ] && echo "check_docker: all generated Dockerfiles and run.sh files pass; the broken ones are rejected"
exit "$fail"
