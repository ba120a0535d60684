// tools/gpscope/cli.h: the `gpscope` launcher's command line. A table of
// commands in cli.cc (run, attach; monitor joins when tools/monitor lands),
// each in its own file with the CommandFn signature, so tests run them with
// string streams instead of a process.
//
//   gpscope run --output out -- python3 train.py
//   gpscope attach --pid 4242 --duration 600
//
// Exit codes: `run` returns the command's own (gpscope's own failures: 125,
// 126 not executable, 127 not found, as env(1)); `attach`: 0 ok, 1 failed,
// 2 bad usage.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_GPSCOPE_CLI_H_
#define GPSCOPE_TOOLS_GPSCOPE_CLI_H_

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpscope::launcher {

inline constexpr std::string_view kProgram = "gpscope";

using CommandFn = int (*)(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

// The whole program minus process plumbing; args excludes argv[0].
int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunMain(int argc, char** argv);

struct OptionSpec {
  const char* name;  // without "--"
  bool takes_value;
};

struct ParsedOptions {
  std::map<std::string, std::string> values;  // flags without a value map to ""
  std::vector<std::string> rest;              // after "--" or the first non-option
  bool has(const std::string& name) const { return values.count(name) != 0; }
  const std::string& get(const std::string& name) const { return values.at(name); }
};

// Parses leading --name / --name=value / --name value options (-h is
// --help). Stops at "--" (dropped) or at the first argument that is not an
// option (kept in rest): `gpscope run python3 -u x.py` passes -u to python.
absl::StatusOr<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                           const std::vector<OptionSpec>& specs);

// "2.5" -> 2.5e6 ns; false unless a number > 0 and <= 1 hour.
bool ParseMillisecondsAsNs(const std::string& text, uint64_t* ns);

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_CLI_H_
