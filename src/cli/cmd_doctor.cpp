// `plexus doctor [--devices 0,1] [--json]`: pre-flight check before a multi-device run. Exit 0
// when every requested device is usable, 1 when any is missing or unusable, 2 for bad usage.
#include <cstdio>

#include "backend/detect.h"
#include "backend/doctor.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/error.h"

namespace plexus::cli {

int cmd_doctor(int argc, char** argv) {
  Args args("doctor",
            "Check that the devices of a multi-device run are present and usable; recommend --max-memory "
            "and print ready-to-paste flags and a benchmark backend: block.");
  args.option("--devices", "LIST", "devices to check, e.g. 0,1,2,3 (default: every detected device)");
  add_device_options(args);
  args.flag("--json", "print the report as JSON");
  args.epilog("exit codes: 0 every requested device usable, 1 one is missing or unusable, 2 bad usage");
  if (!args.parse(argc, argv)) return 0;
  const Inventory inv = detect_devices(device_options_from(args));
  std::vector<int> requested;
  if (auto list = args.get_optional("--devices")) {
    for (long long v : parse_device_list(*list, "--devices")) requested.push_back(static_cast<int>(v));
  } else {
    for (const DeviceInfo& d : inv.devices) requested.push_back(d.index);
  }
  const DoctorReport report = run_doctor(inv, requested);
  if (args.get_flag("--json")) {
    std::printf("%s\n", to_json(report).dump(2).c_str());
  } else {
    std::fputs(to_text(report).c_str(), stdout);
    if (requested.empty())
      std::printf("no device was detected: check the driver (plexus detect), or use --virtual-devices N\n");
  }
  return report.ok ? 0 : 1;
}

}  // namespace plexus::cli
