// Running plexus the way the command-line tests need.
#include "cli_run.h"

#include <gtest/gtest.h>

#include <fstream>

#include "model/make_model.h"

namespace plexus::testing {

std::string tiny_model(const TempDir& dir) {
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  return dir.path();
}

namespace {
// A command that should stop at once but hangs (monitor --duration inf did) fails with 124.
const char* const kNoVirtual = "timeout -k 5 120 env -u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_DEVICE_MEMORY -u PLEXUS_VIRTUAL_GPUS CUDA_VISIBLE_DEVICES= ";
}

ProcessResult run_no_gpu(const std::string& args) {
  return run_command(std::string(kNoVirtual) +
                     "PLEXUS_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so " +
                     shell_quote(PLEXUS_BINARY) + " " + args);
}

ProcessResult run_four_gpus(const std::string& args) {
  const std::string script = std::string(PLEXUS_SOURCE_DIR) + "/tests/backend/data/four_gpus.json";
  return run_command(std::string(kNoVirtual) + "PLEXUS_NVML_LIBRARY=" + shell_quote(FAKE_NVML_LIBRARY) +
                     " PLEXUS_FAKE_NVML_SCRIPT=" + shell_quote(script) +
                     " PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so " + shell_quote(PLEXUS_BINARY) + " " + args);
}

void expect_usage_error(const ProcessResult& r, const std::string& what, std::initializer_list<std::string> mentions) {
  EXPECT_EQ(r.exit_code, 2) << what << "\nstdout: " << r.out << "\nstderr: " << r.err;
  for (const std::string& m : mentions) EXPECT_NE(r.err.find(m), std::string::npos) << what << ": no '" << m << "' in\n" << r.err;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace plexus::testing
