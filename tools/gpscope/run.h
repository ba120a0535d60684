// tools/gpscope/run.h: `gpscope run [OPTIONS] [--] COMMAND ARGS...`.
//
// Runs COMMAND with the collector injected (CUDA_INJECTION64_PATH pointing
// at libgpscope_inject.so, GPSCOPE_* set from the options), shows a live
// progress line on stderr when stderr is a terminal (tailing the trace files
// as they grow: tools/reader/trace_tail.h), and when COMMAND exits writes the HTML report
// and prints the findings (analysis.h). Exits with COMMAND's exit code
// (128 + signal when a signal killed it).
//
//   gpscope run -- python3 train.py --epochs 1
//   gpscope run --output /data/traces --delay 60 --duration 30 -- ./app
//   gpscope run --capture-range nvtx:train --range-count 2 -- python3 train.py
//   gpscope run --standby -- python3 serve.py      # then: gpscope attach --pid ...
//
// Thread model: single-threaded (signal forwarding: child.h).
#ifndef GPSCOPE_TOOLS_GPSCOPE_RUN_H_
#define GPSCOPE_TOOLS_GPSCOPE_RUN_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/gpscope/progress.h"

namespace gpscope::launcher {

inline constexpr int kExitLauncherFailed = 125;  // gpscope's own failure, as env(1)

struct RunOptions {
  std::string output_dir;   // empty: a fresh gpscope-out/run-<time> directory
  std::string lib_path;     // empty: search (FindInjectLibrary)
  std::string report_path;  // empty: <output>/report.html
  bool report = true;
  bool progress = true;  // also needs a terminal on stderr
  uint64_t idle_gap_ns = 0;
  // The GPSCOPE_* variables the options set, validated with the collector's
  // own parser (so a value the collector would refuse is a usage error here).
  std::map<std::string, std::string> env;
  WindowPlan window;
  std::vector<std::string> command;
  bool help = false;
};

// Parses `run`'s arguments. An error is one line naming the option.
absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args);

// The collector library: `explicit_path` when given (it must exist), else
// next to the launcher binary, in ../lib or ../lib/gpscope from it, and in
// `build_tree_path` (by default the library this build made, so the
// launcher works from its build tree). An error lists the places looked at.
absl::StatusOr<std::string> FindInjectLibrary(const std::string& explicit_path,
                                              const std::string& launcher_path,
                                              const std::string& build_tree_path);
absl::StatusOr<std::string> FindInjectLibrary(const std::string& explicit_path,
                                              const std::string& launcher_path);

// `base` (NAME=value entries) with `set` replacing or adding entries.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::map<std::string, std::string>& set);

// The command. `out` gets nothing the command does not print; the
// launcher's own lines go to `err`.
int RunRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_RUN_H_
