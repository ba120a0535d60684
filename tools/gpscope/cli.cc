// tools/gpscope/cli.cc: see cli.h.
#include "tools/gpscope/cli.h"

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/stubs/logging.h"
#include "tools/gpscope/attach.h"
#include "tools/gpscope/paths.h"
#include "tools/gpscope/run.h"
#include "tools/monitor/monitor.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::launcher {
namespace {

// Add a command: one row here and one file beside this one.
constexpr Command kCommands[] = {
    {"run", "run a command with the collector injected; live progress, report at exit", RunRun},
    {"attach", "trace a running process (started in standby) for a window, then report",
     RunAttach},
    // Runs its loop on this (the main) thread, before any other thread.
    {"monitor", "the node monitor: every GPU and process, rotating files, Prometheus",
     monitor::RunMonitor},
};

void PrintUsage(std::ostream& out) {
  out << "usage: " << kProgram << " COMMAND [OPTIONS] ...\n\n"
      << "Traces CUDA programs without code changes (gpscope-analyze reads the traces).\n\n"
      << "commands:\n";
  for (const Command& c : kCommands) out << absl::StrFormat("  %-8s %s\n", c.name, c.summary);
  out << "\nRun '" << kProgram << " COMMAND --help' for a command's options.\n";
}

}  // namespace

absl::StatusOr<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                           const std::vector<OptionSpec>& specs) {
  ParsedOptions parsed;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h") {
      parsed.values["help"] = "";
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      if (!arg.empty() && arg[0] == '-') {
        return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
      }
      break;  // the command starts here
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (name == s.name) spec = &s;
    }
    if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown option --", name));
    if (!spec->takes_value) {
      if (eq != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("option --", name, " takes no value"));
      }
      parsed.values[name] = "";
    } else if (eq != std::string::npos) {
      parsed.values[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      parsed.values[name] = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("option --", name, " needs a value"));
    }
  }
  parsed.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return parsed;
}

bool ParseMillisecondsAsNs(const std::string& text, uint64_t* ns) {
  double ms = 0;
  if (!absl::SimpleAtod(text, &ms) || !(ms > 0) || ms > 3.6e6) return false;
  *ns = static_cast<uint64_t>(ms * 1e6);
  return true;
}

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    PrintUsage(err);
    return 2;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(out);
    return 0;
  }
  if (name == "--version") {
    out << kProgram << " " << GPSCOPE_VERSION << "\n";
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run({args.begin() + 1, args.end()}, out, err);
  }
  err << kProgram << ": unknown command '" << Shown(name) << "'; run '" << kProgram
      << " --help' for the list\n";
  return 2;
}

int RunMain(int argc, char** argv) {
  google::protobuf::SetLogHandler(nullptr);  // the reader reports parse problems itself
  const int code = Run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  std::cout.flush();
  return code;
}

}  // namespace gpscope::launcher
