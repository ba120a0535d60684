#include "metrics/replay_backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/safe_path.h"

namespace gpscope::metrics {
namespace {

constexpr const char* kNotRecorded = "not recorded in the replay";

// Blank-separated fields of one line; Rest(i) is the text from field i on.
struct Fields {
  std::string_view line;
  std::vector<std::string_view> f;
  explicit Fields(std::string_view l) : line(l) {
    size_t i = 0;
    while (i < l.size()) {
      while (i < l.size() && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r')) ++i;
      size_t j = i;
      while (j < l.size() && l[j] != ' ' && l[j] != '\t' && l[j] != '\r') ++j;
      if (j > i) f.push_back(l.substr(i, j - i));
      i = j;
    }
  }
  std::string Rest(size_t i) const {
    if (i >= f.size()) return "";
    size_t start = static_cast<size_t>(f[i].data() - line.data());
    std::string_view r = line.substr(start);
    while (!r.empty() && (r.back() == ' ' || r.back() == '\t' || r.back() == '\r'))
      r.remove_suffix(1);
    return std::string(r);
  }
};

bool ToU32(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool ToDouble(std::string_view s, double* out) {
  std::string tmp(s);
  char* end = nullptr;
  *out = std::strtod(tmp.c_str(), &end);
  return !tmp.empty() && end == tmp.c_str() + tmp.size();
}

}  // namespace

ReplayBackend::ReplayBackend(std::string_view text, bool loop) : loop_(loop) {
  for (auto& slots : gpm_step_) slots[0] = slots[1] = -1;
  Parse(text);
}

std::unique_ptr<ReplayBackend> ReplayBackend::FromFile(const char* path, bool loop) {
  // A FIFO or device would block the read (or never end): regular files only.
  std::string why;
  if (!common::IsRegularFile(path, &why)) {
    auto b = std::make_unique<ReplayBackend>("", loop);
    b->error_ = why;
    return b;
  }
  std::ifstream in(path);
  if (!in) {
    auto b = std::make_unique<ReplayBackend>("", loop);
    b->error_ = std::string(path) + ": cannot read";
    return b;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto b = std::make_unique<ReplayBackend>(ss.str(), loop);
  if (!b->ok()) b->error_ = std::string(path) + ": " + b->error_;
  return b;
}

void ReplayBackend::Parse(std::string_view text) {
  struct Unsupported {
    uint32_t dev;
    std::string what;
    std::string reason;
  };
  std::vector<Unsupported> unsupported;
  size_t line_no = 0;
  auto fail = [&](const std::string& why) {
    if (error_.empty()) error_ = "line " + std::to_string(line_no) + ": " + why;
  };
  while (!text.empty() && error_.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    Fields fl(line);
    if (fl.f.empty() || fl.f[0][0] == '#') continue;
    std::string_view kw = fl.f[0];
    uint32_t dev = 0;
    if (kw == "nvml") {
      if (fl.f.size() < 2 || fl.f[1] != "missing") return fail("expected: nvml missing <reason>");
      nvml_missing_ = fl.Rest(2);
      if (nvml_missing_.empty()) nvml_missing_ = "NVML missing";
    } else if (kw == "ignored_devices") {
      if (fl.f.size() != 2 || !ToU32(fl.f[1], &ignored_devices_))
        return fail("bad ignored_devices");
    } else if (kw == "device") {
      if (fl.f.size() < 3 || !ToU32(fl.f[1], &dev) || dev != devices_.size() ||
          dev >= kMaxDevices) {
        return fail("expected: device <next index> <uuid> <name>");
      }
      GpuDeviceInfo info;
      info.index = dev;
      info.cuda_ordinal = dev;
      std::snprintf(info.uuid, sizeof(info.uuid), "%.*s", static_cast<int>(fl.f[2].size()),
                    fl.f[2].data());
      std::snprintf(info.name, sizeof(info.name), "%s", fl.Rest(3).c_str());
      devices_.push_back(info);
    } else if (kw == "pci") {
      if (fl.f.size() != 3 || !ToU32(fl.f[1], &dev) || dev >= devices_.size()) {
        return fail("expected: pci <dev> <bus-id>");
      }
      std::snprintf(devices_[dev].pci_bus_id, sizeof(devices_[dev].pci_bus_id), "%.*s",
                    static_cast<int>(fl.f[2].size()), fl.f[2].data());
    } else if (kw == "unsupported") {
      if (fl.f.size() < 3 || !ToU32(fl.f[1], &dev) || dev >= devices_.size()) {
        return fail("expected: unsupported <dev> <what> <reason>");
      }
      GpuMetric m;
      std::string what(fl.f[2]);
      if (what != "gpm" && what != "processes" && what != "process_util" &&
          !GpuMetricFromName(what, &m)) {
        return fail("unknown metric " + what);
      }
      unsupported.push_back({dev, what, fl.Rest(3).empty() ? "unsupported" : fl.Rest(3)});
    } else if (kw == "step") {
      steps_.emplace_back();
      steps_.back().dev.resize(devices_.size());
    } else if (kw == "proc") {
      ProcLine p{};
      if (steps_.empty()) return fail("proc before the first step");
      if (fl.f.size() < 5 || !ToU32(fl.f[1], &p.dev) || p.dev >= devices_.size() ||
          !ToU32(fl.f[2], &p.reading.pid)) {
        return fail("expected: proc <dev> <pid> <memory_bytes|-> <sm_util|-> [name]");
      }
      double v;
      if (fl.f[3] != "-") {
        if (!ToDouble(fl.f[3], &v)) return fail("bad memory_bytes");
        p.reading.has_memory = true;
        p.reading.memory_bytes = static_cast<uint64_t>(v);
      }
      if (fl.f[4] != "-") {
        if (!ToDouble(fl.f[4], &v)) return fail("bad sm_util");
        p.reading.has_sm_util = true;
        p.reading.sm_util_pct = v;
      }
      if (fl.f.size() > 5) names_[p.reading.pid] = fl.Rest(5);
      steps_.back().procs.push_back(p);
    } else if (kw == "fail") {
      GpuMetric m;
      if (steps_.empty()) return fail("fail before the first step");
      if (fl.f.size() < 3 || !ToU32(fl.f[1], &dev) || dev >= devices_.size() ||
          !GpuMetricFromName(fl.f[2], &m)) {
        return fail("expected: fail <dev> <metric> <reason>");
      }
      reasons_.push_back(std::make_unique<std::string>(fl.Rest(3)));
      steps_.back().dev[dev].Fail(m, reasons_.back()->c_str());
    } else {
      GpuMetric m;
      double v;
      if (!GpuMetricFromName(kw, &m)) return fail("unknown record " + std::string(kw));
      if (steps_.empty()) return fail("value before the first step");
      if (fl.f.size() != 3 || !ToU32(fl.f[1], &dev) || dev >= devices_.size() ||
          !ToDouble(fl.f[2], &v)) {
        return fail("expected: <metric> <dev> <value>");
      }
      steps_.back().dev[dev].Set(m, v);
    }
  }
  if (!error_.empty()) return;

  // What each device supports: what was recorded, minus what is declared unsupported.
  probe_.assign(devices_.size(), GpuProbe{});
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    GpuProbe& p = probe_[d];
    for (const Step& s : steps_) p.supported |= s.dev[d].valid | s.dev[d].failed;
    for (int m = 0; m < kGpuMetricCount; ++m) {
      if (!((p.supported >> m) & 1)) p.reason[m] = kNotRecorded;
    }
    p.gpm = (p.supported & kGpmMask) != 0;
    if (!p.gpm) p.gpm_reason = "no GPM metric in the replay";
    p.processes = true;
    p.process_util = true;
  }
  for (const Unsupported& u : unsupported) {
    GpuProbe& p = probe_[u.dev];
    reasons_.push_back(std::make_unique<std::string>(u.reason));
    const char* why = reasons_.back()->c_str();
    GpuMetric m;
    if (u.what == "gpm") {
      p.gpm = false;
      p.gpm_reason = why;
    } else if (u.what == "processes") {
      p.processes = false;
      p.processes_reason = why;
    } else if (u.what == "process_util") {
      p.process_util = false;
      p.process_util_reason = why;
    } else if (GpuMetricFromName(u.what, &m)) {
      p.supported &= ~Bit(m);
      p.reason[static_cast<int>(m)] = why;
    }
  }
  for (GpuProbe& p : probe_) {
    if (!p.gpm) p.supported &= ~kGpmMask;
  }
}

bool ReplayBackend::Open(const char** reason) {
  if (!error_.empty()) {
    *reason = error_.c_str();
    return false;
  }
  if (!nvml_missing_.empty()) {
    *reason = nvml_missing_.c_str();
    return false;
  }
  if (devices_.empty()) {
    *reason = "replay lists no device";
    return false;
  }
  return true;
}

void ReplayBackend::Probe(GpuProbe* out) {
  for (size_t d = 0; d < probe_.size(); ++d) out[d] = probe_[d];
}

void ReplayBackend::BeginSample(uint64_t) {
  if (steps_.empty()) return;
  if (current_ + 1 < static_cast<int>(steps_.size())) {
    ++current_;
  } else if (loop_) {
    current_ = 0;
  }
}

void ReplayBackend::Read(uint32_t dev, MetricMask wanted, GpuReadings* out) {
  if (current_ < 0) return;
  const GpuReadings& r = steps_[current_].dev[dev];
  for (int m = 0; m < kFirstGpmMetric; ++m) {
    MetricMask b = MetricMask{1} << m;
    if (!(wanted & b)) continue;
    if (r.failed & b) {
      out->Fail(static_cast<GpuMetric>(m), r.error[m]);
    } else if (r.valid & b) {
      out->Set(static_cast<GpuMetric>(m), r.value[m]);
    }
  }
}

bool ReplayBackend::GpmSnapshot(uint32_t dev, int slot) {
  if (!probe_[dev].gpm) return false;
  gpm_step_[dev][slot] = current_;
  return true;
}

void ReplayBackend::GpmRead(uint32_t dev, int older, int newer, MetricMask wanted,
                            GpuReadings* out) {
  int from = gpm_step_[dev][older];
  int to = gpm_step_[dev][newer];
  if (to < 0) return;
  for (int m = kFirstGpmMetric; m < kGpuMetricCount; ++m) {
    MetricMask b = MetricMask{1} << m;
    if (!(wanted & b)) continue;
    double sum = 0;
    int n = 0;
    const char* failure = nullptr;
    // Steps (from, to]; after a wrap (loop), just the newest one.
    int first = from < to ? from + 1 : to;
    for (int s = first; s <= to && s >= 0; ++s) {
      const GpuReadings& r = steps_[s].dev[dev];
      if (r.failed & b) failure = r.error[m];
      if (r.valid & b) {
        sum += r.value[m];
        ++n;
      }
    }
    if (failure != nullptr) {
      out->Fail(static_cast<GpuMetric>(m), failure);
    } else if (n > 0) {
      out->Set(static_cast<GpuMetric>(m), sum / n);
    }
  }
}

size_t ReplayBackend::ReadProcesses(uint32_t dev, GpuProcessReading* out, size_t cap, bool* more) {
  *more = false;
  if (current_ < 0) return 0;
  size_t n = 0;
  for (const ProcLine& p : steps_[current_].procs) {
    if (p.dev != dev) continue;
    if (n == cap) {
      *more = true;
      break;
    }
    out[n++] = p.reading;
  }
  return n;
}

void ReplayBackend::ProcessName(uint32_t pid, char* buf, size_t len) {
  if (len == 0) return;
  auto it = names_.find(pid);
  std::snprintf(buf, len, "%s", it != names_.end() ? it->second.c_str() : "");
}

}  // namespace gpscope::metrics
