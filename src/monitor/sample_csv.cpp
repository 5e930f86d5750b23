// CSV rows for samples.
#include "monitor/sample_csv.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include "core/error.h"

namespace plexus {

namespace {
void cell(std::FILE* f, const std::optional<double>& v) {
  if (v) std::fprintf(f, ",%.6g", *v);
  else std::fputs(",", f);
}
}  // namespace

const char* SampleCsv::header() {
  return "t_s,device,kind,name,utilization_percent,memory_utilization_percent,memory_used_mb,memory_total_mb,"
         "power_w,temperature_c,sm_clock_mhz,memory_clock_mhz,throttle_reasons,energy_counter_j,process_rss_mb";
}

SampleCsv::SampleCsv(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr)
    throw RuntimeError("cannot write the monitoring CSV '" + path + "': " + std::strerror(errno) +
                       "; choose a writable path for --csv");
  std::fprintf(file_, "%s\n", header());
  std::fflush(file_);
}

SampleCsv::~SampleCsv() {
  if (file_ != nullptr) std::fclose(file_);
}

void SampleCsv::write(const Sample& sample) {
  for (const DeviceReading& r : sample.readings) {
    std::string name = r.name;
    for (char& c : name)
      if (c == ',' || c == '"' || c == '\n') c = ' ';
    std::fprintf(file_, "%.6f,%s,%s,%s", sample.t_s, r.key().c_str(), device_kind_name(r.kind), name.c_str());
    cell(file_, r.utilization_percent);
    cell(file_, r.memory_utilization_percent);
    cell(file_, r.memory_used_mb);
    cell(file_, r.memory_total_mb);
    cell(file_, r.power_w);
    cell(file_, r.temperature_c);
    cell(file_, r.sm_clock_mhz);
    cell(file_, r.memory_clock_mhz);
    if (r.throttle_reasons) std::fprintf(file_, ",%llu", static_cast<unsigned long long>(*r.throttle_reasons));
    else std::fputs(",", file_);
    cell(file_, r.energy_counter_j);
    cell(file_, r.process_rss_mb);
    std::fputc('\n', file_);
  }
  std::fflush(file_);
}

}  // namespace plexus
