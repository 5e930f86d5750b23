#!/usr/bin/env bash
# Builds the llama.cpp peer for benchmarks/llama_cpp: llama.cpp's source as the npm package
# node-llama-cpp 3.21.1 ships it (llama/gitRelease.bundle, a git bundle), fetched with `npm pack`
# and checked against the registry's sha512, built CPU-only (llama-bench, llama-batched-bench,
# llama-perplexity) into benchmarks/llama_cpp/peer/ (git-ignored). Idempotent. Run by
# benchmarks/llama_cpp/run.sh (`make bench`), never by the tests.
# usage: setup_peer.sh            prints the peer's bin directory on stdout
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peer="$here/peer"
package=node-llama-cpp
version=3.21.1
integrity='sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg=='
commit=80fb11ac73e66d89eae2c6a91d8a77428fa733ed  # the bundle's HEAD (llama.cpp, squashed)
targets=(llama-bench llama-batched-bench llama-perplexity llama-quantize llama-tokenize llama-imatrix)
[ $# -gt 0 ] && targets=("$@")
bin="$peer/build/bin"

die() { echo "setup_peer: $*" >&2; exit 1; }
have_all() { for t in "${targets[@]}"; do [ -x "$bin/$t" ] || return 1; done; }
if have_all && [ "$(cat "$peer/stamp" 2>/dev/null)" = "$version $commit" ]; then echo "$bin"; exit 0; fi

for tool in npm git cmake openssl c++; do
  command -v "$tool" >/dev/null || die "'$tool' is needed to build the llama.cpp peer (not found on PATH)"
done
mkdir -p "$peer"
tgz="$peer/$package-$version.tgz"
if [ ! -f "$tgz" ]; then
  echo "setup_peer: npm pack $package@$version" >&2
  (cd "$peer" && npm pack --silent "$package@$version" >/dev/null) || die "npm pack $package@$version failed"
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[ "$got" = "$integrity" ] || { rm -f "$tgz"; die "$tgz: sha512 $got, expected $integrity (removed; rerun)"; }

src="$peer/llama.cpp"
if [ "$(git -C "$src" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
  echo "setup_peer: unbundling llama.cpp from $package-$version.tgz" >&2
  rm -rf "$src" "$peer/unpack" && mkdir -p "$peer/unpack"
  tar xzf "$tgz" -C "$peer/unpack" package/llama/gitRelease.bundle
  git clone -q "$peer/unpack/package/llama/gitRelease.bundle" "$src" 2>/dev/null
  rm -rf "$peer/unpack"
  [ "$(git -C "$src" rev-parse HEAD)" = "$commit" ] || die "bundle HEAD is $(git -C "$src" rev-parse HEAD), expected $commit"
fi

echo "setup_peer: building ${targets[*]} (CPU only, OpenMP, -march=native; a few minutes)" >&2
cmake -S "$src" -B "$peer/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENMP=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >&2
nice -n 10 cmake --build "$peer/build" -j "${PEER_BUILD_JOBS:-2}" --target "${targets[@]}" >&2
have_all || die "the build did not produce ${targets[*]} in $bin"
echo "$version $commit" > "$peer/stamp"
echo "$bin"
