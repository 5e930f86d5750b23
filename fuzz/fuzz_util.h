// Shared by the fuzz harnesses: input bytes as text, a scratch file per process for the readers
// that take a path, and the one rule every harness checks — plexus::Error or success, nothing
// else (a crash, a sanitizer report, another exception) is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace plexus::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// DIR/plexus_fuzz_<pid>/NAME holding `bytes` (rewritten for every input).
inline std::string scratch_file(const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("plexus_fuzz_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path.string();
}

}  // namespace plexus::fuzz
