// common/process_header.cc: see process_header.h.
#include "common/process_header.h"

#include "proto/framing.h"

#include "gpscope_version.h"  // GPSCOPE_VERSION, from git describe (cmake/Version.cmake)

namespace gpscope::common {
namespace {

format::StringRef Ref(const std::string& s) { return {s.data(), s.size()}; }

}  // namespace

void ProcessHeaderBuilder::SetHostname(std::string hostname) {
  hostname_ = std::move(hostname);
  has_hostname_ = true;
}

void ProcessHeaderBuilder::SetProgram(std::string program) {
  program_ = std::move(program);
  has_program_ = true;
}

void ProcessHeaderBuilder::AddConfig(std::string name, std::string value) {
  config_.emplace_back(std::move(name), std::move(value));
}

void ProcessHeaderBuilder::AddConfig(
    const std::vector<std::pair<std::string, std::string>>& settings) {
  config_.insert(config_.end(), settings.begin(), settings.end());
}

void ProcessHeaderBuilder::AddDevice(const format::DeviceRecord& device) {
  devices_.push_back(device);
}

void ProcessHeaderBuilder::SetClock(const format::ClockRecord& clock) { clock_ = clock; }

void ProcessHeaderBuilder::SetStartRealtimeNs(uint64_t ns) {
  start_realtime_ns_ = ns;
  has_start_ = true;
}

format::ProcessHeaderRecord ProcessHeaderBuilder::Build() {
  cmdline_refs_.clear();
  for (const std::string& a : identity_.cmdline) cmdline_refs_.push_back(Ref(a));
  env_refs_.clear();
  for (const auto& [k, v] : identity_.env) env_refs_.push_back({Ref(k), Ref(v)});
  config_refs_.clear();
  for (const auto& [k, v] : config_) config_refs_.push_back({Ref(k), Ref(v)});

  format::ProcessHeaderRecord h{};
  h.format_version = format::kFormatVersion;
  h.gpscope_version = format::MakeStringRef(GPSCOPE_VERSION);
  h.hostname = Ref(has_hostname_ ? hostname_ : identity_.hostname);
  h.pid = identity_.pid;
  h.ppid = identity_.ppid;
  h.cmdline = cmdline_refs_.data();
  h.cmdline_count = cmdline_refs_.size();
  h.exe_path = Ref(identity_.exe_path);
  h.driver_version = Ref(identity_.driver_version);
  h.start_realtime_ns = has_start_ ? start_realtime_ns_ : clock_.realtime_ns;
  if (has_program_) {
    h.identity = format::IdentityRecord{{nullptr, 0}, -1, -1, 0, -1, Ref(program_)};
  } else {
    h.identity.job_id = Ref(identity_.job_id);
    h.identity.rank = identity_.rank;
    h.identity.local_rank = identity_.local_rank;
    h.identity.world_size = identity_.world_size;
    h.identity.node_rank = identity_.node_rank;
    h.identity.launcher = Ref(identity_.launcher);
  }
  h.env = env_refs_.data();
  h.env_count = env_refs_.size();
  h.config = config_refs_.data();
  h.config_count = config_refs_.size();
  h.devices = devices_.data();
  h.device_count = devices_.size();
  h.clocks = &clock_;
  h.clock_count = 1;
  return h;
}

}  // namespace gpscope::common
