// Streams samples to a CSV file as they come: one row per device per sample, empty cells for
// values a source could not read.
#pragma once
#include <cstdio>
#include <string>

#include "monitor/reading.h"

namespace plexus {

class SampleCsv {
 public:
  // Creates `path` and writes the header; throws RuntimeError naming the path on failure.
  explicit SampleCsv(const std::string& path);
  ~SampleCsv();
  SampleCsv(const SampleCsv&) = delete;
  SampleCsv& operator=(const SampleCsv&) = delete;

  void write(const Sample& sample);  // flushed, so a crash keeps what was measured

  static const char* header();

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace plexus
