// `plexus monitor`'s two modes share the summary: watching until --duration or Ctrl-C
// (cmd_monitor.cpp), and watching while a command runs (`plexus monitor -- CMD`,
// cmd_monitor_command.cpp).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "monitor/monitor_session.h"

namespace plexus::cli {

// The summary as a table on `out`.
void print_monitor_summary(const MonitorSummary& summary, std::FILE* out);

// Runs `command` (argv, no shell) inside a monitoring session and returns its exit code (a signal
// death as 128 + signal). SIGINT/SIGTERM sent to plexus go on to the command; the summary is
// written either way, to `output` ("": standard error, so the command's own output stays clean),
// as JSON with `json`. InputError (exit 2) when the command cannot be run.
int monitor_command(const std::vector<std::string>& command, const MonitorOptions& options, SourceOptions sources,
                    bool json, const std::string& output);

}  // namespace plexus::cli
