// Physical bounds of readings: a value outside them (NVML's 0xFFFFFFFF mW read as 4.29 MW, a
// temperature of 4 billion degrees) is a driver fault, dropped and counted, never summed.
#pragma once
#include "monitor/reading.h"

namespace plexus {

// Largest power any one accelerator or host draws (W), used for readings and counter steps.
inline constexpr double kMaxPlausiblePowerW = 5000;

// Empties every field of `r` outside its bounds; adds the number dropped to r.dropped and
// returns it.
int drop_implausible(DeviceReading& r);

}  // namespace plexus
