// Prefill + decode loops (one sequence, or several decoded together), and chunked scoring of a
// whole text.
#include "runtime/generate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/token_id.h"
#include "core/timer.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/engine_runner.h"

namespace plexus {

namespace {

void check_lengths(const Runner& runner, std::size_t prompt_tokens, const GenerateOptions& options) {
  if (prompt_tokens == 0) throw InputError("the prompt is empty: give at least one token");
  if (options.max_tokens < 1) throw InputError("--max-tokens must be at least 1");
  // Compared without the sum, which overflows for --max-tokens near 2^63.
  if (options.max_tokens > runner.max_context() - static_cast<std::int64_t>(prompt_tokens)) {
    throw InputError("prompt (" + std::to_string(prompt_tokens) + " tokens) + --max-tokens (" +
                     std::to_string(options.max_tokens) + ") exceeds the model's context of " +
                     std::to_string(runner.max_context()) +
                     " tokens (on several devices: --context, which the plan sized the KV cache for): lower "
                     "--max-tokens or raise --context");
  }
}

bool is_stop(const GenerateOptions& options, std::int32_t id) {
  return std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
}

// Closes a runner's sequence slot when it goes out of scope.
class SlotGuard {
 public:
  SlotGuard(Runner& r, std::int64_t capacity) : runner_(r), slot_(r.open_sequence(capacity)) {}
  ~SlotGuard() { runner_.close_sequence(slot_); }
  SlotGuard(const SlotGuard&) = delete;
  SlotGuard& operator=(const SlotGuard&) = delete;
  int slot() const { return slot_; }

 private:
  Runner& runner_;
  int slot_;
};

// Feeds `ids` of one sequence from position 0 in chunks; the last token's logits (vocab).
void prefill(Runner& runner, int slot, std::span<const std::int32_t> ids, float* logits) {
  const std::size_t chunk = static_cast<std::size_t>(runner.max_batch_tokens());
  std::vector<std::int32_t> pos(chunk);
  const std::vector<int> seqs(chunk, slot);
  for (std::size_t b = 0; b < ids.size(); b += chunk) {
    const std::size_t n = std::min(ids.size() - b, chunk);
    for (std::size_t i = 0; i < n; ++i) pos[i] = static_cast<std::int32_t>(b + i);
    const SlotBatch batch{ids.subspan(b, n), std::span(pos).first(n), std::span(seqs).first(n)};
    const std::int64_t row = static_cast<std::int64_t>(n) - 1;
    const bool last = b + n == ids.size();
    runner.forward(batch, last ? std::span<const std::int64_t>(&row, 1) : std::span<const std::int64_t>(), logits);
  }
}

// The next id from one row of logits, masked by the constraint first (nullopt: it allows none).
std::optional<std::int32_t> next_token(Sampler& sampler, TokenConstraint* constraint, float* logits) {
  if (constraint && !constraint->mask(logits)) return std::nullopt;
  const std::int32_t id = sampler.sample(logits);
  if (constraint) constraint->accept(id);
  return id;
}

}  // namespace

std::vector<std::int64_t> end_of_sequence_ids(const ModelConfig& config, std::optional<std::int64_t> tokenizer_eos) {
  std::vector<std::int64_t> ids(config.eos_token_ids.begin(), config.eos_token_ids.end());
  if (tokenizer_eos) {
    if (*tokenizer_eos < 0 || *tokenizer_eos >= config.vocab_size) {
      throw InputError("the tokenizer's end-of-sequence token id " + std::to_string(*tokenizer_eos) +
                       " is outside the model's vocabulary (vocab_size " + std::to_string(config.vocab_size) +
                       "): is tokenizer.json for this model? (--ignore-eos runs without it)");
    }
    ids.push_back(*tokenizer_eos);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

GenerateResult generate(Engine& engine, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token) {
  EngineRunner runner(engine);
  return generate(runner, prompt, options, on_token);
}

GenerateResult generate(Runner& runner, std::span<const std::int32_t> prompt, const GenerateOptions& options,
                        const std::function<void(std::int32_t)>& on_token) {
  check_lengths(runner, prompt.size(), options);
  GenerateResult r;
  r.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  SlotGuard seq(runner, r.prompt_tokens + options.max_tokens);
  Sampler sampler(options.sampling, runner.vocab_size(), prompt);
  const std::unique_ptr<TokenConstraint> constraint = options.constraint ? options.constraint() : nullptr;
  std::vector<float> logits(static_cast<std::size_t>(runner.vocab_size()));
  r.ids.reserve(static_cast<std::size_t>(options.max_tokens));

  Timer timer;
  prefill(runner, seq.slot(), prompt, logits.data());
  const std::optional<std::int32_t> first = next_token(sampler, constraint.get(), logits.data());
  r.prefill_s = timer.seconds();
  r.ttft_ms = r.prefill_s * 1e3;
  r.finish_reason = "length";
  if (!first) return r;  // the constraint allows no token at all
  std::int32_t next = *first;
  r.ids.push_back(next);
  if (on_token) on_token(next);

  Timer decode_timer;
  std::int32_t pos = static_cast<std::int32_t>(prompt.size());
  const int slot = seq.slot();
  const std::int64_t row = 0;
  while (static_cast<std::int64_t>(r.ids.size()) < options.max_tokens) {
    if (is_stop(options, next)) break;
    const SlotBatch batch{std::span(&next, 1), std::span(&pos, 1), std::span(&slot, 1)};
    Timer forward;
    runner.forward(batch, std::span(&row, 1), logits.data());
    r.steps.forward_s += forward.seconds();
    ++r.steps.count;
    ++pos;
    const std::optional<std::int32_t> chosen = next_token(sampler, constraint.get(), logits.data());
    if (!chosen) break;  // cut: the constraint allows nothing further
    next = *chosen;
    r.ids.push_back(next);
    if (on_token) on_token(next);
  }
  if (is_stop(options, r.ids.back())) r.finish_reason = "stop";
  r.decode_s = decode_timer.seconds();
  r.e2e_ms = timer.seconds() * 1e3;
  r.prefill_tokens_per_s = r.prefill_s > 0 ? static_cast<double>(prompt.size()) / r.prefill_s : 0;
  const std::int64_t decoded = static_cast<std::int64_t>(r.ids.size()) - 1;  // the first token came from prefill
  r.decode_tokens_per_s = decoded > 0 && r.decode_s > 0 ? static_cast<double>(decoded) / r.decode_s : 0;
  return r;
}

BatchGenerateResult generate_batch(Runner& runner, const std::vector<std::vector<std::int32_t>>& prompts,
                                   const GenerateOptions& options) {
  std::vector<SequenceRequest> sequences(prompts.size());
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    sequences[s].prompt = prompts[s];
    sequences[s].max_tokens = options.max_tokens;
    sequences[s].sampling = options.sampling;
    sequences[s].sampling.seed += s;
    if (options.constraint) sequences[s].constraint = options.constraint();
  }
  return generate_batch(runner, sequences, options.stop_ids);
}

BatchGenerateResult generate_batch(Runner& runner, const std::vector<SequenceRequest>& sequences,
                                   const std::vector<std::int64_t>& stop_ids) {
  if (sequences.empty()) throw InputError("no prompts to generate from");
  const std::size_t n_seq = sequences.size();
  if (static_cast<std::int64_t>(n_seq) > runner.max_batch_tokens()) {
    throw InputError(std::to_string(n_seq) + " sequences decode together but a forward pass holds " +
                     std::to_string(runner.max_batch_tokens()) + " tokens: raise --batch-tokens or lower --batch");
  }
  const std::int64_t vocab = runner.vocab_size();
  BatchGenerateResult r;
  std::vector<std::unique_ptr<SlotGuard>> slots;
  std::vector<Sampler> samplers;
  r.sequences.resize(n_seq);
  for (std::size_t s = 0; s < n_seq; ++s) {
    GenerateOptions limits;
    limits.max_tokens = sequences[s].max_tokens;
    check_lengths(runner, sequences[s].prompt.size(), limits);
    r.sequences[s].prompt_tokens = static_cast<std::int64_t>(sequences[s].prompt.size());
    r.sequences[s].finish_reason = "length";
    r.prompt_tokens += r.sequences[s].prompt_tokens;
    slots.push_back(std::make_unique<SlotGuard>(runner, r.sequences[s].prompt_tokens + sequences[s].max_tokens));
    samplers.emplace_back(sequences[s].sampling, vocab, sequences[s].prompt);
  }
  const std::size_t chunk = static_cast<std::size_t>(runner.max_batch_tokens());
  std::vector<float> logits(std::max(chunk, n_seq) * static_cast<std::size_t>(vocab));
  std::vector<float> raw;  // a row as the forward wrote it, for a sequence's observe
  std::vector<std::int32_t> ids, pos;
  std::vector<int> seqs;
  std::vector<std::int64_t> rows;
  std::vector<std::size_t> row_seq;  // the sequence of each requested row
  std::vector<std::int32_t> next(n_seq);

  // Prefill: every prompt's tokens, in order, cut into forwards of at most `chunk` tokens; the
  // last token of each prompt gives that sequence's first generated token.
  Timer timer;
  double forward_s = 0;  // in the runner's forwards, since the call began
  auto flush = [&] {
    if (ids.empty()) return;
    Timer forward;
    runner.forward(SlotBatch{ids, pos, seqs}, rows, logits.data());
    forward_s += forward.seconds();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::size_t s = row_seq[i];
      float* row = logits.data() + i * static_cast<std::size_t>(vocab);
      if (sequences[s].observe) raw.assign(row, row + vocab);  // masking and sampling change the row
      const std::optional<std::int32_t> id = next_token(samplers[s], sequences[s].constraint.get(), row);
      next[s] = id.value_or(-1);  // -1: the constraint allows nothing further (the sequence is cut)
      if (id && sequences[s].observe) sequences[s].observe(raw.data(), *id);
    }
    const double now_ms = timer.seconds() * 1e3;
    for (std::size_t s : row_seq) {
      if (r.sequences[s].ids.empty() && r.sequences[s].ttft_ms == 0) r.sequences[s].ttft_ms = now_ms;
      r.sequences[s].e2e_ms = now_ms;
    }
    ids.clear(), pos.clear(), seqs.clear(), rows.clear(), row_seq.clear();
  };
  for (std::size_t s = 0; s < n_seq; ++s) {
    const std::vector<std::int32_t>& prompt = sequences[s].prompt;
    for (std::size_t t = 0; t < prompt.size(); ++t) {
      ids.push_back(prompt[t]);
      pos.push_back(static_cast<std::int32_t>(t));
      seqs.push_back(slots[s]->slot());
      if (t + 1 == prompt.size()) {
        rows.push_back(static_cast<std::int64_t>(ids.size()) - 1);
        row_seq.push_back(s);
      }
      if (ids.size() == chunk) flush();
    }
  }
  flush();
  r.prefill_s = timer.seconds();

  Timer decode_timer;
  std::vector<bool> done(n_seq, false);
  for (std::size_t s = 0; s < n_seq; ++s) {
    if (next[s] >= 0) {
      r.sequences[s].ids.push_back(next[s]);
    } else {
      done[s] = true;
    }
  }
  for (;;) {
    for (std::size_t s = 0; s < n_seq; ++s) {
      GenerateResult& g = r.sequences[s];
      if (done[s]) continue;
      const std::vector<std::int64_t>& ends = sequences[s].stop_ids ? *sequences[s].stop_ids : stop_ids;
      if (std::find(ends.begin(), ends.end(), g.ids.back()) != ends.end()) {
        g.finish_reason = "stop";
        done[s] = true;
      } else if (static_cast<std::int64_t>(g.ids.size()) >= sequences[s].max_tokens) {
        done[s] = true;
      } else {
        ids.push_back(g.ids.back());
        pos.push_back(static_cast<std::int32_t>(g.prompt_tokens + static_cast<std::int64_t>(g.ids.size()) - 1));
        seqs.push_back(slots[s]->slot());
        rows.push_back(static_cast<std::int64_t>(ids.size()) - 1);
        row_seq.push_back(s);
      }
    }
    if (ids.empty()) break;
    const std::vector<std::size_t> stepped = row_seq;
    const double forward_before = forward_s;
    flush();  // one token per unfinished sequence: n_seq <= chunk was checked above
    r.steps.forward_s += forward_s - forward_before;
    ++r.steps.count;
    for (std::size_t s : stepped) {
      if (next[s] >= 0) {
        r.sequences[s].ids.push_back(next[s]);
      } else {
        done[s] = true;
      }
    }
  }
  r.decode_s = decode_timer.seconds();
  std::int64_t decoded = 0;
  for (const GenerateResult& g : r.sequences) {
    r.generated_tokens += static_cast<std::int64_t>(g.ids.size());
    decoded += std::max<std::int64_t>(static_cast<std::int64_t>(g.ids.size()) - 1, 0);
  }
  r.prefill_tokens_per_s = r.prefill_s > 0 ? static_cast<double>(r.prompt_tokens) / r.prefill_s : 0;
  r.decode_tokens_per_s = decoded > 0 && r.decode_s > 0 ? static_cast<double>(decoded) / r.decode_s : 0;
  return r;
}

PerplexityResult perplexity(Engine& engine, std::span<const std::int32_t> ids) {
  EngineRunner runner(engine);
  return perplexity(runner, ids);
}

PerplexityResult perplexity(Runner& runner, std::span<const std::int32_t> ids) {
  if (ids.size() < 2) throw InputError("perplexity needs at least 2 tokens, got " + std::to_string(ids.size()));
  const std::int64_t n = static_cast<std::int64_t>(ids.size());
  SlotGuard seq(runner, n);
  const std::int64_t chunk = runner.max_batch_tokens();
  const std::int64_t vocab = runner.vocab_size();
  std::vector<float> logits(static_cast<std::size_t>(chunk * vocab));
  std::vector<std::int32_t> pos(static_cast<std::size_t>(chunk));
  const std::vector<int> seqs(static_cast<std::size_t>(chunk), seq.slot());
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
    const SlotBatch batch{ids.subspan(static_cast<std::size_t>(b), static_cast<std::size_t>(m)),
                          std::span(pos).first(static_cast<std::size_t>(m)),
                          std::span(seqs).first(static_cast<std::size_t>(m))};
    runner.forward(batch, std::span(rows).first(static_cast<std::size_t>(m)), logits.data());
    for (std::int64_t i = 0; i < m; ++i) {
      const float* row = logits.data() + i * vocab;
      const std::int32_t target = ids[static_cast<std::size_t>(b + i + 1)];
      check_token_id(target, vocab);
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
