// The continuous-batching loop: admission (sequences, KV budget, FIFO; a request's choices
// together), one mixed forward of decode tokens and prompt chunks per step, per-choice sampling,
// the choices' fork from their prompt's prefill, finishing and draining.
#include "serve/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "serve/energy_ledger.h"
#include "serve/logprobs.h"
#include "serve/prefix_cache.h"
#include "serve/request_stream.h"

namespace plexus {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Wakes the scheduler thread; shared with the streams, which may outlive the scheduler.
struct Wake {
  std::mutex mutex;
  std::condition_variable cv;
  bool poked = false;
};

SamplingOptions seeded(SamplingOptions s, int index) {
  s.seed = choice_seed(s.seed, index);
  return s;
}

// One choice of a request from submit() to its finish. The choices of a request share its
// stream; choice 0 (the leader) prefills the prompt, the others (its followers) wait, then take
// a copy of its KV cache and the logits of its last prompt token.
struct Active {
  std::uint64_t id = 0;
  int index = 0;  // the choice
  ServeRequest request;
  std::shared_ptr<EventStream> stream;
  Sampler sampler;
  Clock::time_point arrived, admitted, first_token, last_token;  // arrived: request.arrived, else submit()
  bool was_admitted = false, has_token = false;
  int slot = -1;
  std::int64_t prefilled = 0;  // prompt tokens through the model (or copied from the leader's)
  std::int64_t generated = 0;  // tokens chosen (a final stop id included)
  std::int32_t last = 0;       // the last chosen id: the next decode input
  Active* leader = nullptr;          // a follower whose leader has not prefilled yet
  std::vector<Active*> followers;    // the leader's, until it forks them
  std::string error;                 // this choice failed (kError)
  std::unique_ptr<TokenConstraint> constraint;  // with request.constraint: masks each row before sampling

  Active(ServeRequest r, int choice, std::int64_t vocab, std::shared_ptr<EventStream> s)
      : index(choice),
        request(std::move(r)),
        stream(std::move(s)),
        sampler(seeded(request.sampling, choice), vocab, request.prompt),
        arrived(request.arrived != Clock::time_point{} ? request.arrived : Clock::now()) {
    if (request.constraint) constraint = request.constraint();
  }
  std::int64_t prompt_size() const { return static_cast<std::int64_t>(request.prompt.size()); }
  std::int64_t reserve() const { return prompt_size() + request.max_tokens; }  // KV tokens
  bool decoding() const { return prefilled == prompt_size(); }
  bool cancelled() const { return stream->cancelled(index); }
};

// Unlinks `a` from its group before it ends: a follower leaves its leader's list; a leader that
// has not prefilled lets its followers prefill the prompt themselves.
void detach(Active& a) {
  if (a.leader) {
    auto& f = a.leader->followers;
    f.erase(std::remove(f.begin(), f.end(), &a), f.end());
    a.leader = nullptr;
  }
  for (Active* f : a.followers) f->leader = nullptr;
  a.followers.clear();
}

struct Ended {
  std::unique_ptr<Active> active;
  FinishReason reason;
  std::string error;
};

// Moves the choices cancelled by their client (all with `all`) from `list` to `ended`.
template <typename List>
void cancel_if(List& list, bool all, std::vector<Ended>& ended) {
  for (auto it = list.begin(); it != list.end();) {
    if (all || (*it)->cancelled()) {
      ended.push_back({std::move(*it), FinishReason::kCancelled, {}});
      it = list.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

struct Scheduler::Impl {
  Runner& runner;
  SchedulerOptions options;
  EnergyLedger* ledger;
  std::int64_t vocab;
  std::shared_ptr<Wake> wake = std::make_shared<Wake>();

  // Guarded by wake->mutex.
  std::deque<std::unique_ptr<Active>> waiting;
  SchedulerStats counters;
  bool draining = false;
  Clock::time_point drain_deadline;
  std::uint64_t next_id = 1;

  // The scheduler thread's own (changes of its size are made under wake->mutex for stats()).
  std::vector<std::unique_ptr<Active>> running;
  std::vector<float> logits;  // (max_sequences, vocab)
  std::optional<PrefixCache> cache;  // with options.prefix_cache
  std::thread thread;

  // Finish events wait for their energy here, off the scheduler thread.
  std::mutex finish_mutex;
  std::condition_variable finish_cv;
  std::deque<std::tuple<std::uint64_t, std::shared_ptr<EventStream>, FinishEvent>> finishing;
  bool finish_stop = false;
  std::thread finisher;

  std::mutex drain_mutex;
  bool joined = false;

  Impl(Runner& r, const SchedulerOptions& o, EnergyLedger* l) : runner(r), options(o), ledger(l), vocab(r.vocab_size()) {}

  void loop();
  void admit(std::vector<Ended>& ended);
  // One forward of the running requests; `begin`: when the loop's iteration began (admission),
  // so that the step's host time counts from there to its tokens pushed.
  void step(double begin);
  void count_ended(const std::vector<Ended>& ended);
  // Makes room for `need` more KV tokens (the budget) by closing cached sequences, least recently
  // used first; false when even an empty cache leaves too little.
  bool make_room(std::int64_t kv_used, std::int64_t need);
  bool evict_one();
  // The leader `a` (slot open) starts from the longest cached prefix of its prompt, if any.
  void reuse_prefix(Active& a);
  void end(Ended e);
  void finish_loop();
  double clock_s() const { return ledger ? ledger->now_s() : seconds(Clock::now().time_since_epoch()); }
};

namespace {

SchedulerOptions resolve(const SchedulerOptions& in, const Runner& runner) {
  SchedulerOptions o = in;
  if (o.max_sequences < 1) throw InputError("--max-sequences must be at least 1, got " + std::to_string(o.max_sequences));
  if (o.max_queue < 1) throw InputError("--max-queue must be at least 1, got " + std::to_string(o.max_queue));
  if (o.step_tokens == 0) o.step_tokens = runner.max_batch_tokens();
  if (o.step_tokens < 1 || o.step_tokens > runner.max_batch_tokens()) {
    throw InputError("tokens per step must be between 1 and the runner's " + std::to_string(runner.max_batch_tokens()) +
                     " tokens per forward, got " + std::to_string(o.step_tokens));
  }
  if (o.max_sequences > o.step_tokens) {
    throw InputError("--max-sequences " + std::to_string(o.max_sequences) + " exceeds the " +
                     std::to_string(o.step_tokens) +
                     " tokens per step (each running request decodes one token per step): lower --max-sequences or "
                     "raise the tokens per forward (--batch-tokens)");
  }
  if (o.kv_budget_tokens == 0) o.kv_budget_tokens = static_cast<std::int64_t>(o.max_sequences) * runner.max_context();
  if (o.kv_budget_tokens < 1) throw InputError("the KV budget must be at least 1 token, got " + std::to_string(o.kv_budget_tokens));
  return o;
}

}  // namespace

Scheduler::Scheduler(Runner& runner, const SchedulerOptions& options, EnergyLedger* ledger)
    : impl_(std::make_unique<Impl>(runner, resolve(options, runner), ledger)) {
  Impl& m = *impl_;
  m.counters.kv_budget_tokens = m.options.kv_budget_tokens;
  m.logits.resize(static_cast<std::size_t>(m.options.max_sequences) * static_cast<std::size_t>(m.vocab));
  if (m.options.prefix_cache) m.cache.emplace();
  m.thread = std::thread([&m] { m.loop(); });
  m.finisher = std::thread([&m] { m.finish_loop(); });
}

Scheduler::~Scheduler() { drain(std::chrono::milliseconds(0)); }

const SchedulerOptions& Scheduler::options() const { return impl_->options; }

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(impl_->wake->mutex);
  SchedulerStats s = impl_->counters;
  s.waiting = static_cast<int>(
      std::count_if(impl_->waiting.begin(), impl_->waiting.end(), [](const auto& a) { return a->index == 0; }));
  return s;
}

std::shared_ptr<RequestStream> Scheduler::submit(ServeRequest request) {
  Impl& m = *impl_;
  const std::int64_t n = static_cast<std::int64_t>(request.prompt.size());
  if (n == 0) throw InputError("the prompt is empty: give at least one token");
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t id = request.prompt[static_cast<std::size_t>(i)];
    if (id < 0 || id >= m.vocab) {
      throw InputError("prompt token " + std::to_string(i) + " is id " + std::to_string(id) +
                       ", outside the model's vocabulary of " + std::to_string(m.vocab) + " ids");
    }
  }
  if (request.max_tokens < 0) throw InputError("max_tokens must be at least 0, got " + std::to_string(request.max_tokens));
  const int choices = request.choices;
  if (choices < 1 || choices > m.options.max_sequences) {
    throw InputError("n must be between 1 and this server's --max-sequences " + std::to_string(m.options.max_sequences) +
                     " (a request's choices run together), got " + std::to_string(choices));
  }
  // Compared without the sum, which overflows for max_tokens near 2^63.
  const std::int64_t limit = std::min(m.runner.max_context(), m.options.kv_budget_tokens / choices);
  if (request.max_tokens > limit - n) {
    const bool by_context = m.runner.max_context() <= m.options.kv_budget_tokens / choices;
    throw InputError("prompt (" + std::to_string(n) + " tokens) + max_tokens (" + std::to_string(request.max_tokens) +
                     ") exceeds " +
                     (by_context ? "the model's context of " + std::to_string(limit) + " tokens"
                      : choices == 1
                          ? "the server's KV-cache budget of " + std::to_string(limit) + " tokens"
                          : "the server's KV-cache budget of " + std::to_string(m.options.kv_budget_tokens) +
                                " tokens shared by the " + std::to_string(choices) + " choices (" +
                                std::to_string(limit) + " each)") +
                     ": shorten the prompt or lower max_tokens");
  }
  std::weak_ptr<Wake> weak = m.wake;
  auto stream = std::make_shared<EventStream>(
      [weak] {
        if (const auto w = weak.lock()) {
          {
            std::lock_guard<std::mutex> lock(w->mutex);
            w->poked = true;
          }
          w->cv.notify_all();
        }
      },
      choices);
  std::vector<std::unique_ptr<Active>> group;
  for (int i = 0; i < choices; ++i) group.push_back(std::make_unique<Active>(request, i, m.vocab, stream));
  for (int i = 1; i < choices; ++i) {
    group[static_cast<std::size_t>(i)]->leader = group[0].get();
    group[0]->followers.push_back(group[static_cast<std::size_t>(i)].get());
  }
  {
    std::lock_guard<std::mutex> lock(m.wake->mutex);
    if (m.draining) throw ShuttingDown("the server is shutting down: no new requests");
    const auto requests = std::count_if(m.waiting.begin(), m.waiting.end(), [](const auto& a) { return a->index == 0; });
    if (requests >= m.options.max_queue) {
      throw QueueFull(std::to_string(requests) + " requests already wait (--max-queue " +
                      std::to_string(m.options.max_queue) + "): retry later");
    }
    for (auto& a : group) {
      a->id = m.next_id++;
      m.waiting.push_back(std::move(a));
    }
  }
  if (m.ledger) {
    for (int i = 0; i < choices; ++i) m.ledger->request_began();
  }
  m.wake->cv.notify_all();
  return stream;
}

void Scheduler::drain(std::chrono::milliseconds limit) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> drain_lock(m.drain_mutex);
  if (m.joined) return;
  std::vector<Ended> ended;  // the waiting requests, cancelled now, not after a step
  {
    std::lock_guard<std::mutex> lock(m.wake->mutex);
    m.draining = true;
    m.drain_deadline = Clock::now() + limit;
    for (auto& a : m.waiting) ended.push_back({std::move(a), FinishReason::kCancelled, {}});
    m.waiting.clear();
    m.count_ended(ended);
  }
  m.wake->cv.notify_all();
  for (Ended& e : ended) m.end(std::move(e));
  m.thread.join();
  while (m.evict_one()) {
  }
  {
    std::lock_guard<std::mutex> lock(m.finish_mutex);
    m.finish_stop = true;
  }
  m.finish_cv.notify_all();
  m.finisher.join();
  m.joined = true;
}

void Scheduler::Impl::loop() {
  for (;;) {
    std::vector<Ended> ended;
    bool stop = false;
    double begin = 0;  // when this iteration's host work began
    {
      std::unique_lock<std::mutex> lock(wake->mutex);
      wake->cv.wait(lock, [&] { return wake->poked || draining || !waiting.empty() || !running.empty(); });
      begin = clock_s();
      wake->poked = false;
      cancel_if(waiting, draining, ended);
      cancel_if(running, draining && Clock::now() >= drain_deadline, ended);
      admit(ended);
      count_ended(ended);
      stop = draining && running.empty() && waiting.empty();
    }
    for (Ended& e : ended) end(std::move(e));
    if (stop) return;
    if (!running.empty()) step(begin);
  }
}

// Under wake->mutex: FIFO while sequences and the KV budget allow and the runner opens the
// slots, a request's choices (consecutive in `waiting`, sharing a stream) all at once.
void Scheduler::Impl::admit(std::vector<Ended>& ended) {
  std::int64_t kv_used = 0;
  for (const auto& r : running) kv_used += r->reserve();
  while (!draining && !waiting.empty()) {
    std::size_t g = 1;  // the front request's choices
    while (g < waiting.size() && waiting[g]->stream == waiting.front()->stream) ++g;
    if (static_cast<int>(running.size() + g) > options.max_sequences) break;
    std::int64_t need = 0;
    for (std::size_t i = 0; i < g; ++i) need += waiting[i]->reserve();
    // The cached prefix this request would reuse becomes the most recently used: the last to go.
    if (cache) cache->find(waiting.front()->request.prompt);
    if (!make_room(kv_used, need)) break;
    std::size_t opened = 0;
    std::string error;
    bool wait = false;
    while (opened < g) {
      try {
        waiting[opened]->slot = runner.open_sequence(waiting[opened]->reserve());
        ++opened;
      } catch (const Error& e) {
        // Out of memory: cached prefixes go first; then wait for running requests to free theirs;
        // with none running it never fits.
        const bool memory = dynamic_cast<const RuntimeError*>(&e) != nullptr;
        if (memory && evict_one()) continue;
        wait = memory && !running.empty();
        error = e.what();
        break;
      }
    }
    if (opened < g) {
      for (std::size_t i = 0; i < opened; ++i) {
        runner.close_sequence(waiting[i]->slot);
        waiting[i]->slot = -1;
      }
      if (wait) break;
      for (std::size_t i = 0; i < g; ++i) {
        ended.push_back({std::move(waiting.front()), FinishReason::kError, error});
        waiting.pop_front();
      }
      continue;
    }
    reuse_prefix(*waiting.front());
    for (std::size_t i = 0; i < g; ++i) {
      Active& a = *waiting.front();
      a.admitted = Clock::now();
      a.was_admitted = true;
      kv_used += a.reserve();
      running.push_back(std::move(waiting.front()));
      waiting.pop_front();
    }
  }
  counters.running = static_cast<int>(running.size());
  counters.kv_used_tokens = kv_used;
  if (cache) {
    counters.prefix_cached_sequences = cache->entries();
    counters.prefix_cached_tokens = cache->reserved_tokens();
    counters.prefix_evictions = cache->evictions();
  }
}

bool Scheduler::Impl::evict_one() {
  if (!cache || cache->empty()) return false;
  runner.close_sequence(cache->evict());
  return true;
}

bool Scheduler::Impl::make_room(std::int64_t kv_used, std::int64_t need) {
  if (kv_used + need > options.kv_budget_tokens) return false;
  while (cache && kv_used + cache->reserved_tokens() + need > options.kv_budget_tokens) evict_one();
  return true;
}

void Scheduler::Impl::reuse_prefix(Active& a) {
  // A request scoring its prompt (prompt_logprobs) needs the logits of every prompt position: it runs whole.
  if (!cache || a.request.prompt_logprobs >= 0) return;
  const PrefixCache::Match m = cache->find(a.request.prompt);
  bool hit = m.tokens > 0;
  if (hit) {
    try {
      runner.copy_sequence(m.slot, a.slot, m.tokens);
      a.prefilled = m.tokens;
    } catch (const std::exception&) {
      hit = false;  // the prompt runs whole; the positions a partial copy wrote are run again
    }
  }
  if (hit) {
    ++counters.prefix_hits;
    counters.prefix_hit_tokens += m.tokens;
  } else {
    ++counters.prefix_misses;
  }
}

void Scheduler::Impl::step(double begin) {
  // The batch: one decode token per request past its prefill, then prompt chunks (FIFO).
  std::vector<std::int32_t> ids, pos;
  std::vector<int> seqs;
  std::vector<std::int64_t> rows;
  std::vector<std::size_t> row_req;              // the running index of each row
  // Per row: -1 to sample from it; p >= 1 for a prompt row scoring the prompt's token p (prompt_logprobs).
  std::vector<std::int64_t> row_scores;
  std::vector<std::int64_t> tokens(running.size(), 0);  // per running request, this step
  std::int64_t budget = options.step_tokens, prompt_tokens = 0;
  auto add = [&](std::size_t r, std::int32_t id, std::int64_t p, bool row, std::int64_t scores = -1) {
    ids.push_back(id);
    pos.push_back(static_cast<std::int32_t>(p));
    seqs.push_back(running[r]->slot);
    ++tokens[r];
    --budget;
    if (row) {
      rows.push_back(static_cast<std::int64_t>(ids.size()) - 1);
      row_req.push_back(r);
      row_scores.push_back(scores);
    }
  };
  for (std::size_t r = 0; r < running.size() && budget > 0; ++r) {
    const Active& a = *running[r];
    if (a.decoding()) add(r, a.last, a.prompt_size() + a.generated - 1, true);
  }
  // Prompt positions scored this step, over every request asking (the logits buffer's extra rows).
  std::int64_t scored_left = kPromptLogprobRows;
  for (std::size_t r = 0; r < running.size() && budget > 0; ++r) {
    const Active& a = *running[r];
    if (a.decoding() || a.leader) continue;  // a follower waits for its leader's prefill
    const bool scored = a.request.prompt_logprobs >= 0;  // a row for every prompt position, not only the last
    const std::int64_t take = std::min({budget, a.prompt_size() - a.prefilled, scored ? scored_left : budget});
    if (take == 0) continue;  // scored rows used up by an earlier request: next step
    if (scored) scored_left -= take;
    for (std::int64_t i = a.prefilled; i < a.prefilled + take; ++i) {
      const bool last = i + 1 == a.prompt_size();
      add(r, a.request.prompt[static_cast<std::size_t>(i)], i, last || scored, last ? -1 : i + 1);
    }
    prompt_tokens += take;
  }
  // Only prompt-scoring rows take the buffer past its (max_sequences, vocab); it shrinks back after.
  const std::size_t base_rows = static_cast<std::size_t>(options.max_sequences);
  if (rows.size() > base_rows) logits.resize(rows.size() * static_cast<std::size_t>(vocab));

  const double t0 = clock_s();
  std::string failure;
  try {
    runner.forward(SlotBatch{ids, pos, seqs}, rows, logits.data());
  } catch (const std::exception& e) {
    failure = std::string("the forward pass failed: ") + e.what();
  }
  const double t1 = clock_s();
  if (ledger) {
    std::vector<std::pair<std::uint64_t, std::int64_t>> shares;
    for (std::size_t r = 0; r < running.size(); ++r)
      if (tokens[r] > 0) shares.emplace_back(running[r]->id, tokens[r]);
    ledger->record_step(t0, t1, shares);
  }

  std::vector<Ended> ended;
  std::vector<bool> done(running.size(), false);
  std::int64_t sampled = 0;  // tokens chosen this step (a leader's followers' first ones too)
  if (!failure.empty()) {
    for (std::size_t r = 0; r < running.size(); ++r)
      if (tokens[r] > 0) done[r] = true;
  } else {
    for (std::size_t r = 0; r < running.size(); ++r)
      if (!running[r]->decoding()) running[r]->prefilled += tokens[r];
    const Clock::time_point now = Clock::now();
    std::vector<float> raw, copy;
    // Where a follower is in `running` (it always is: a request's choices run together).
    auto running_index = [&](const Active* f) {
      return static_cast<std::size_t>(std::find_if(running.begin(), running.end(), [&](const auto& p) { return p.get() == f; }) -
                                       running.begin());
    };
    // Samples choice `a` (running index r) from `row` (vocab; changed) and sends its token.
    auto take = [&](Active& a, std::size_t r, float* row) {
      if (a.request.top_logprobs >= 0) raw.assign(row, row + vocab);  // the sampler changes the row
      if (a.constraint && !a.constraint->mask(row)) {
        done[r] = true;  // nothing may follow within the constraint: the choice ends, cut ("length")
        return;
      }
      const std::int32_t id = a.sampler.sample(row);
      a.last = id;
      ++a.generated;
      ++sampled;
      if (!a.has_token) a.first_token = now;
      a.has_token = true;
      a.last_token = now;
      const auto& stops = a.request.stop_ids;
      if (std::find(stops.begin(), stops.end(), id) != stops.end()) {
        done[r] = true;  // the stop id ends the choice: counted, not sent
        return;
      }
      if (a.constraint) a.constraint->accept(id);
      TokenEvent event = a.request.top_logprobs >= 0 ? token_event(raw.data(), vocab, id, a.request.top_logprobs)
                                                     : token_event(nullptr, vocab, id, -1);
      event.index = a.index;
      a.stream->push(std::move(event));
      if (a.generated >= a.request.max_tokens) done[r] = true;
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Active& a = *running[row_req[i]];
      float* row = logits.data() + i * static_cast<std::size_t>(vocab);
      if (row_scores[i] >= 0) {  // a prompt position's row: the log-probabilities of the prompt's next token
        const std::int64_t p = row_scores[i];
        TokenEvent event = token_event(row, vocab, a.request.prompt[static_cast<std::size_t>(p)], a.request.prompt_logprobs);
        event.index = a.index;
        event.prompt_position = p;
        a.stream->push(std::move(event));
        continue;
      }
      if (a.request.max_tokens == 0) {  // prefill only (its prompt's log-probabilities): no token, for any choice
        done[row_req[i]] = true;
        for (Active* f : a.followers) {
          f->leader = nullptr;
          done[running_index(f)] = true;
        }
        a.followers.clear();
        continue;
      }
      if (!a.followers.empty()) {
        // The leader's prompt is in: each follower takes a copy of its KV cache and samples its
        // first token from the same logits.
        copy.assign(row, row + vocab);
        for (Active* f : a.followers) {
          const std::size_t fr = running_index(f);
          f->leader = nullptr;
          try {
            runner.copy_sequence(a.slot, f->slot, a.prompt_size());
          } catch (const std::exception& e) {
            f->error = std::string("copying the prompt's KV cache failed: ") + e.what();
            done[fr] = true;
            continue;
          }
          f->prefilled = f->prompt_size();
          std::vector<float> frow = copy;
          take(*f, fr, frow.data());
        }
        a.followers.clear();
      }
      take(a, row_req[i], row);
    }
  }
  {
    std::lock_guard<std::mutex> lock(wake->mutex);
    counters.steps += 1;
    counters.busy_s += t1 - t0;
    counters.host_s += std::max(0.0, (clock_s() - begin) - (t1 - t0));
    if (failure.empty()) {
      counters.prompt_tokens += prompt_tokens;
      counters.generated_tokens += sampled;
    }
    std::vector<std::unique_ptr<Active>> keep;
    for (std::size_t r = 0; r < running.size(); ++r) {
      if (!done[r]) {
        keep.push_back(std::move(running[r]));
        continue;
      }
      Active& a = *running[r];
      const bool stopped = failure.empty() && a.has_token &&
                           std::find(a.request.stop_ids.begin(), a.request.stop_ids.end(), a.last) != a.request.stop_ids.end();
      const std::string error = !failure.empty() ? failure : a.error;
      const FinishReason reason = !error.empty() ? FinishReason::kError : stopped ? FinishReason::kStop : FinishReason::kLength;
      ended.push_back({std::move(running[r]), reason, error});
    }
    running = std::move(keep);
    if (logits.size() > base_rows * static_cast<std::size_t>(vocab)) {
      logits.resize(base_rows * static_cast<std::size_t>(vocab));
      logits.shrink_to_fit();
    }
    std::int64_t kv_used = 0;
    for (const auto& r : running) kv_used += r->reserve();
    counters.running = static_cast<int>(running.size());
    counters.kv_used_tokens = kv_used;
    count_ended(ended);
  }
  for (Ended& e : ended) end(std::move(e));
}

// Under wake->mutex, where the requests leave `running` or `waiting`: stats() never shows a
// request gone from the running count but not yet among the ended.
void Scheduler::Impl::count_ended(const std::vector<Ended>& ended) {
  for (const Ended& e : ended) {
    switch (e.reason) {
      case FinishReason::kStop:
      case FinishReason::kLength: ++counters.finished; break;
      case FinishReason::kCancelled: ++counters.cancelled; break;
      case FinishReason::kError: ++counters.failed; break;
    }
  }
}

// Frees the slot and sends the FinishEvent (through the finisher when energy is measured).
void Scheduler::Impl::end(Ended e) {
  Active& a = *e.active;
  detach(a);
  if (a.slot >= 0) {
    // A choice whose prompt went through whole and did not fail: its prompt's KV stays cached.
    const bool keep = cache && a.decoding() && e.reason != FinishReason::kError;
    for (int slot : keep ? cache->insert(a.slot, a.request.prompt, a.reserve()) : std::vector<int>{a.slot}) {
      runner.close_sequence(slot);
    }
    a.slot = -1;
  }
  const Clock::time_point now = Clock::now();
  FinishEvent f;
  f.index = a.index;
  f.reason = e.reason;
  f.error = e.error;
  f.prompt_tokens = a.prompt_size();
  f.completion_tokens = a.generated;
  f.time_s = seconds((a.has_token ? a.last_token : now) - a.arrived);
  f.ttft_s = a.has_token ? seconds(a.first_token - a.arrived) : 0;
  f.queue_s = seconds((a.was_admitted ? a.admitted : now) - a.arrived);
  if (ledger) ledger->request_ended();
  if (!ledger) {
    a.stream->finish(std::move(f));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(finish_mutex);
    finishing.emplace_back(a.id, a.stream, std::move(f));
  }
  finish_cv.notify_all();
}

void Scheduler::Impl::finish_loop() {
  for (;;) {
    std::unique_lock<std::mutex> lock(finish_mutex);
    finish_cv.wait(lock, [&] { return finish_stop || !finishing.empty(); });
    if (finishing.empty()) return;
    auto [id, stream, event] = std::move(finishing.front());
    finishing.pop_front();
    lock.unlock();
    event.energy_j = ledger->take_request_energy(id);
    stream->finish(std::move(event));
  }
}

}  // namespace plexus
