#!/usr/bin/env bash
# What the `plexus deploy` CLI writes (not the fixture's specs): a model made by make-model,
# deployed for every target and api type on the 2 x H100 inventory, on 2 of the 4 L4s by
# --auto-select, and on a CPU-only host; and architectures plexus does not load (OPT, GPT-2, T5 for
# vLLM and TGI, BERT for TEI: tests/deploy/foreign_models.py) for every target; every file then
# checked by the independent validators:
# Kubernetes manifests against the OpenAPI schemas (validate_k8s.mjs), compose.yaml by
# `docker-compose config`, Dockerfiles by dockerfile-utils' linter, run.sh and sbatch by `bash -n`.
# usage: check_cli_outputs.sh PLEXUS VALIDATORS_DIR DATA_DIR TOKENIZER_DIR
set -uo pipefail
plexus="$1"
validators="$2"
data="$3"
tokenizer="$4"
fail=0
problem() { echo "FAIL: $*"; fail=1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUDA_VISIBLE_DEVICES=

"$plexus" make-model "$work/tiny-llama" --preset tiny --tokenizer "$tokenizer" >/dev/null || { echo "FAIL: make-model"; exit 1; }
python3 "$(dirname "$0")/../foreign_models.py" "$work/foreign" >/dev/null || { echo "FAIL: foreign_models.py"; exit 1; }
deploy_model() {  # deploy_model MODEL NAME ARGS...: writes $work/out/NAME
  local model="$1" name="$2"
  shift 2
  "$plexus" deploy "$model" --out "$work/out/$name" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; problem "plexus deploy $model $*"; }
}
deploy() { deploy_model "$work/tiny-llama" "$@"; }
for target in docker compose kubernetes slurm; do
  for api in plexus vllm tgi; do deploy "$target-$api" --target "$target" --api-type "$api" --inventory "$data/h100x2.json"; done
  deploy "$target-auto" --target "$target" --auto-select --inventory "$data/l4x4.json" --env HF_HUB_OFFLINE=1 --port 9000
  deploy "$target-cpu" --target "$target" --inventory "$data/cpu_only.json"
  for model in opt gpt2 t5; do
    for api in vllm tgi; do
      deploy_model "$work/foreign/$model" "$target-$model-$api" --target "$target" --api-type "$api" --inventory "$data/h100x2.json"
    done
  done
  deploy_model "$work/foreign/bert" "$target-bert-tei" --target "$target" --api-type tei --inventory "$data/l4x4.json"
done

k8s=("$work"/out/kubernetes-*)
node "$validators/validate_k8s.mjs" "${k8s[@]}" || problem "validate_k8s.mjs rejected a manifest (above)"
for f in "$work"/out/compose-*/compose.yaml; do
  (cd "$(dirname "$f")" && docker-compose -f compose.yaml config >/dev/null) || problem "docker-compose config rejected $f"
done
dockerfiles=()
for f in "$work"/out/*/Dockerfile; do dockerfiles+=("$f"); done
[ "${#dockerfiles[@]}" -ge 4 ] || problem "expected Dockerfiles for docker/compose plexus, auto and cpu, found ${#dockerfiles[@]}"
(cd "$validators" && node lint_dockerfile.mjs "${dockerfiles[@]}") || problem "the Dockerfile linter found problems (above)"
for f in "$work"/out/*/run.sh "$work"/out/slurm-*/*.sbatch; do
  bash -n "$f" || problem "bash -n rejected $f"
done
grep -q 'device=1"' "$work/out/docker-auto/run.sh" || problem "docker-auto: --auto-select should give GPU 1 (the most free memory; the tiny model fits one)"
[ "$fail" = 0 ] && echo "every file plexus deploy wrote passed its validator"
exit "$fail"
