// tools/analyze/stats.h: `gpscope-analyze stats FILE...`: the summary tables
// users know from `nsys stats` (analyses/stats.h): NVTX ranges, NVTX ranges
// projected onto the GPU, CUDA API calls, kernels, memory operations.
//
//   gpscope-analyze stats run.gpscope
//   gpscope-analyze stats --report nvtx_gpu_proj --format csv run.gpscope
//   gpscope-analyze stats --report cuda_gpu_kern_sum --names base --format json run.gpscope
//
// --report NAME[,NAME...] (default: all), --format text|csv|json (csv: one
// report), --names full|short|base (kernel names; default full, demangled).
// Times are ns. Docs: docs/stats.md. Exit codes: 0 ok, 1 a file could not be
// read, 2 bad usage. Thread model: single-threaded.
#ifndef GPSCOPE_TOOLS_ANALYZE_STATS_H_
#define GPSCOPE_TOOLS_ANALYZE_STATS_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpscope::analyze {

int RunStats(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpscope::analyze

#endif  // GPSCOPE_TOOLS_ANALYZE_STATS_H_
