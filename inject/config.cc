#include "inject/config.h"

#include <strings.h>

#include <cstdio>
#include <cstring>

namespace gpscope::inject {
namespace {

using common::EnvValues;

// GPSCOPE_METRICS: a boolean, or a comma list of sources.
void ParseMetricSources(const char* v, Config* c, EnvValues* p) {
  if (v == nullptr || *v == '\0') return;
  c->metrics_set = true;
  bool all = true;
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcasecmp(v, "all")) {
    all = true;
  } else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "off") ||
             !strcasecmp(v, "none")) {
    all = false;
  } else {
    bool nvml = false, gpm = false, processes = false, host = false, bad = false;
    common::ForEachListItem(v, [&](const std::string& item) {
      if (!strcasecmp(item.c_str(), "nvml")) {
        nvml = true;
      } else if (!strcasecmp(item.c_str(), "gpm")) {
        gpm = true;
      } else if (!strcasecmp(item.c_str(), "processes")) {
        processes = true;
      } else if (!strcasecmp(item.c_str(), "host")) {
        host = true;
      } else {
        bad = true;
      }
    });
    if (bad) {
      p->Problem("GPSCOPE_METRICS", v, "1|0 or a list of nvml,gpm,processes,host", "1");
      return;
    }
    // GPM and process readings come through NVML.
    c->metrics_nvml = nvml || gpm || processes;
    c->metrics_gpm = gpm;
    c->metrics_processes = processes;
    c->metrics_host = host;
    c->metrics = true;
    return;
  }
  c->metrics = all;
  c->metrics_nvml = c->metrics_gpm = c->metrics_processes = c->metrics_host = all;
}

// GPSCOPE_FILE_PERMISSIONS: octal permission bits for the files gpscope
// creates. The owner must keep read and write (the header is read back);
// execute bits and write for others are refused (docs/security.md).
void ParseFilePermissions(const char* v, Config* c, EnvValues* p) {
  if (v == nullptr || *v == '\0') return;
  uint32_t bits = 0;
  size_t digits = 0;
  bool ok = true;
  for (const char* q = v; *q != '\0'; ++q, ++digits) {
    if (*q < '0' || *q > '7' || digits >= 4) {
      ok = false;
      break;
    }
    bits = bits * 8 + static_cast<uint32_t>(*q - '0');
  }
  ok = ok && digits >= 3 && (bits & ~0664u) == 0 && (bits & 0600u) == 0600u;
  if (!ok) {
    p->Problem("GPSCOPE_FILE_PERMISSIONS", v,
               "octal permission bits with owner read+write, no execute bits and no write for "
               "others (e.g. 0600, 0640, 0660)",
               "0640");
    return;
  }
  c->file_permissions = bits;
}

std::string OctalText(uint32_t bits) {
  char buf[8];
  snprintf(buf, sizeof(buf), "%04o", bits);
  return buf;
}

constexpr const char* kFileModes[] = {"node", "process"};
constexpr const char* kCuptiModes[] = {"hold", "yield"};
constexpr const char* kApiSources[] = {"activity", "callback"};
constexpr const char* kOpenAt[] = {"context", "start"};
constexpr const char* kLogLevels[] = {"error", "warning", "info", "debug"};

}  // namespace

Config ParseConfig(GetEnvFn get_env, std::vector<std::string>* problems) {
  Config c;
  EnvValues p(get_env, problems);
  p.Bool("GPSCOPE_ENABLE", &c.enabled);
  p.String("GPSCOPE_OUTPUT", &c.output_dir);
  c.file_mode = static_cast<FileMode>(p.Choice("GPSCOPE_FILE_MODE", kFileModes, 0));
  c.open_at_context = p.Choice("GPSCOPE_OPEN_AT", kOpenAt, 0) == 0;
  p.String("GPSCOPE_JOB", &c.job);
  p.WholeNumber("GPSCOPE_FLUSH_INTERVAL_MS", 100, 60000, &c.flush_interval_ms);
  p.WholeNumber("GPSCOPE_BUFFER_KB", 64, 65536, &c.buffer_kb);
  p.WholeNumber("GPSCOPE_MAX_BUFFER_MB", 4, 4096, &c.max_buffer_mb);
  p.Bool("GPSCOPE_API", &c.api_records);
  c.api_source = static_cast<ApiSource>(p.Choice("GPSCOPE_API_SOURCE", kApiSources, 0));
  p.Bool("GPSCOPE_NVTX", &c.nvtx);
  p.Bool("GPSCOPE_SYNC", &c.sync_records);
  p.Bool("GPSCOPE_DETACH", &c.detach);
  p.WholeNumber("GPSCOPE_EXIT_TIMEOUT_MS", 100, 60000, &c.exit_timeout_ms);
  c.cupti_mode = static_cast<CuptiMode>(p.Choice("GPSCOPE_CUPTI_MODE", kCuptiModes, 0));
  uint32_t level = static_cast<uint32_t>(c.zstd_level);
  p.WholeNumber("GPSCOPE_ZSTD_LEVEL", 1, 19, &level);
  c.zstd_level = static_cast<int>(level);
  c.log_level = static_cast<common::LogLevel>(p.Choice("GPSCOPE_LOG_LEVEL", kLogLevels, 1));
  p.String("GPSCOPE_CUPTI_PATH", &c.cupti_path);
  ParseMetricSources(p.Get("GPSCOPE_METRICS"), &c, &p);
  p.WholeNumber("GPSCOPE_METRICS_INTERVAL_MS", 10, 1000, &c.metrics_interval_ms);
  p.String("GPSCOPE_NVML_PATH", &c.nvml_path);
  ParseFilePermissions(p.Get("GPSCOPE_FILE_PERMISSIONS"), &c, &p);
  // A pool must hold at least two buffers: one filling, one being written.
  if (static_cast<uint64_t>(c.max_buffer_mb) * 1024 < 2ull * c.buffer_kb) {
    if (problems) {
      problems->push_back("GPSCOPE_MAX_BUFFER_MB=" + std::to_string(c.max_buffer_mb) +
                          " holds fewer than two GPSCOPE_BUFFER_KB=" + std::to_string(c.buffer_kb) +
                          " buffers; using " + std::to_string((2 * c.buffer_kb + 1023) / 1024));
    }
    c.max_buffer_mb = (2 * c.buffer_kb + 1023) / 1024;
  }
  c.stacks = stacks::ParseStackSettings(get_env, problems);
  return c;
}

std::string MetricSourcesText(const Config& c) {
  if (!c.metrics) return "0";
  if (c.metrics_nvml && c.metrics_gpm && c.metrics_processes && c.metrics_host) return "1";
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  };
  add(c.metrics_nvml, "nvml");
  add(c.metrics_gpm, "gpm");
  add(c.metrics_processes, "processes");
  add(c.metrics_host, "host");
  return out;
}

std::vector<std::pair<std::string, std::string>> Config::AsKeyValues() const {
  std::vector<std::pair<std::string, std::string>> out = {
      {"GPSCOPE_ENABLE", enabled ? "1" : "0"},
      {"GPSCOPE_OUTPUT", output_dir},
      {"GPSCOPE_FILE_MODE", kFileModes[static_cast<int>(file_mode)]},
      {"GPSCOPE_FILE_PERMISSIONS", OctalText(file_permissions)},
      {"GPSCOPE_OPEN_AT", kOpenAt[open_at_context ? 0 : 1]},
      {"GPSCOPE_JOB", job},
      {"GPSCOPE_FLUSH_INTERVAL_MS", std::to_string(flush_interval_ms)},
      {"GPSCOPE_BUFFER_KB", std::to_string(buffer_kb)},
      {"GPSCOPE_MAX_BUFFER_MB", std::to_string(max_buffer_mb)},
      {"GPSCOPE_API", api_records ? "1" : "0"},
      {"GPSCOPE_API_SOURCE", kApiSources[static_cast<int>(api_source)]},
      {"GPSCOPE_NVTX", nvtx ? "1" : "0"},
      {"GPSCOPE_SYNC", sync_records ? "1" : "0"},
      {"GPSCOPE_DETACH", detach ? "1" : "0"},
      {"GPSCOPE_EXIT_TIMEOUT_MS", std::to_string(exit_timeout_ms)},
      {"GPSCOPE_CUPTI_MODE", kCuptiModes[static_cast<int>(cupti_mode)]},
      {"GPSCOPE_ZSTD_LEVEL", std::to_string(zstd_level)},
      {"GPSCOPE_LOG_LEVEL", kLogLevels[static_cast<int>(log_level)]},
      {"GPSCOPE_METRICS", MetricSourcesText(*this)},
      {"GPSCOPE_METRICS_INTERVAL_MS", std::to_string(metrics_interval_ms)},
  };
  for (auto& kv : stacks::StackSettingsAsKeyValues(stacks)) out.push_back(std::move(kv));
  return out;
}

}  // namespace gpscope::inject
