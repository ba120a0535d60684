// tools/analyze/cli.h: gpscope-analyze's command line. A table of commands
// (info, later summary/export/diff/report) in cli.cc; each command lives in
// its own file and has the CommandFn signature, so tests can run it with
// string streams instead of a process.
//
//   gpscope-analyze info --format json node0.gpstrace
//
// Exit codes: 0 ok (warnings about damaged data included), 1 a file could not
// be analysed, 2 bad usage. Every failure is one stderr line naming the file.
// Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_CLI_H_
#define GPSCOPE_TOOLS_ANALYZE_CLI_H_

#include <initializer_list>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/reader/trace_reader.h"
#include "tools/render/read_status.h"

namespace gpscope::analyze {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr std::string_view kProgram = render::kAnalyzeProgram;

// Options every command takes (cli.cc handles them before the command
// runs); printed under each command's --help.
inline constexpr char kCommonOptionsHelp[] =
    "options of every command:\n"
    "  --max-memory SIZE  memory budget (default 2G; e.g. 512M, 8G, unlimited). Reading\n"
    "                     may use half of it (report: a quarter; the rest is for the\n"
    "                     analysis and output); past that, reading stops with one message\n"
    "                     naming the file and offset, and the output says it is PARTIAL\n"
    "                     (exit status 1)\n"
    "  --symbols DIR      where to look for the native modules named by call stacks, and\n"
    "                     their debug files (DIR/.build-id/xx/yyyy.debug), to show a\n"
    "                     native frame's file:line and function (repeatable; the recorded\n"
    "                     path and /usr/lib/debug are always looked at; build ids must match)\n";

// Prints the memory budget's stop (reader::TraceIndex::partial), if any,
// as one stderr line; true when reading was partial.
bool ReportPartial(const reader::TraceIndex& index, std::ostream& err);

// One stderr line per process whose end record never came (the file ended
// at a frame boundary without it: killed, crashed or still running), as
// summary and info say it.
void ReportMissingEnds(const reader::TraceIndex& index, std::ostream& err);

// How outputs say that reading was partial (render/read_status.h).
using render::PartialText;
using render::WritePartialJson;

// args: what follows the command name.
using CommandFn = int (*)(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);

struct Command {
  const char* name;
  const char* summary;  // one line for the top-level --help
  CommandFn run;
};

// The whole program minus process plumbing; args excludes argv[0].
int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunMain(int argc, char** argv);

// Parsed command arguments: --name=value / --name value flags and the rest.
struct ParsedArgs {
  std::map<std::string, std::string> flags;  // boolean flags map to ""
  std::vector<std::string> positional;
  bool has(const std::string& flag) const { return flags.count(flag) != 0; }
};

// value_flags take a value, bool_flags do not; both listed without "--".
// "--" ends the flags; "-h" means --help. Unknown flags and missing values
// are InvalidArgument errors with a one-line message.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     std::initializer_list<std::string_view> value_flags,
                                     std::initializer_list<std::string_view> bool_flags);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_CLI_H_
