// inject/record_converter.h: CUPTI activity records -> trace events.
//
// Convert() turns one CUpti_Activity (kernel, memcpy, peer copy, memset,
// synchronization, runtime/driver API call, NVTX marker, overhead, device,
// context) into our event or record on the ChunkWriter, interning names and
// launch shapes there; ConvertApiCall() does the same for an API call taken
// from CUPTI's callbacks instead (GPSCOPE_API_SOURCE=callback). It makes no
// CUPTI call and reads no clock: the names of API calls come from an
// ApiNames (the CUPTI session, or a test's table), and what is kept is the
// capture gate's decision. So it is unit-tested
// with synthetic records built in memory (tests/inject/record_converter_test.cc).
//
//   RecordConverter conv(writer, &gate, &session, &context_devices);
//   while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
//     conv.Convert(record);
//
// Dropped, and counted: a record that starts outside the capture window
// (outside_window()), and one without timestamps (incomplete_records():
// still queued or running at a forced flush, or CUPTI's device buffer was
// full). A forced flush while no window is open hands back the records of
// work still queued or running on the device, without timestamps: those
// launched after the last window are outside it, not lost. Correlation ids
// grow with every CUDA call, so one above the highest kept in a window was
// launched after it; that is decided once the flush's buffers are all
// converted (an API record may come after its kernel's): BeginFlush(true)
// before, EndFlush() after.
//
// The schema's numbers for copy, memory, sync and overhead kinds are
// CUPTI's (record_converter.cc checks that at compile time).
//
// Thread model: the writer thread only (single-threaded, like the
// ChunkWriter). Allocates only for a new name, launch shape, API id or open
// NVTX range. Convert() may re-enter itself: an NVTX range that starts a
// window can make the gate flush and convert other buffers first.
#ifndef GPSCOPE_INJECT_RECORD_CONVERTER_H_
#define GPSCOPE_INJECT_RECORD_CONVERTER_H_

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "inject/capture_gate.h"
#include "proto/chunk_writer.h"

namespace gpscope::inject {

// Bit d of the word: this process has a CUDA context on device d (all bits
// when the device could not be told). One atomic OR: no lock, allocation or
// system call, so the resource callback on an application thread may call
// it too.
inline void NoteContextDevice(std::atomic<uint64_t>* devices, uint32_t device_id, bool known) {
  const uint64_t bits = known && device_id < 64 ? uint64_t{1} << device_id : ~uint64_t{0};
  devices->fetch_or(bits, std::memory_order_release);
}

class RecordConverter {
 public:
  // The name of a CUDA runtime or driver call (CUPTI's callback name).
  class ApiNames {
   public:
    virtual ~ApiNames() = default;
    // domain: wire::API_RUNTIME or wire::API_DRIVER. Null or "" when unknown.
    virtual const char* ApiName(uint32_t domain, uint32_t cbid) = 0;
  };

  // All must outlive the converter. context_devices: see NoteContextDevice
  // (CONTEXT records set their device's bit).
  RecordConverter(format::ChunkWriter* writer, CaptureGate* gate, ApiNames* names,
                  std::atomic<uint64_t>* context_devices)
      : writer_(writer), gate_(gate), names_(names), context_devices_(context_devices) {}
  RecordConverter(const RecordConverter&) = delete;
  RecordConverter& operator=(const RecordConverter&) = delete;

  void Convert(const CUpti_Activity* record);
  // One API call from CUPTI's API callbacks (GPSCOPE_API_SOURCE=callback,
  // inject/stack_capture.h): kept, counted and written exactly as its
  // RUNTIME/DRIVER record would be. domain: the CUpti_CallbackDomain.
  void ConvertApiCall(uint32_t domain, uint32_t cbid, uint64_t start_ns, uint64_t end_ns,
                      uint32_t thread_id, uint32_t correlation_id, uint32_t return_value);

  // Around a flush's conversions: defer_untimed (a forced flush outside a
  // window) holds records without timestamps until EndFlush() sorts them
  // into outside_window() or incomplete_records() (see above).
  void BeginFlush(bool defer_untimed) { defer_untimed_ = defer_untimed; }
  void EndFlush();

  // Cumulative counts.
  uint64_t incomplete_records() const { return incomplete_records_; }
  uint64_t outside_window() const { return outside_window_; }
  // Kernel records from CUPTI before the window gate, and their start times.
  uint64_t kernel_records() const { return kernel_records_; }
  // Driver-API records converted (CUPTI records no driver call made from
  // inside a runtime call: each is a direct driver call).
  uint64_t driver_api_records() const { return driver_api_records_; }
  uint64_t first_kernel_ns() const { return first_kernel_ns_; }
  uint64_t last_kernel_ns() const { return last_kernel_ns_; }
  // The end of the last kernel written (drop notices' last_ns).
  uint64_t last_event_ns() const { return last_event_ns_; }
  // NVTX ranges started and not yet ended.
  size_t open_ranges() const { return open_ranges_.size(); }

  // More deferred records than this in one flush are counted as lost.
  static constexpr size_t kMaxDeferredRecords = 4096;
  // At most this many NVTX ranges open at once; later starts are ignored.
  static constexpr size_t kMaxOpenRanges = 65536;

 private:
  // True for a record not to write (outside the window, or incomplete);
  // counts it.
  bool Skip(uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id);
  template <typename Record, typename Event>
  void ConvertCopy(const CUpti_Activity* record);
  void ConvertKernel(const CUpti_Activity* record);
  void ConvertApi(const CUpti_Activity* record);
  // Both sources of API calls; domain: wire::API_RUNTIME or wire::API_DRIVER.
  void AddApiCall(uint32_t domain, uint32_t cbid, uint64_t start_ns, uint64_t end_ns,
                  uint32_t thread_id, uint32_t correlation_id, uint32_t return_value);
  void ConvertMarker(const CUpti_Activity* record);
  void ConvertOverhead(const CUpti_Activity* record);
  void ConvertDevice(const CUpti_Activity* record);
  uint32_t ApiNameId(uint32_t domain, uint32_t cbid);
  void Add(const format::MemcpyEvent& e) { writer_->AddMemcpy(e); }
  void Add(const format::MemsetEvent& e) { writer_->AddMemset(e); }

  format::ChunkWriter* writer_;
  CaptureGate* gate_;
  ApiNames* names_;
  std::atomic<uint64_t>* context_devices_;

  uint64_t incomplete_records_ = 0;
  uint64_t outside_window_ = 0;
  uint64_t kernel_records_ = 0;
  uint64_t driver_api_records_ = 0;
  uint64_t first_kernel_ns_ = 0, last_kernel_ns_ = 0;
  uint64_t last_event_ns_ = 0;
  uint32_t deferred_corr_[kMaxDeferredRecords];
  size_t deferred_count_ = 0;
  bool defer_untimed_ = false;
  uint32_t last_kept_corr_ = 0;  // the highest correlation id kept in a window

  std::unordered_map<uint64_t, uint32_t> api_names_;  // (domain << 32 | cbid) -> string id
  struct OpenRange {
    uint64_t start_ns;
    uint32_t name_id;
    uint32_t domain_id;
    uint32_t thread_id;
    std::string name;  // for the capture window (only when it uses NVTX)
  };
  std::unordered_map<uint32_t, OpenRange> open_ranges_;  // NVTX marker id -> start
};

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_RECORD_CONVERTER_H_
