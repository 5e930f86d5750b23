// Reading and checking the training data, and the slice of it each step and rank take.
#include "train/train_data.h"

#include <cassert>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json.h"

namespace plexus {

std::uint64_t fnv1a64(std::span<const unsigned char> bytes, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

// The ids of one line, checked; `where` is "PATH:LINE".
std::vector<std::int32_t> line_ids(const std::string& line, const std::string& where, std::int64_t vocab) {
  Json j;
  try {
    j = parse_json(line, where);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (each line must be a JSON object {\"ids\": [...]})");
  }
  if (!j.is_object() || !j.contains("ids")) {
    throw InputError(where + ": no \"ids\": each line must be a JSON object {\"ids\": [token ids]}");
  }
  const Json& ids = j["ids"];
  if (!ids.is_array()) throw InputError(where + ": \"ids\" must be a list of integers, got " + ids.dump().substr(0, 80));
  std::vector<std::int32_t> out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Json& v = ids[i];
    if (!v.is_number_integer()) {
      throw InputError(where + ": \"ids\"[" + std::to_string(i) + "] is " + v.dump().substr(0, 40) +
                       ": \"ids\" must be a list of integers");
    }
    const std::optional<std::int64_t> id = json_int64(v);  // 2^64 - 1 is no id, not -1
    if (!id || *id < 0 || *id >= vocab) {
      throw InputError(where + ": token id " + v.dump() + " (\"ids\"[" + std::to_string(i) +
                       "]) is outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
    }
    out.push_back(static_cast<std::int32_t>(*id));
  }
  if (out.size() < 2) {
    throw InputError(where + ": a sequence of " + std::to_string(out.size()) +
                     " token(s): training needs at least 2 (it predicts each token from those before it)");
  }
  return out;
}

}  // namespace

TrainData read_train_data(const std::string& path, std::int64_t vocab, std::int64_t seq_len) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("--data " + path + ": cannot open the file: check the path");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  TrainData data;
  data.path = path;
  data.file_bytes = text.size();
  data.file_hash = hex64(fnv1a64({reinterpret_cast<const unsigned char*>(text.data()), text.size()}));
  std::int64_t first_line = 0;  // the line that set T (seq_len 0)
  std::size_t begin = 0;
  for (std::int64_t number = 1; begin < text.size(); ++number) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    std::vector<std::int32_t> ids = line_ids(line, where, vocab);
    const auto n = static_cast<std::int64_t>(ids.size());
    if (seq_len > 0) {
      if (n < seq_len) {
        throw InputError(where + ": a sequence of " + std::to_string(n) + " tokens is shorter than --seq-len " +
                         std::to_string(seq_len) + ": lengthen it, drop the line or lower --seq-len");
      }
      ids.resize(static_cast<std::size_t>(seq_len));
    } else if (data.T == 0) {
      data.T = n;
      first_line = number;
    } else if (n != data.T) {
      throw InputError(where + ": a sequence of " + std::to_string(n) + " tokens, but line " +
                       std::to_string(first_line) + " has " + std::to_string(data.T) +
                       ": give --seq-len T to cut every sequence to its first T tokens");
    }
    data.tokens.insert(data.tokens.end(), ids.begin(), ids.end());
    ++data.sequences;
  }
  if (seq_len > 0) data.T = seq_len;
  if (data.sequences == 0) throw InputError("--data " + path + ": no sequences (every line is blank): nothing to train on");
  return data;
}

void step_sequences(const TrainData& data, std::int64_t step, std::int64_t global_batch, int rank, int ranks,
                    std::vector<std::int32_t>& out) {
  assert(ranks > 0 && global_batch % ranks == 0);
  const std::int64_t per_rank = global_batch / ranks;
  out.resize(static_cast<std::size_t>(per_rank * data.T));
  for (std::int64_t i = 0; i < per_rank; ++i) {
    const std::int64_t line = (step * global_batch + rank * per_rank + i) % data.sequences;
    std::copy_n(data.tokens.begin() + line * data.T, data.T, out.begin() + i * data.T);
  }
}

}  // namespace plexus
