// tools/analyze/cli.cc: see cli.h.
#include "tools/analyze/cli.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/stubs/logging.h"
#include "tools/analyze/diff.h"
#include "tools/analyze/dump.h"
#include "tools/analyze/export.h"
#include "tools/analyze/info.h"
#include "tools/analyze/metrics.h"
#include "tools/analyze/report.h"
#include "tools/analyze/stats.h"
#include "tools/analyze/summary.h"
#include "tools/model/symbolizer.h"
#include "tools/reader/limits.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::analyze {
namespace {

// Add a command: one row here and one file beside this one.
constexpr Command kCommands[] = {
    {"info", "what a trace holds: processes, devices, time span, counts, losses", RunInfo},
    {"dump", "every event as JSON lines, names resolved (for scripts and tests)", RunDump},
    {"summary", "why the GPU is idle or slow: findings, the four numbers, kernels", RunSummary},
    {"report", "one self-contained HTML file: findings, timeline, charts", RunReport},
    {"export", "Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing", RunExport},
    {"diff", "what changed between two runs (BASE NEW), for regression checks", RunDiffCommand},
    {"metrics", "GPU and process utilization per window, idle GPUs, throttling", RunMetrics},
    {"stats", "nsys-style tables: NVTX ranges and their GPU time, CUDA API, kernels", RunStats},
};

void PrintUsage(std::ostream& out) {
  out << "usage: " << kProgram << " COMMAND [OPTIONS] FILE...\n\n"
      << "Analyses gpscope trace files.\n\ncommands:\n";
  for (const Command& c : kCommands) out << absl::StrFormat("  %-10s%s\n", c.name, c.summary);
  out << "\nRun '" << kProgram << " COMMAND --help' for a command's options.\n"
      << kCommonOptionsHelp
      << "Exit status: 0 ok, 1 a file could not be analysed, 2 usage error.\n";
}

// Takes --max-memory SIZE / --max-memory=SIZE out of args (every command
// has it) and sets the reader's budget. False, with a message, on a bad value.
bool TakeMemoryBudget(std::vector<std::string>* args, std::string* error) {
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == "--") break;
    std::string value;
    size_t erase = 0;
    const bool symbols = a == "--symbols" || a.rfind("--symbols=", 0) == 0;  // model/symbolizer.h
    if (a == "--max-memory" || a == "--symbols") {
      if (i + 1 >= args->size()) {
        *error = absl::StrCat("option ", a, " needs a value");
        return false;
      }
      value = (*args)[i + 1];
      erase = 2;
    } else if (a.rfind("--max-memory=", 0) == 0 || symbols) {
      value = a.substr(a.find('=') + 1);
      erase = 1;
    } else {
      continue;
    }
    if (symbols) {
      std::error_code ec;
      if (!std::filesystem::is_directory(value, ec)) {
        *error = absl::StrCat("--symbols ", value, ": not a directory");
        return false;
      }
      std::vector<std::string> dirs = model::SymbolDirs();
      dirs.push_back(value);
      model::SetSymbolDirs(std::move(dirs));
      args->erase(args->begin() + static_cast<std::ptrdiff_t>(i),
                  args->begin() + static_cast<std::ptrdiff_t>(i + erase));
      --i;
      continue;
    }
    absl::StatusOr<uint64_t> bytes = reader::ParseByteSize(value);
    if (!bytes.ok()) {
      *error = std::string(bytes.status().message());
      return false;
    }
    reader::SetMemoryBudgetBytes(*bytes);
    args->erase(args->begin() + static_cast<std::ptrdiff_t>(i),
                args->begin() + static_cast<std::ptrdiff_t>(i + erase));
    --i;
  }
  return true;
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     std::initializer_list<std::string_view> value_flags,
                                     std::initializer_list<std::string_view> bool_flags) {
  auto contains = [](std::initializer_list<std::string_view> list, std::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg == "-h") {
      parsed.flags["help"] = "";
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg[1] != '-') return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (contains(value_flags, name)) {
      if (eq != std::string::npos) {
        parsed.flags[name] = arg.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        parsed.flags[name] = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("option --", name, " needs a value"));
      }
    } else if (contains(bool_flags, name) && eq == std::string::npos) {
      parsed.flags[name] = "";
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    }
  }
  return parsed;
}

bool ReportPartial(const reader::TraceIndex& index, std::ostream& err) {
  if (!index.partial) return false;
  err << kProgram << ": " << index.partial->Message() << "\n";
  return true;
}

void ReportMissingEnds(const reader::TraceIndex& index, std::ostream& err) {
  if (index.partial) return;  // reading stopped early: ends were not reached
  for (const reader::ProcessInfo& p : index.processes) {
    if (p.end) continue;
    err << kProgram << ": " << p.path << ": process " << p.pid << " (uid "
        << absl::StrFormat("%016x", p.process_uid)
        << "): no end record: the process did not exit cleanly (killed, crashed or still "
           "running), so its trace may miss its last events\n";
  }
}

std::string PartialText(const reader::TraceIndex& index) {
  if (!index.partial) return "";
  return absl::StrCat("PARTIAL RESULT: ", index.partial->Message());
}

void WritePartialJson(const reader::TraceIndex& index, render::JsonWriter& json) {
  if (!index.partial) return;
  const reader::PartialRead& p = *index.partial;
  json.Key("partial").BeginObject();
  json.Key("reason").String("memory budget");
  json.Key("file").String(p.path);
  json.Key("offset").Uint(p.offset);
  json.Key("budget_bytes").Uint(p.budget_bytes);
  json.Key("resident_bytes").Uint(p.resident_bytes);
  json.Key("message").String(p.Message());
  json.EndObject();
}

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    PrintUsage(err);
    return kExitUsage;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(out);
    return kExitOk;
  }
  if (name == "--version") {
    out << kProgram << " " << GPSCOPE_VERSION << "\n";
    return kExitOk;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    std::string error;
    reader::SetMemoryBudgetBytes(reader::kDefaultMemoryBudgetBytes);
    reader::SetReadingShare(0.5);
    model::SetSymbolDirs({});
    if (!TakeMemoryBudget(&rest, &error)) {
      err << kProgram << " " << name << ": " << error << "\n";
      return kExitUsage;
    }
    const bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                      std::find(rest.begin(), rest.end(), "-h") != rest.end();
    const int code = c.run(rest, out, err);
    if (help && code == kExitOk) out << "\n" << kCommonOptionsHelp;
    return code;
  }
  err << kProgram << ": unknown command '" << name << "'; run '" << kProgram
      << " --help' for the list\n";
  return kExitUsage;
}

int RunMain(int argc, char** argv) {
  // libprotobuf logs parse problems (e.g. invalid UTF-8) to stderr on its
  // own; the reader reports them as warnings, one line each, instead.
  google::protobuf::SetLogHandler(nullptr);
  std::ios::sync_with_stdio(false);
  const int code = Run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  std::cout.flush();
  return code;
}

}  // namespace gpscope::analyze
