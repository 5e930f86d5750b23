// CSV rows for samples, written whole or cut back.
#include "monitor/sample_csv.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace plexus {

namespace {
void cell(std::string& out, const std::optional<double>& v) {
  out += ',';
  if (!v) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  out += buf;
}
}  // namespace

const char* SampleCsv::header() {
  return "t_s,device,kind,name,utilization_percent,memory_utilization_percent,memory_used_mb,memory_total_mb,"
         "power_w,temperature_c,sm_clock_mhz,memory_clock_mhz,throttle_reasons,energy_counter_j,process_rss_mb";
}

SampleCsv::SampleCsv(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw RuntimeError("cannot write the monitoring CSV '" + path + "': " + std::strerror(errno) +
                       "; choose a writable path for --csv");
  if (!append(std::string(header()) + "\n")) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(path.c_str());  // not even the header fits: leave no empty file behind
    throw RuntimeError(*error_);
  }
}

SampleCsv::~SampleCsv() {
  if (fd_ >= 0) ::close(fd_);
}

std::string SampleCsv::rows(const Sample& sample) {
  std::string out;
  for (const DeviceReading& r : sample.readings) {
    std::string name = r.name;
    for (char& c : name)
      if (c == ',' || c == '"' || c == '\n' || c == '\r') c = ' ';
    char t[48];
    std::snprintf(t, sizeof t, "%.6f", sample.t_s);
    out += std::string(t) + "," + r.key() + "," + device_kind_name(r.kind) + "," + name;
    cell(out, r.utilization_percent);
    cell(out, r.memory_utilization_percent);
    cell(out, r.memory_used_mb);
    cell(out, r.memory_total_mb);
    cell(out, r.power_w);
    cell(out, r.temperature_c);
    cell(out, r.sm_clock_mhz);
    cell(out, r.memory_clock_mhz);
    out += ',';
    if (r.throttle_reasons) out += std::to_string(static_cast<unsigned long long>(*r.throttle_reasons));
    cell(out, r.energy_counter_j);
    cell(out, r.process_rss_mb);
    out += '\n';
  }
  return out;
}

bool SampleCsv::append(const std::string& text) {
  if (error_) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Cut a partly written sample off, so the file ends after its last complete row.
      if (::ftruncate(fd_, complete_bytes_) == 0) ::lseek(fd_, complete_bytes_, SEEK_SET);
      error_ = "writing the monitoring CSV '" + path_ + "' failed: " + std::strerror(err) +
               (err == ENOSPC ? " (disk full)" : "") + "; the file keeps the samples written before";
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  complete_bytes_ += static_cast<std::int64_t>(text.size());
  return true;
}

bool SampleCsv::write(const Sample& sample) { return append(rows(sample)); }

}  // namespace plexus
