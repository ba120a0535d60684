// tools/gpscope/run.cc: see run.h.
#include "tools/gpscope/run.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/control/capture_window.h"
#include "common/env_values.h"
#include "common/posix.h"
#include "tools/gpscope/analysis.h"
#include "tools/gpscope/child.h"
#include "tools/gpscope/cli.h"
#include "tools/gpscope/paths.h"
#include "tools/reader/trace_tail.h"

extern char** environ;

namespace gpscope::launcher {
namespace {

constexpr char kLibraryName[] = "libgpscope_inject.so";

constexpr char kUsage[] =
    "usage: gpscope run [OPTIONS] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with the gpscope collector injected (no change to it), shows live\n"
    "progress on stderr (when it is a terminal), and when COMMAND exits writes the HTML\n"
    "report and prints the findings. Exits with COMMAND's exit code.\n"
    "\n"
    "options:\n"
    "  --output DIR               trace directory (default: a new gpscope-out/run-<time>)\n"
    "  --lib PATH                 libgpscope_inject.so (default: next to gpscope, ../lib)\n"
    "  --report PATH              where the HTML report goes (default DIR/report.html)\n"
    "  --no-report                no report and no findings at exit\n"
    "  --no-progress              no progress line\n"
    "capture window (default: everything from CUDA start to exit):\n"
    "  --delay S                  start tracing S seconds after start (GPSCOPE_CAPTURE_DELAY_S)\n"
    "  --duration S               trace for S seconds (GPSCOPE_CAPTURE_DURATION_S)\n"
    "  --capture-range nvtx:NAME  start at the first NVTX range NAME, stop when it ends\n"
    "                             (NAME* matches a prefix) (GPSCOPE_CAPTURE_RANGE)\n"
    "  --range-count N            ...or when its N-th occurrence ends (GPSCOPE_CAPTURE_RANGE_COUNT)\n"
    "  --steps N                  stop after N training steps (GPSCOPE_CAPTURE_STEPS)\n"
    "  --standby                  metrics only until `gpscope attach` (GPSCOPE_STANDBY=1)\n"
    "sampling and analysis:\n"
    "  --metrics-interval-ms MS   GPU/host metrics sampling interval, 10..1000 (default 100)\n"
    "  --idle-gap-ms MS           idle gaps shorter than this are normal (analysis; default 5)\n"
    "\n"
    "Exit status: COMMAND's (128+N when signal N killed it); 125 gpscope failed,\n"
    "126 COMMAND not executable, 127 COMMAND not found.\n";

const std::vector<OptionSpec> kRunOptions = {
    {"help", false},          {"output", true},        {"lib", true},
    {"report", true},         {"no-report", false},    {"no-progress", false},
    {"delay", true},          {"duration", true},      {"capture-range", true},
    {"range-count", true},    {"steps", true},         {"standby", false},
    {"metrics-interval-ms", true}, {"idle-gap-ms", true},
};

// The collector's parser reads a GetEnvFn; during validation it reads this.
const std::map<std::string, std::string>* g_validating = nullptr;
const char* ValidatingEnv(const char* name) {
  const auto it = g_validating->find(name);
  return it == g_validating->end() ? nullptr : it->second.c_str();
}

}  // namespace

absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedOptions> parsed = ParseOptions(args, kRunOptions);
  if (!parsed.ok()) return parsed.status();
  RunOptions o;
  const ParsedOptions& p = *parsed;
  if (p.has("help")) {
    o.help = true;
    return o;
  }
  if (p.has("output")) o.output_dir = p.get("output");
  if (p.has("lib")) o.lib_path = p.get("lib");
  if (p.has("report")) o.report_path = p.get("report");
  o.report = !p.has("no-report");
  o.progress = !p.has("no-progress");
  if (p.has("report") && !o.report) {
    return absl::InvalidArgumentError("--report and --no-report contradict each other");
  }
  for (const char* flag : {"output", "lib", "report"}) {
    if (p.has(flag) && p.get(flag).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs a path"));
    }
  }
  if (p.has("idle-gap-ms") && !ParseMillisecondsAsNs(p.get("idle-gap-ms"), &o.idle_gap_ns)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--idle-gap-ms must be a number of milliseconds > 0, not '", p.get("idle-gap-ms"), "'"));
  }
  if (p.has("metrics-interval-ms")) {
    uint64_t ms = 0;
    const std::string& v = p.get("metrics-interval-ms");
    // As the collector reads GPSCOPE_METRICS_INTERVAL_MS (plain digits).
    if (!common::ParseWholeNumber(v.c_str(), 10, 1000, &ms)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-interval-ms must be a whole number 10..1000, not '", v, "'"));
    }
    o.env["GPSCOPE_METRICS_INTERVAL_MS"] = v;
  }
  // The window options become the collector's variables; the collector's
  // own parser validates them, so both sides agree on what is valid.
  const std::pair<const char*, const char*> window_flags[] = {
      {"delay", "GPSCOPE_CAPTURE_DELAY_S"},
      {"duration", "GPSCOPE_CAPTURE_DURATION_S"},
      {"capture-range", "GPSCOPE_CAPTURE_RANGE"},
      {"range-count", "GPSCOPE_CAPTURE_RANGE_COUNT"},
      {"steps", "GPSCOPE_CAPTURE_STEPS"},
  };
  std::map<std::string, std::string> window_env;
  for (const auto& [flag, var] : window_flags) {
    if (!p.has(flag)) continue;
    if (p.get(flag).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs a value"));
    }
    window_env[var] = p.get(flag);
  }
  if (p.has("standby")) window_env["GPSCOPE_STANDBY"] = "1";
  std::vector<std::string> problems;
  g_validating = &window_env;
  const control::CaptureConfig capture =
      control::ParseCaptureConfig(&ValidatingEnv, &problems);
  g_validating = nullptr;
  if (!problems.empty()) {
    std::string flag;
    for (const auto& [f, var] : window_flags) {
      if (problems[0].rfind(var, 0) == 0 && flag.empty()) flag = absl::StrCat("--", f, ": ");
    }
    if (problems[0].rfind("GPSCOPE_STANDBY", 0) == 0 ||
        problems[0].find("ignored with GPSCOPE_STANDBY") != std::string::npos) {
      flag = "--standby: ";
    }
    std::string problem = problems[0];
    const size_t using_default = problem.rfind("; using ");
    if (using_default != std::string::npos) problem.resize(using_default);
    return absl::InvalidArgumentError(absl::StrCat(flag, problem));
  }
  o.env.insert(window_env.begin(), window_env.end());
  o.window.delay_ms = capture.delay_ms;
  o.window.duration_ms = capture.duration_ms;
  o.window.triggered = !capture.range_name.empty() || capture.steps > 0;
  o.command = p.rest;
  if (o.command.empty()) {
    return absl::InvalidArgumentError("no command given: gpscope run [OPTIONS] -- COMMAND [ARGS...]");
  }
  return o;
}

absl::StatusOr<std::string> FindInjectLibrary(const std::string& explicit_path,
                                              const std::string& launcher_path) {
#ifdef GPSCOPE_BUILD_TREE_INJECT_LIB
  return FindInjectLibrary(explicit_path, launcher_path, GPSCOPE_BUILD_TREE_INJECT_LIB);
#else
  return FindInjectLibrary(explicit_path, launcher_path, "");
#endif
}

absl::StatusOr<std::string> FindInjectLibrary(const std::string& explicit_path,
                                              const std::string& launcher_path,
                                              const std::string& build_tree_path) {
  if (!explicit_path.empty()) {
    if (IsFile(explicit_path)) return Absolute(explicit_path);
    return absl::NotFoundError(absl::StrCat("--lib ", explicit_path, ": no such file"));
  }
  std::vector<std::string> places;
  if (!launcher_path.empty()) {
    const std::string dir = Dirname(launcher_path);
    places = {dir + "/" + kLibraryName, dir + "/../lib/" + kLibraryName,
              dir + "/../lib/gpscope/" + kLibraryName};
  }
  if (!build_tree_path.empty()) places.push_back(build_tree_path);  // running from the build tree
  for (const std::string& place : places) {
    if (IsFile(place)) return place;
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot find ", kLibraryName, " (looked at: ", absl::StrJoin(places, ", "),
      "); pass --lib /path/to/", kLibraryName));
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (const std::string& entry : base) {
    const std::string name = entry.substr(0, entry.find('='));
    if (set.count(name) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

int RunRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<RunOptions> parsed = ParseRunArgs(args);
  if (!parsed.ok()) {
    err << "gpscope run: " << Shown(std::string(parsed.status().message()))
        << "; run 'gpscope run --help'\n";
    return kExitLauncherFailed;
  }
  RunOptions& o = *parsed;
  if (o.help) {
    out << kUsage;
    return 0;
  }
  absl::StatusOr<std::string> lib = FindInjectLibrary(o.lib_path, SelfPath());
  if (!lib.ok()) {
    err << "gpscope run: " << Shown(std::string(lib.status().message())) << "\n";
    return kExitLauncherFailed;
  }
  if (o.output_dir.empty()) o.output_dir = FreshDir("gpscope-out/run");
  std::string absolute, why;
  if (!OpenOwnDir(o.output_dir, &absolute, &why)) {
    err << "gpscope run: output directory: " << Shown(why) << "\n";
    return kExitLauncherFailed;
  }
  o.output_dir = absolute;  // the command may chdir
  const std::string report_path =
      o.report_path.empty() ? o.output_dir + "/report.html" : Absolute(o.report_path);

  std::map<std::string, std::string> set = o.env;
  set["CUDA_INJECTION64_PATH"] = *lib;
  set["GPSCOPE_OUTPUT"] = o.output_dir;
  if (const char* current = getenv("CUDA_INJECTION64_PATH");
      current != nullptr && *current != '\0' && *lib != current) {
    err << "gpscope run: replacing CUDA_INJECTION64_PATH=" << Shown(current) << "\n";
  }
  std::vector<std::string> base;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) base.push_back(*e);

  reader::TraceTail tail(o.output_dir);
  tail.SkipExisting();
  if (!tail.ListTraceFiles().empty()) {
    err << "gpscope run: " << Shown(o.output_dir)
        << " already holds traces; this run appends to files of the same job and host "
           "(use a new --output for a report of this run alone)\n";
  }
  err << "gpscope: tracing '" << Shown(absl::StrJoin(o.command, " ")) << "' into "
      << Shown(o.output_dir) << "\n";

  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess child;
  std::string error;
  int exec_code = 0;
  if (!child.Spawn(o.command, MergeEnvironment(base, set), &error, &exec_code)) {
    err << "gpscope run: " << Shown(error) << "\n";
    return exec_code;
  }
  ForwardSignalsTo(child.pid());
  ProgressPrinter printer(err, o.progress && isatty(STDERR_FILENO));
  const size_t width = TerminalWidth(STDERR_FILENO);
  int code = 0;
  uint64_t last_poll_ms = 0;
  bool first = true;
  while (!child.TryWait(&code)) {
    const uint64_t now_ms = MsSince(t0);
    if (printer.enabled() && (first || now_ms - last_poll_ms >= 500)) {
      first = false;
      last_poll_ms = now_ms;
      tail.Poll();
      printer.Show(RenderRunProgress({now_ms, o.window, tail.stats()}, width));
    }
    common::SleepMs(100);
  }
  StopForwardingSignals();  // a second Ctrl-C now stops the report
  printer.Clear();
  tail.Poll();
  const uint64_t elapsed_ms = MsSince(t0);
  const reader::TailStats& s = tail.stats();
  err << "gpscope: '" << Shown(o.command[0]) << "' exited with code " << code << " after "
      << FormatClock(elapsed_ms) << "; " << s.processes
      << (s.processes == 1 ? " process, " : " processes, ") << FormatCount(s.events)
      << " events, " << FormatBytes(s.bytes) << ", " << FormatCount(s.drops)
      << (s.drops == 1 ? " drop\n" : " drops\n");
  const std::vector<std::string> files = tail.ChangedFiles();
  if (files.empty()) {
    err << "gpscope: no trace was written to " << Shown(o.output_dir)
        << ": the command never initialized CUDA, or the collector could not start (see its "
           "'gpscope:' lines above)\n";
    return code;
  }
  if (!o.report) {
    err << "gpscope: traces: " << Shown(absl::StrJoin(files, " ")) << "\n";
    return code;
  }
  AnalysisOptions analysis;
  analysis.report_path = report_path;
  analysis.idle_gap_ns = o.idle_gap_ns;
  ReportAndFindings(files, analysis, err);
  return code;
}

}  // namespace gpscope::launcher
