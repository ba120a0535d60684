// tools/analyses/site_findings.h: how a finding about host code names its
// source sites (issue 20): the top sites of the finding's process for the
// finding's kind of cost become citations (Finding::sites), one sentence
// appended to its summary, and a first fix naming the line and its stack.
// Without call stacks nothing changes: a trace without stacks renders
// byte-for-byte as before.
//
// The finding measures its GPU's steady window (gpu_report.h), and so do
// its sites: they are ranked, and their numbers quoted, over that window
// (sites.h SitesInWindow; "Call stacks (steady window): ..."). A warm-up
// compile or a first step's allocations, however long, are not cited for a
// cost the window does not hold. Where the process's timed charges were not
// all kept (model::ModelOptions::max_stack_charges) the sites are the whole
// run's, and the sentence says so. A citation's `site` indexes the
// whole-run table (the source-lines section, its JSON, the report's links);
// its value is the window's.
//
//   CiteSites(c.report, g, SiteRole::kSync, &f);
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_SITE_FINDINGS_H_
#define GPSCOPE_TOOLS_ANALYSES_SITE_FINDINGS_H_

#include <cstdint>

#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"

namespace gpscope::analyses {

enum class SiteRole {
  kSync,          // host-sync: GPU idle behind explicit syncs
  kImplicit,      // implicit-sync: behind implicitly synchronizing calls
  kHostCode,      // host-bound, synchronous-launches: the host's code between calls
  kBeforeLaunch,  // data-starvation: the wait before the launches that ended the gaps
};

// At most this many sites are cited per finding.
inline constexpr size_t kMaxCitedSites = 3;

// Returns whether any site was cited. `replace_fix`: index of a generic fix
// ("find the code with py-spy") the site fix replaces; -1 puts it first.
bool CiteSites(const SummaryReport& report, const GpuReport& g, SiteRole role, Finding* f,
               int replace_fix = -1);

// "... <- torch/_tensor.py:1000 item <- train.py:42 train_step <- ...": `n`
// frames of a site's stack, innermost first, from the frame the innermost
// user frame called (the stack's start when it has no user frame); "..."
// where frames are left out.
std::string StackLine(const SiteRow& s, size_t n);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_SITE_FINDINGS_H_
