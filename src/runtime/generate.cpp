// Prefill + decode loop, and chunked scoring of a whole text.
#include "runtime/generate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus {

GenerateResult generate(Engine& engine, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token) {
  if (prompt.empty()) throw InputError("the prompt is empty: give at least one token");
  if (options.max_tokens < 1) throw InputError("--max-tokens must be at least 1");
  GenerateResult r;
  r.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  const std::int64_t total = r.prompt_tokens + options.max_tokens;
  if (total > engine.max_context()) {
    throw InputError("prompt (" + std::to_string(prompt.size()) + " tokens) + --max-tokens (" +
                     std::to_string(options.max_tokens) + ") exceeds the model's context of " +
                     std::to_string(engine.max_context()) + " tokens");
  }
  KvCache cache = engine.new_cache(total);
  Sampler sampler(options.sampling, engine.vocab_size());
  std::vector<float> logits(static_cast<std::size_t>(engine.vocab_size()));
  r.ids.reserve(static_cast<std::size_t>(options.max_tokens));
  auto is_stop = [&](std::int32_t id) {
    return std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
  };

  Timer timer;
  engine.prefill(cache, prompt, 0, logits.data());
  std::int32_t next = sampler.sample(logits.data());
  r.prefill_s = timer.seconds();
  r.ttft_ms = r.prefill_s * 1e3;
  r.ids.push_back(next);
  if (on_token) on_token(next);
  r.finish_reason = "length";

  Timer decode_timer;
  std::int32_t pos = static_cast<std::int32_t>(prompt.size());
  KvCache* cache_ptr = &cache;
  const std::int64_t row = 0;
  while (static_cast<std::int64_t>(r.ids.size()) < options.max_tokens) {
    if (is_stop(next)) break;
    const TokenBatch batch{std::span(&next, 1), std::span(&pos, 1), std::span(&cache_ptr, 1)};
    engine.forward(batch, std::span(&row, 1), logits.data());
    ++pos;
    next = sampler.sample(logits.data());
    r.ids.push_back(next);
    if (on_token) on_token(next);
  }
  if (is_stop(r.ids.back())) r.finish_reason = "stop";
  r.decode_s = decode_timer.seconds();
  r.prefill_tokens_per_s = r.prefill_s > 0 ? static_cast<double>(prompt.size()) / r.prefill_s : 0;
  const std::int64_t decoded = static_cast<std::int64_t>(r.ids.size()) - 1;  // the first token came from prefill
  r.decode_tokens_per_s = decoded > 0 && r.decode_s > 0 ? static_cast<double>(decoded) / r.decode_s : 0;
  return r;
}

PerplexityResult perplexity(Engine& engine, std::span<const std::int32_t> ids) {
  if (ids.size() < 2) throw InputError("perplexity needs at least 2 tokens, got " + std::to_string(ids.size()));
  const std::int64_t n = static_cast<std::int64_t>(ids.size());
  KvCache cache = engine.new_cache(n);
  const std::int64_t chunk = engine.max_batch_tokens();
  const std::int64_t vocab = engine.vocab_size();
  std::vector<float> logits(static_cast<std::size_t>(chunk * vocab));
  std::vector<std::int32_t> pos(static_cast<std::size_t>(chunk));
  std::vector<KvCache*> caches(static_cast<std::size_t>(chunk), &cache);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(chunk));
  PerplexityResult r;
  r.n_tokens = n;
  Timer timer;
  for (std::int64_t b = 0; b < n - 1; b += chunk) {
    // Feed tokens b..e-1; each predicts the next one (the last token is never fed).
    const std::int64_t e = std::min(n - 1, b + chunk), m = e - b;
    for (std::int64_t i = 0; i < m; ++i) {
      pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(b + i);
      rows[static_cast<std::size_t>(i)] = i;
    }
    const TokenBatch batch{ids.subspan(static_cast<std::size_t>(b), static_cast<std::size_t>(m)),
                           std::span(pos).first(static_cast<std::size_t>(m)),
                           std::span(caches).first(static_cast<std::size_t>(m))};
    engine.forward(batch, std::span(rows).first(static_cast<std::size_t>(m)), logits.data());
    for (std::int64_t i = 0; i < m; ++i) {
      const float* row = logits.data() + i * vocab;
      const std::int32_t target = ids[static_cast<std::size_t>(b + i + 1)];
      if (target < 0 || target >= vocab) {
        throw InputError("token id " + std::to_string(target) + " is outside the vocabulary [0, " +
                         std::to_string(vocab) + ")");
      }
      r.nll.push_back(ref::logsumexp(row, vocab) - static_cast<double>(row[target]));
    }
  }
  r.seconds = timer.seconds();
  double sum = 0;
  for (double x : r.nll) sum += x;
  r.ppl = std::exp(sum / static_cast<double>(r.nll.size()));
  r.tokens_per_s = r.seconds > 0 ? static_cast<double>(n) / r.seconds : 0;
  return r;
}

}  // namespace plexus
