#!/usr/bin/env bash
# Every generated run.sh parsed by the Docker CLI itself: its `docker run` line runs against a
# daemon socket that does not exist, so the CLI checks every flag (unknown flags, --shm-size,
# --publish, --env, --gpus) and stops at "Cannot connect to the Docker daemon" only when all of
# them parse. A line with a bad flag is shown to stop earlier. Needs a `docker` CLI (Debian's
# docker.io); exit 77 (ctest: skipped) without one.
# usage: check_docker_cli.sh EXAMPLES_DIR
set -uo pipefail
examples="$1"
command -v docker >/dev/null || { echo "SKIP: no docker CLI on PATH (Debian's docker.io has one)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DOCKER_HOST="unix://$tmp/no-daemon.sock" DOCKER_CONFIG="$tmp/config"
unset PLEXUS_SOURCE
fail=0
problem() { echo "FAIL: $*"; fail=1; }
parsed() { grep -q "Cannot connect to the Docker daemon" <<<"$1" && ! grep -qiE "invalid|unknown (flag|shorthand)" <<<"$1"; }

for api in plexus vllm tgi tei cpu; do
  f="$examples/docker-$api/run.sh"
  out=$(bash "$f" 2>&1)
  if parsed "$out"; then echo "$f: the docker CLI parsed every flag"; else echo "$out"; problem "the docker CLI rejected $f"; fi
done
out=$(docker run --detach --shm-size 16x --publish 8080:8080 plexus:latest 2>&1)
if parsed "$out"; then problem "the docker CLI accepted --shm-size 16x: this check cannot tell"; else echo "a bad flag is rejected: $out" | head -1; fi

[ "$fail" = 0 ] && echo "check_docker_cli: every generated docker run line parses"
exit "$fail"
