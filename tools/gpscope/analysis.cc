// tools/gpscope/analysis.cc: see analysis.h.
#include "tools/gpscope/analysis.h"

#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/analyze/report.h"
#include "tools/analyses/summary.h"
#include "tools/gpscope/paths.h"

namespace gpscope::launcher {
namespace {

// Narrows the process's umask while it lives.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t narrow) : old_(umask(0)) { umask(old_ | narrow); }
  ~ScopedUmask() { umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

// The report is (re)written at `path` only when nothing else is there: no
// link (it could point anywhere the launcher may write), no other user's
// file, no FIFO.
bool ReportPathIsOurs(const std::string& path, std::string* why) {
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0) return true;  // a new file
  if (S_ISLNK(st.st_mode)) {
    *why = path + " is a symbolic link; refusing to write through it";
    return false;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    *why = path + (S_ISREG(st.st_mode) ? " belongs to uid " + std::to_string(st.st_uid)
                                       : std::string(" is not a regular file")) +
           "; refusing to overwrite it (pass --report with a path of yours)";
    return false;
  }
  return true;
}

std::string Seconds(uint64_t ns) {
  if (ns < 1'000'000) return absl::StrFormat("%.1f us", ns / 1e3);
  if (ns < 1'000'000'000) return absl::StrFormat("%.1f ms", ns / 1e6);
  return absl::StrFormat("%.2f s", ns / 1e9);
}

}  // namespace

std::string RenderFindingsBrief(const std::vector<analyses::Finding>& findings,
                                size_t max_findings) {
  if (findings.empty()) return "gpscope: no findings: no rule fired (see the report's numbers)\n";
  std::string text = absl::StrCat("gpscope: ", findings.size(),
                                  findings.size() == 1 ? " finding" : " findings",
                                  ", warnings first, most costly first:\n");
  const size_t shown = std::min(findings.size(), max_findings);
  for (size_t i = 0; i < shown; ++i) {
    const analyses::Finding& f = findings[i];
    absl::StrAppend(&text, absl::StrFormat("  %d. %-8s %s: %s", i + 1,
                                           absl::AsciiStrToUpper(analyses::SeverityName(f.severity)),
                                           f.rule, f.title));
    if (f.cost_ns > 0) absl::StrAppend(&text, " (cost ~", Seconds(f.cost_ns), ")");
    absl::StrAppend(&text, "\n");
    if (!f.scope.empty()) absl::StrAppend(&text, "     ", f.scope, "\n");
    if (!f.summary.empty()) absl::StrAppend(&text, "     ", f.summary, "\n");
    if (!f.fixes.empty()) absl::StrAppend(&text, "     fix: ", f.fixes[0], "\n");
  }
  if (shown < findings.size()) {
    absl::StrAppend(&text, "  ... and ", findings.size() - shown, " more in the report\n");
  }
  return text;
}

int ReportAndFindings(const std::vector<std::string>& files, const AnalysisOptions& options,
                      std::ostream& out) {
  int code = 0;
  std::unique_ptr<analyses::SummaryResult> result;  // the report's analysis, reused
  std::string why;
  if (options.write_report && !ReportPathIsOurs(options.report_path, &why)) {
    out << "gpscope: the report is not written: " << Shown(why) << "\n";
    code = 1;
  } else if (options.write_report) {
    // The report shows the command line and environment, like the trace:
    // created 0640 at most (the command already ran; the umask is ours).
    ScopedUmask private_files(027);
    analyze::ReportRequest request;
    request.files = files;
    request.output = options.report_path;
    if (options.idle_gap_ns > 0) request.model_options.idle_gap_threshold_ns = options.idle_gap_ns;
    std::ostringstream report_out, report_err;
    const int rc = analyze::WriteReport(request, report_out, report_err, &result);
    out << report_err.str();
    if (rc == 0) {
      out << "gpscope: report: " << Shown(options.report_path) << "\n";
    } else {
      out << "gpscope: the report could not be written (gpscope-analyze report exit " << rc
          << ")\n";
      code = 1;
    }
  }
  if (result == nullptr) {
    model::ModelOptions model_options;
    if (options.idle_gap_ns > 0) model_options.idle_gap_threshold_ns = options.idle_gap_ns;
    result = analyses::ComputeSummaryResult(files, model_options, analyses::ReportOptions{});
  }
  size_t readable = 0;
  for (const reader::FileInfo& f : result->model.index.files) readable += f.status.ok() ? 1 : 0;
  if (readable == 0) {
    out << "gpscope: no readable trace among " << files.size() << " file(s)\n";
    return 1;
  }
  out << RenderFindingsBrief(result->findings, options.max_findings);
  return code;
}

}  // namespace gpscope::launcher
