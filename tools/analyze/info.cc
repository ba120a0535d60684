// tools/analyze/info.cc: see info.h.
#include "tools/analyze/info.h"

#include "tools/analyze/cli.h"
#include "tools/render/text_sanitize.h"

namespace gpscope::analyze {
namespace {

constexpr char kInfoUsage[] =
    "usage: gpscope-analyze info [--format text|json] FILE...\n"
    "\n"
    "Shows what gpscope trace files hold: per process its identity, command line,\n"
    "devices, time span, frames read and lost, event counts per kind, dropped records,\n"
    "lost intervals and whether it exited cleanly; then warnings about damaged data.\n"
    "\n"
    "  --format text|json  output format (default text; json has stable keys)\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: 0 ok (also when data was damaged: see warnings), 1 a file could not\n"
    "be read, 2 usage error.\n";

}  // namespace

int RunInfo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"format"}, {"help"});
  if (!parsed.ok()) {
    err << kProgram << " info: " << parsed.status().message() << "; run '" << kProgram
        << " info --help'\n";
    return kExitUsage;
  }
  if (parsed->has("help")) {
    out << kInfoUsage;
    return kExitOk;
  }
  const std::string format = parsed->has("format") ? parsed->flags.at("format") : "text";
  if (format != "text" && format != "json") {
    err << kProgram << " info: --format must be text or json, not '" << format << "'\n";
    return kExitUsage;
  }
  if (parsed->positional.empty()) {
    err << kProgram << " info: no trace files given; usage: " << kProgram
        << " info [--format text|json] FILE...\n";
    return kExitUsage;
  }
  const InfoReport report = CollectInfo(parsed->positional);
  int code = kExitOk;
  size_t readable = 0;
  for (const reader::FileInfo& f : report.index.files) {
    if (f.status.ok()) {
      ++readable;
    } else {
      err << kProgram << ": " << f.status.message() << "\n";
      code = kExitFailed;
    }
  }
  if (ReportPartial(report.index, err)) code = kExitFailed;
  if (readable > 0) {
    out << (format == "json" ? RenderInfoJson(report)
                             : render::SanitizeTerminal(RenderInfoText(report)));
  }
  return code;
}


}  // namespace gpscope::analyze
