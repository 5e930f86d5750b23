// PLEXUS_BATCH_FAIL parsing.
#include "batch/fault_injection.h"

#include <sstream>

#include "core/error.h"
#include "core/json.h"

namespace plexus::batch {

FaultInjection parse_fault_injection(const std::string& spec) {
  FaultInjection f;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    try {
      if (key == "replica" && !value.empty()) {
        f.replicas.insert(std::stoi(value));
      } else if (key == "id" && !value.empty()) {
        f.ids.insert(value);
      } else if (key == "kill_after" && !value.empty()) {
        f.kill_after = std::stoll(value);
        if (f.kill_after < 1) throw std::invalid_argument("kill_after");
      } else {
        throw std::invalid_argument(key);
      }
    } catch (const std::logic_error&) {
      throw InputError("PLEXUS_BATCH_FAIL: bad entry '" + item + "' (entries: replica=R, id=ID, kill_after=K)");
    }
  }
  return f;
}

std::string fault_id_text(const std::string& key) {
  const Json id = Json::parse(key);
  return id.is_string() ? id.get<std::string>() : key;
}

}  // namespace plexus::batch
