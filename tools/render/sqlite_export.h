// tools/render/sqlite_export.h: the trace as an SQLite database (issue 23),
// for questions no command asks: one table per event kind, names resolved
// in `strings`, the processes, devices, GPUs and ranks, and the summary's
// findings. The schema, with example queries, is docs/sqlite.md; bump
// kSqliteSchemaVersion (meta.schema_version) when a column changes meaning.
//
//   reader::Timebase tb = reader::ScanTimebase(paths);       // times while streaming
//   absl::StatusOr<std::unique_ptr<SqliteExport>> db = SqliteExport::Create("run.sqlite", tb);
//   model = model::BuildModel(paths, options, {db->get()});   // one pass, beside the model
//   absl::Status st = (*db)->Finish(model, report, findings);
//
// Every event row carries its times twice: `start_ns`/`end_ns` as recorded
// (the process's CUPTI clock) and `start_rel_ns`/`end_rel_ns`, ns since the
// one time origin every command prints (reader/timebase.h; stored in meta).
// Events are written as they arrive, through prepared statements, in
// transactions of kRowsPerTransaction rows: nothing of the trace is held here
// beyond the current batch. Indexes are built in Finish().
//
// Thread model: the reader's one thread (an EventSink), then Finish().
#ifndef GPSCOPE_TOOLS_RENDER_SQLITE_EXPORT_H_
#define GPSCOPE_TOOLS_RENDER_SQLITE_EXPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/analyses/gpu_report.h"
#include "tools/analyses/rules.h"
#include "tools/model/trace_model.h"
#include "tools/reader/event_sink.h"
#include "tools/reader/timebase.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpscope::render {

inline constexpr int kSqliteSchemaVersion = 1;
inline constexpr uint64_t kRowsPerTransaction = 50'000;

class SqliteExport : public reader::EventSink {
 public:
  // Creates `path` (replacing a file there) with the schema's tables.
  static absl::StatusOr<std::unique_ptr<SqliteExport>> Create(const std::string& path,
                                                              const reader::Timebase& timebase);
  ~SqliteExport() override;
  SqliteExport(const SqliteExport&) = delete;
  SqliteExport& operator=(const SqliteExport&) = delete;

  void OnHeader(const reader::ProcessTables& tables, const proto::ProcessHeader& header,
                const reader::ChunkPlace& place) override;
  void OnBatch(const reader::ResolvedBatch& batch) override;

  // Writes what needs the whole pass (processes, devices, GPUs, strings,
  // metric descriptors, ranks, findings), builds the indexes and closes the
  // database. The first SQLite error of the export, if any, is returned.
  absl::Status Finish(const model::TraceModel& model, const analyses::SummaryReport& report,
                      const std::vector<analyses::Finding>& findings);

  uint64_t rows() const { return rows_; }

 private:
  enum Stmt {
    kKernel, kMemcpy, kMemset, kSync, kApi, kRange, kMark, kMetric, kStackSample, kDescriptor,
    kStmts
  };
  SqliteExport(sqlite3* db, const reader::Timebase& timebase) : db_(db), timebase_(timebase) {}
  absl::Status Exec(const char* sql);
  absl::Status Prepare();
  // Binds run left to right from column 1; Step() resets the statement.
  void Step(sqlite3_stmt* s);
  void CountRow();
  void Fail(const char* what);
  int64_t ProcessId(const reader::ProcessTables& tables);
  int64_t Rel(uint64_t uid, uint64_t cupti_ns) const {
    return static_cast<int64_t>(timebase_.ToOriginNs(uid, cupti_ns));
  }

  sqlite3* db_;
  const reader::Timebase& timebase_;
  sqlite3_stmt* stmts_[kStmts] = {};
  absl::Status status_;  // the first error
  uint64_t rows_ = 0;
  uint64_t rows_in_transaction_ = 0;
  absl::flat_hash_map<uint64_t, int64_t> process_ids_;  // process uid -> processes.process_id
  std::vector<reader::StackSampleEvent> stack_samples_;  // one batch's, reused
};

}  // namespace gpscope::render

#endif  // GPSCOPE_TOOLS_RENDER_SQLITE_EXPORT_H_
