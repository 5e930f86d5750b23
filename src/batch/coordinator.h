// The one writer of a `plexus batch` run: owns the requests, the output and errors journals,
// the work queue and the counts. Resumes from the output already there (finished ids are not
// queued), commits each result durably before it counts, and writes requests that fail for good
// to the errors file. Thread-safe: replica threads (or the MPI coordinator loop) call commit().
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "batch/journal.h"
#include "batch/progress.h"
#include "batch/replica_worker.h"
#include "batch/request.h"
#include "batch/summary.h"
#include "batch/work_queue.h"
#include "core/timer.h"
#include "tokenizer/tokenizer.h"

namespace plexus::batch {

struct CoordinatorOptions {
  std::string output;             // OUT.jsonl; errors go to OUT.errors.jsonl (see errors_path)
  QueueOptions queue;
  std::int64_t kill_after = 0;    // fault injection: SIGKILL after this many results of this run
  bool progress = false;          // draw the progress bar on stderr
  std::string model;              // the model's name in OpenAI response bodies (MODEL as given)
};

// "OUT.jsonl" -> "OUT.errors.jsonl" ("OUT" -> "OUT.errors.jsonl").
std::string errors_path(const std::string& output);

// The output's format: one result per line, each starting {"object": "plexus.batch.result", ...}.
// Resumed: files of such lines, of unmarked results (older outputs) and of results after the
// {"plexus_batch": "results", "format": 1} line older versions began with; anything else is
// refused untouched (docs/batch.md).
inline constexpr const char* kResultObject = "plexus.batch.result";
const JournalFormat& results_format();
// The output's format for an input of `format`: results_format(), or OpenAI's result lines.
const JournalFormat& output_format(LineFormat format);
// The request id of a result line, as BatchRequest::key: OpenAI's "custom_id", plexus's "id".
std::string result_key(const Json& line);

// InputError when OUT.jsonl or OUT.errors.jsonl is the input file (compared by device and inode,
// symlinks and hard links included) or the output is its own errors file.
void check_output_is_not_input(const std::string& input, const std::string& output);

class Coordinator {
 public:
  // `bad` lines (skipped) are written to the errors file first. `tokenizer` (may be null) adds
  // "text" to results (OpenAI-format inputs always have one). `output`: the output journal when the caller opened it already (to see
  // what is done), else null.
  Coordinator(ParsedInput input, const std::string& input_path, const Tokenizer* tokenizer, const CoordinatorOptions& options,
              std::unique_ptr<Journal> output = nullptr);

  WorkQueue& queue() { return *queue_; }
  Task task(std::size_t index) const;
  std::vector<Task> tasks(const std::vector<std::size_t>& indices) const;

  // Writes successes (each id at most once) and reports failures to the queue; requests out of
  // tries go to the errors file.
  void commit(const std::vector<Outcome>& outcomes);
  // A replica that could not start (or died): taken out with `reason`.
  void replica_lost(int replica, const std::string& reason);
  // Writes what failed for good and ends the progress bar; the run's summary.
  BatchSummary finish();

 private:
  void write_failures_locked();
  void note_removed_locked();

  // The result line of a successful outcome, in the input's format.
  std::string result_line(const BatchRequest& request, const Outcome& outcome) const;

  LineFormat format_;
  std::vector<BatchRequest> requests_;
  const Tokenizer* tokenizer_;
  CoordinatorOptions options_;
  std::mutex mutex_;
  std::unique_ptr<Journal> output_, errors_;
  std::unique_ptr<WorkQueue> queue_;
  std::vector<bool> written_;  // by request index
  BatchSummary summary_;
  std::unique_ptr<Progress> progress_;
  Timer timer_;
};

}  // namespace plexus::batch
