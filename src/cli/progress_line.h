// A progress line on stderr that rewrites itself in place when stderr is a terminal (nothing
// otherwise), and is wiped before the command's own output or error: make-model, quantize.
#pragma once
#include <string>

namespace plexus::cli {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine() { clear(); }  // an exception unwinding leaves no half line before its message
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool on_terminal() const { return tty_; }
  // Replaces the line with `text` (nothing off a terminal).
  void show(const std::string& text);
  // Wipes the line, if one is shown.
  void clear();

 private:
  bool tty_;
  bool shown_ = false;
};

}  // namespace plexus::cli
