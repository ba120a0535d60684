// common/process_header.h: the one builder of a trace file's process header
// (format::ProcessHeaderRecord), for the collector and the node monitor.
//
// The header says who wrote the file: gpscope's and the format's versions,
// host, pid, parent, command line, executable, the NVIDIA driver, the
// allow-listed environment, the process's place in a job (or the program
// it is, for the monitor), the settings in effect, the GPUs known at the
// start, and one clock snapshot.
//
//   ProcessHeaderBuilder header(identity);       // common/identity.h
//   header.AddConfig(config.AsKeyValues());
//   header.SetClock(snapshot);
//   format::ProcessHeaderRecord h = header.Build();
//   h.cupti_api_version = ...;                   // what only the collector knows
//   writer.WriteHeader(h);                       // proto/chunk_writer.h
//
// The record points into the builder and into `identity`: both must live,
// unchanged, until it is written.
//
// Thread model: cold path (the start of a trace file), one thread. Allocates.
#ifndef GPSCOPE_COMMON_PROCESS_HEADER_H_
#define GPSCOPE_COMMON_PROCESS_HEADER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/identity.h"
#include "proto/records.h"

namespace gpscope::common {

class ProcessHeaderBuilder {
 public:
  // Host, pid, ppid, command line, executable, driver version, environment
  // and job identity from `identity` (borrowed).
  explicit ProcessHeaderBuilder(const ProcessIdentity& identity) : identity_(identity) {}
  ProcessHeaderBuilder(const ProcessHeaderBuilder&) = delete;
  ProcessHeaderBuilder& operator=(const ProcessHeaderBuilder&) = delete;

  // The host name recorded instead of identity.hostname (the monitor's
  // --hostname).
  void SetHostname(std::string hostname);
  // The writer is a program of its own, not a rank of a job (the node
  // monitor): no job id, ranks unknown, `program` as the launcher.
  void SetProgram(std::string program);
  // Settings as (name, value), after those added before.
  void AddConfig(std::string name, std::string value);
  void AddConfig(const std::vector<std::pair<std::string, std::string>>& settings);
  // GPUs known when the file starts (their text borrowed).
  void AddDevice(const format::DeviceRecord& device);
  // The clock snapshot written with the header. The process's start time is
  // its realtime_ns unless SetStartRealtimeNs gives another.
  void SetClock(const format::ClockRecord& clock);
  void SetStartRealtimeNs(uint64_t ns);

  // Every field but cuda_driver_version and cupti_api_version (0: the
  // collector fills them). Valid until the builder changes or goes.
  format::ProcessHeaderRecord Build();

 private:
  const ProcessIdentity& identity_;
  bool has_hostname_ = false;
  std::string hostname_;
  bool has_program_ = false;
  std::string program_;
  std::vector<std::pair<std::string, std::string>> config_;
  std::vector<format::DeviceRecord> devices_;
  format::ClockRecord clock_{};
  bool has_start_ = false;
  uint64_t start_realtime_ns_ = 0;
  // Built by Build(): what the record points into.
  std::vector<format::StringRef> cmdline_refs_;
  std::vector<format::KeyValueRecord> env_refs_;
  std::vector<format::KeyValueRecord> config_refs_;
};

}  // namespace gpscope::common

#endif  // GPSCOPE_COMMON_PROCESS_HEADER_H_
