// Encoding throughput of plexus's tokenizer on one thread: MB/s over a text file encoded whole
// and paragraph by paragraph ("\n\n"-separated), one JSON line per tokenizer.
// usage: plexus_bench_tokenizer TEXT_FILE NAME=TOKENIZER_DIR... [--runs N]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mmap_file.h"
#include "core/timer.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plexus_bench_tokenizer TEXT_FILE NAME=TOKENIZER_DIR... [--runs N]\n");
    return 2;
  }
  try {
    const std::string text = plexus::read_text_file(argv[1]);
    int runs = 5;
    std::vector<std::string> specs;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
        runs = std::max(1, std::atoi(argv[++i]));
      } else {
        specs.push_back(argv[i]);
      }
    }
    std::vector<std::string> paragraphs;
    for (std::size_t b = 0; b < text.size();) {
      std::size_t e = text.find("\n\n", b);
      e = e == std::string::npos ? text.size() : e + 2;
      paragraphs.push_back(text.substr(b, e - b));
      b = e;
    }
    const auto median_best = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return std::make_pair(v[v.size() / 2], v.back());
    };
    for (const std::string& spec : specs) {
      const std::size_t eq = spec.find('=');
      if (eq == std::string::npos) throw plexus::InputError("'" + spec + "' must be NAME=TOKENIZER_DIR");
      plexus::Timer load_timer;
      auto tok = plexus::Tokenizer::load(spec.substr(eq + 1));
      const double load_s = load_timer.seconds();
      std::vector<std::int32_t> ids = tok->encode(text, false);  // warm-up (fills the merge cache)
      std::vector<double> mbps;
      for (int r = 0; r < runs; ++r) {
        plexus::Timer t;
        ids = tok->encode(text, false);
        mbps.push_back(static_cast<double>(text.size()) / 1e6 / t.seconds());
      }
      std::vector<double> para_mbps;
      std::size_t para_tokens = 0;
      for (int r = 0; r < runs; ++r) {
        para_tokens = 0;
        plexus::Timer t;
        for (const std::string& p : paragraphs) para_tokens += tok->encode(p, false).size();
        para_mbps.push_back(static_cast<double>(text.size()) / 1e6 / t.seconds());
      }
      const auto [whole_median, whole_best] = median_best(mbps);
      const auto [para_median, para_best] = median_best(para_mbps);
      unsigned long long hash = 1469598103934665603ULL;  // FNV-1a over the ids, to compare with the peer
      for (std::int32_t id : ids) hash = (hash ^ static_cast<std::uint32_t>(id)) * 1099511628211ULL;
      std::printf("{\"impl\":\"plexus\",\"tokenizer\":\"%s\",\"bytes\":%zu,\"tokens\":%zu,\"ids_hash\":\"%016llx\","
                  "\"load_s\":%.3f,\"mb_per_s_median\":%.2f,\"mb_per_s_best\":%.2f,\"paragraphs\":%zu,"
                  "\"paragraph_tokens\":%zu,\"paragraphs_mb_per_s_median\":%.2f,\"paragraphs_mb_per_s_best\":%.2f}\n",
                  spec.substr(0, eq).c_str(), text.size(), ids.size(), hash, load_s, whole_median, whole_best,
                  paragraphs.size(), para_tokens, para_median, para_best);
      std::fflush(stdout);
    }
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "plexus_bench_tokenizer: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
