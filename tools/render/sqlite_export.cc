// tools/render/sqlite_export.cc: see sqlite_export.h; the schema is docs/sqlite.md.
#include "tools/render/sqlite_export.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpscope/trace.pb.h"
#include "tools/analyses/names.h"

namespace gpscope::render {
namespace {

// Every event table starts with process_id (processes.process_id); times
// are the CUPTI ns as recorded and ns since the time origin (meta).
constexpr const char* kSchema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE processes (process_id INTEGER PRIMARY KEY, process_uid TEXT, pid INTEGER,
  hostname TEXT, path TEXT, cmdline TEXT, rank INTEGER, local_rank INTEGER,
  world_size INTEGER, job_id TEXT, events INTEGER, api_calls INTEGER, clean_end INTEGER);
CREATE TABLE devices (process_id INTEGER, device_id INTEGER, name TEXT, uuid TEXT,
  pci_bus_id TEXT, compute_capability TEXT, sm_count INTEGER, global_memory_bytes INTEGER);
CREATE TABLE gpus (gpu INTEGER PRIMARY KEY, process_id INTEGER, device_id INTEGER, label TEXT,
  rank INTEGER, first_ns INTEGER, last_ns INTEGER, first_rel_ns INTEGER, last_rel_ns INTEGER,
  busy_ns INTEGER, kernel_count INTEGER, kernel_ns INTEGER);
CREATE TABLE ranks (gpu INTEGER, rank INTEGER, pid INTEGER, hostname TEXT, device_id INTEGER,
  label TEXT, step_source TEXT, step_p50_ns REAL, step_p95_ns REAL, window_ns REAL,
  compute_busy_ns REAL, comm_busy_ns REAL, busy_share REAL, idle_ns REAL, comm_overlap REAL,
  collectives INTEGER, wait_ns REAL, mean_late_ns REAL, straggler INTEGER);
CREATE TABLE strings (process_id INTEGER, string_id INTEGER, value TEXT, demangled TEXT,
  PRIMARY KEY (process_id, string_id)) WITHOUT ROWID;
CREATE TABLE kernels (process_id INTEGER, device_id INTEGER, context_id INTEGER,
  stream_id INTEGER, correlation_id INTEGER, name_id INTEGER, start_ns INTEGER, end_ns INTEGER,
  duration_ns INTEGER, start_rel_ns INTEGER, end_rel_ns INTEGER, grid_x INTEGER, grid_y INTEGER,
  grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
  registers_per_thread INTEGER, shared_memory_bytes INTEGER, graph_id INTEGER,
  graph_node_id INTEGER);
CREATE TABLE memcpys (process_id INTEGER, device_id INTEGER, context_id INTEGER,
  stream_id INTEGER, correlation_id INTEGER, copy_kind TEXT, src_kind TEXT, dst_kind TEXT,
  bytes INTEGER, async INTEGER, dst_device_id INTEGER, start_ns INTEGER, end_ns INTEGER,
  duration_ns INTEGER, start_rel_ns INTEGER, end_rel_ns INTEGER, graph_id INTEGER);
CREATE TABLE memsets (process_id INTEGER, device_id INTEGER, context_id INTEGER,
  stream_id INTEGER, correlation_id INTEGER, memory_kind TEXT, bytes INTEGER, value INTEGER,
  start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, start_rel_ns INTEGER,
  end_rel_ns INTEGER, graph_id INTEGER);
CREATE TABLE syncs (process_id INTEGER, thread_id INTEGER, context_id INTEGER,
  stream_id INTEGER, event_id INTEGER, sync_kind INTEGER, correlation_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, start_rel_ns INTEGER,
  end_rel_ns INTEGER);
CREATE TABLE api_calls (process_id INTEGER, thread_id INTEGER, correlation_id INTEGER,
  domain INTEGER, cbid INTEGER, name_id INTEGER, return_value INTEGER, start_ns INTEGER,
  end_ns INTEGER, duration_ns INTEGER, start_rel_ns INTEGER, end_rel_ns INTEGER);
CREATE TABLE nvtx_ranges (process_id INTEGER, thread_id INTEGER, name_id INTEGER,
  domain_id INTEGER, depth INTEGER, start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER,
  start_rel_ns INTEGER, end_rel_ns INTEGER);
CREATE TABLE nvtx_marks (process_id INTEGER, thread_id INTEGER, name_id INTEGER,
  domain_id INTEGER, timestamp_ns INTEGER, timestamp_rel_ns INTEGER);
CREATE TABLE metric_descriptors (process_id INTEGER, metric_id INTEGER, name TEXT, unit TEXT,
  scope TEXT, device_id INTEGER, pid INTEGER, thread_id INTEGER, label TEXT);
CREATE TABLE metric_samples (process_id INTEGER, metric_id INTEGER, timestamp_ns INTEGER,
  timestamp_rel_ns INTEGER, value REAL);
CREATE TABLE stack_samples (process_id INTEGER, thread_id INTEGER, correlation_id INTEGER,
  stack_id INTEGER, trigger INTEGER, timestamp_ns INTEGER, timestamp_rel_ns INTEGER);
CREATE TABLE findings (finding_id INTEGER PRIMARY KEY, parent_id INTEGER, rule TEXT,
  title TEXT, severity TEXT, cost_ns INTEGER, gpu INTEGER, process_id INTEGER, scope TEXT,
  summary TEXT, relation TEXT);
CREATE TABLE finding_evidence (finding_id INTEGER, key TEXT, value REAL, unit TEXT);
CREATE TABLE finding_ranges (finding_id INTEGER, start_ns INTEGER, end_ns INTEGER,
  start_rel_ns INTEGER, end_rel_ns INTEGER, note TEXT);
CREATE TABLE finding_fixes (finding_id INTEGER, ordinal INTEGER, fix TEXT);
CREATE VIEW gpu_ops AS
  SELECT process_id, device_id, stream_id, 'kernel' AS kind, correlation_id, start_ns, end_ns,
         duration_ns, start_rel_ns, end_rel_ns FROM kernels
  UNION ALL SELECT process_id, device_id, stream_id, 'memcpy', correlation_id, start_ns, end_ns,
         duration_ns, start_rel_ns, end_rel_ns FROM memcpys
  UNION ALL SELECT process_id, device_id, stream_id, 'memset', correlation_id, start_ns, end_ns,
         duration_ns, start_rel_ns, end_rel_ns FROM memsets;
CREATE VIEW kernels_named AS
  SELECT k.*, s.value AS name, s.demangled AS demangled FROM kernels k
  LEFT JOIN strings s ON s.process_id = k.process_id AND s.string_id = k.name_id;
CREATE VIEW api_calls_named AS
  SELECT a.*, s.value AS name FROM api_calls a
  LEFT JOIN strings s ON s.process_id = a.process_id AND s.string_id = a.name_id;
CREATE VIEW nvtx_ranges_named AS
  SELECT r.*, s.value AS name, d.value AS domain FROM nvtx_ranges r
  LEFT JOIN strings s ON s.process_id = r.process_id AND s.string_id = r.name_id
  LEFT JOIN strings d ON d.process_id = r.process_id AND d.string_id = r.domain_id;
CREATE VIEW nvtx_marks_named AS
  SELECT m.*, s.value AS name, d.value AS domain FROM nvtx_marks m
  LEFT JOIN strings s ON s.process_id = m.process_id AND s.string_id = m.name_id
  LEFT JOIN strings d ON d.process_id = m.process_id AND d.string_id = m.domain_id;
)sql";

constexpr const char* kIndexes = R"sql(
CREATE INDEX kernels_by_name ON kernels (process_id, name_id);
CREATE INDEX kernels_by_correlation ON kernels (process_id, correlation_id);
CREATE INDEX memcpys_by_correlation ON memcpys (process_id, correlation_id);
CREATE INDEX memsets_by_correlation ON memsets (process_id, correlation_id);
CREATE INDEX api_calls_by_thread ON api_calls (process_id, thread_id, start_ns);
CREATE INDEX api_calls_by_correlation ON api_calls (process_id, correlation_id);
CREATE INDEX nvtx_ranges_by_thread ON nvtx_ranges (process_id, thread_id, start_ns);
CREATE INDEX metric_samples_by_metric ON metric_samples (process_id, metric_id, timestamp_ns);
)sql";

// One INSERT per Stmt, in enum order.
constexpr const char* kInserts[] = {
    "INSERT INTO kernels VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO memcpys VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO memsets VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO syncs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO api_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO nvtx_ranges VALUES (?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO nvtx_marks VALUES (?,?,?,?,?,?)",
    "INSERT INTO metric_samples VALUES (?,?,?,?,?)",
    "INSERT INTO stack_samples VALUES (?,?,?,?,?,?,?)",
    "INSERT INTO metric_descriptors VALUES (?,?,?,?,?,?,?,?,?)",
};

// Binds values to a statement left to right.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) {}
  Binder& I(int64_t v) {
    sqlite3_bind_int64(s_, ++column_, v);
    return *this;
  }
  // uint64 columns are stored as SQLite's signed 64 bits: CUPTI times
  // (< 2^63 until the year 2262) keep their value.
  Binder& U(uint64_t v) { return I(static_cast<int64_t>(v)); }
  Binder& D(double v) {
    if (std::isfinite(v)) {
      sqlite3_bind_double(s_, ++column_, v);
    } else {
      sqlite3_bind_null(s_, ++column_);  // not sampled / no such number
    }
    return *this;
  }
  Binder& T(std::string_view v) {
    sqlite3_bind_text(s_, ++column_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Binder& Null() {
    sqlite3_bind_null(s_, ++column_);
    return *this;
  }

 private:
  sqlite3_stmt* s_;
  int column_ = 0;
};

uint64_t Duration(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? end_ns - start_ns : 0;
}

const char* ScopeName(int scope) {
  switch (scope) {
    case proto::SCOPE_DEVICE: return "device";
    case proto::SCOPE_PROCESS: return "process";
    case proto::SCOPE_THREAD: return "thread";
    default: return "host";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteExport>> SqliteExport::Create(
    const std::string& path, const reader::Timebase& timebase) {
  // An existing file would be opened as a database and added to.
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot replace it"));
  }
  sqlite3* db = nullptr;
  // One thread uses the connection: no SQLite mutexes.
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat(path, ": cannot create the database: ", message));
  }
  std::unique_ptr<SqliteExport> out(new SqliteExport(db, timebase));
  // The file is written once, start to end: a crash leaves a file to
  // delete, not one to recover, so there is no journal to keep. A 64 MiB
  // page cache (SQLite's default is 2 MiB) keeps the tables' last pages and
  // the index builds off the disk.
  absl::Status st =
      out->Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;");
  if (st.ok()) st = out->Exec(kSchema);
  if (st.ok()) st = out->Prepare();
  if (st.ok()) st = out->Exec("BEGIN");
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat(path, ": ", st.message()));
  return out;
}

SqliteExport::~SqliteExport() {
  for (sqlite3_stmt*& s : stmts_) sqlite3_finalize(s);
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status SqliteExport::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status st = absl::InternalError(absl::StrCat("sqlite: ", error ? error : "error"));
    sqlite3_free(error);
    return st;
  }
  return absl::OkStatus();
}

absl::Status SqliteExport::Prepare() {
  static_assert(sizeof(kInserts) / sizeof(kInserts[0]) == kStmts, "one INSERT per Stmt");
  for (int i = 0; i < kStmts; ++i) {
    if (sqlite3_prepare_v2(db_, kInserts[i], -1, &stmts_[i], nullptr) != SQLITE_OK) {
      return absl::InternalError(absl::StrCat("sqlite: ", sqlite3_errmsg(db_)));
    }
  }
  return absl::OkStatus();
}

void SqliteExport::Fail(const char* what) {
  if (status_.ok()) {
    status_ = absl::InternalError(absl::StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db_)));
  }
}

void SqliteExport::Step(sqlite3_stmt* s) {
  if (s == nullptr) return;
  if (status_.ok() && sqlite3_step(s) != SQLITE_DONE) Fail("insert");
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  CountRow();
}

// Commits every kRowsPerTransaction rows: one transaction for a whole
// large trace would hold its pages in the cache until the end.
void SqliteExport::CountRow() {
  ++rows_;
  if (++rows_in_transaction_ < kRowsPerTransaction) return;
  rows_in_transaction_ = 0;
  if (status_.ok()) {
    absl::Status st = Exec("COMMIT; BEGIN");
    if (!st.ok()) status_ = st;
  }
}

int64_t SqliteExport::ProcessId(const reader::ProcessTables& tables) {
  auto [it, inserted] =
      process_ids_.try_emplace(tables.process_uid(), static_cast<int64_t>(tables.index()));
  return it->second;
}

void SqliteExport::OnHeader(const reader::ProcessTables& tables, const proto::ProcessHeader&,
                            const reader::ChunkPlace&) {
  ProcessId(tables);
}

void SqliteExport::OnBatch(const reader::ResolvedBatch& rb) {
  if (!status_.ok()) return;  // reported by Finish
  const reader::ProcessTables& t = rb.tables;
  const int64_t pid = ProcessId(t);
  const uint64_t uid = t.process_uid();
  // Metric descriptors arrive in batches (a sampler may add one late).
  for (const proto::MetricDescriptor& m : rb.batch.metric_descriptors()) {
    Binder(stmts_[kDescriptor]).I(pid).U(m.id()).T(m.name()).T(m.unit()).T(ScopeName(m.scope()))
        .U(m.device_id()).U(m.pid()).U(m.thread_id()).T(m.label());
    Step(stmts_[kDescriptor]);
  }
  if (!rb.decode_status.ok()) return;  // counted by the model's completeness
  const reader::DecodedBatch& e = rb.events;
  for (const format::KernelEvent& k : e.kernels) {
    Binder b(stmts_[kKernel]);
    b.I(pid).U(k.device_id).U(k.context_id).U(k.stream_id).U(k.correlation_id).U(k.name_id)
        .U(k.start_ns).U(k.end_ns).U(Duration(k.start_ns, k.end_ns)).I(Rel(uid, k.start_ns))
        .I(Rel(uid, k.end_ns));
    if (const reader::LaunchShape* l = t.Launch(k.launch_config_id)) {
      b.U(l->grid[0]).U(l->grid[1]).U(l->grid[2]).U(l->block[0]).U(l->block[1]).U(l->block[2])
          .U(l->registers_per_thread).U(l->shared_memory_bytes());
    } else {
      b.Null().Null().Null().Null().Null().Null().Null().Null();
    }
    b.U(k.graph_id).U(k.graph_node_id);
    Step(stmts_[kKernel]);
  }
  for (const format::MemcpyEvent& m : e.memcpys) {
    Binder(stmts_[kMemcpy]).I(pid).U(m.device_id).U(m.context_id).U(m.stream_id)
        .U(m.correlation_id).T(analyses::CopyDirectionName(static_cast<int>(m.copy_kind)))
        .T(analyses::MemoryKindName(static_cast<int>(m.src_kind)))
        .T(analyses::MemoryKindName(static_cast<int>(m.dst_kind))).U(m.bytes).I(m.flags & 1)
        .U(m.dst_device_id).U(m.start_ns).U(m.end_ns).U(Duration(m.start_ns, m.end_ns))
        .I(Rel(uid, m.start_ns)).I(Rel(uid, m.end_ns)).U(m.graph_id);
    Step(stmts_[kMemcpy]);
  }
  for (const format::MemsetEvent& m : e.memsets) {
    Binder(stmts_[kMemset]).I(pid).U(m.device_id).U(m.context_id).U(m.stream_id)
        .U(m.correlation_id).T(analyses::MemoryKindName(static_cast<int>(m.memory_kind)))
        .U(m.bytes).U(m.value).U(m.start_ns).U(m.end_ns).U(Duration(m.start_ns, m.end_ns))
        .I(Rel(uid, m.start_ns)).I(Rel(uid, m.end_ns)).U(m.graph_id);
    Step(stmts_[kMemset]);
  }
  for (const format::SyncEvent& y : e.syncs) {
    Binder(stmts_[kSync]).I(pid).U(y.thread_id).U(y.context_id).U(y.stream_id).U(y.event_id)
        .U(y.sync_kind).U(y.correlation_id).U(y.start_ns).U(y.end_ns)
        .U(Duration(y.start_ns, y.end_ns)).I(Rel(uid, y.start_ns)).I(Rel(uid, y.end_ns));
    Step(stmts_[kSync]);
  }
  for (const format::ApiCallEvent& a : e.api_calls) {
    Binder(stmts_[kApi]).I(pid).U(a.thread_id).U(a.correlation_id).U(a.domain).U(a.cbid)
        .U(a.api_name_id).U(a.return_value).U(a.start_ns).U(a.end_ns)
        .U(Duration(a.start_ns, a.end_ns)).I(Rel(uid, a.start_ns)).I(Rel(uid, a.end_ns));
    Step(stmts_[kApi]);
  }
  for (const format::NvtxRangeEvent& r : e.nvtx_ranges) {
    Binder(stmts_[kRange]).I(pid).U(r.thread_id).U(r.name_id).U(r.domain_id).U(r.depth)
        .U(r.start_ns).U(r.end_ns).U(Duration(r.start_ns, r.end_ns)).I(Rel(uid, r.start_ns))
        .I(Rel(uid, r.end_ns));
    Step(stmts_[kRange]);
  }
  for (const format::NvtxMarkEvent& m : e.nvtx_marks) {
    Binder(stmts_[kMark]).I(pid).U(m.thread_id).U(m.name_id).U(m.domain_id).U(m.timestamp_ns)
        .I(Rel(uid, m.timestamp_ns));
    Step(stmts_[kMark]);
  }
  for (const format::MetricSample& m : e.metrics) {
    Binder(stmts_[kMetric]).I(pid).U(m.metric_id).U(m.timestamp_ns).I(Rel(uid, m.timestamp_ns))
        .D(m.value);
    Step(stmts_[kMetric]);
  }
  stack_samples_.clear();
  if (rb.batch.has_stack_samples() && reader::DecodeStackSamples(rb.batch, &stack_samples_).ok()) {
    for (const reader::StackSampleEvent& ss : stack_samples_) {
      Binder(stmts_[kStackSample]).I(pid).U(ss.thread_id).U(ss.correlation_id).U(ss.stack_id)
          .I(ss.trigger).U(ss.timestamp_ns).I(Rel(uid, ss.timestamp_ns));
      Step(stmts_[kStackSample]);
    }
  }
}

absl::Status SqliteExport::Finish(const model::TraceModel& model,
                                  const analyses::SummaryReport& report,
                                  const std::vector<analyses::Finding>& findings) {
  // One statement at a time for the small tables.
  auto with = [&](const char* sql, auto&& bind) {
    sqlite3_stmt* s = nullptr;
    if (!status_.ok()) return;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      Fail(sql);
      return;
    }
    bind(s);
    sqlite3_finalize(s);
  };
  auto id_of = [&](uint64_t uid) -> int64_t {
    auto it = process_ids_.find(uid);
    if (it != process_ids_.end()) return it->second;
    const int64_t id = 1'000'000 + static_cast<int64_t>(process_ids_.size());  // never seen
    process_ids_[uid] = id;
    return id;
  };

  with("INSERT INTO meta VALUES (?,?)", [&](sqlite3_stmt* s) {
    const std::pair<std::string, std::string> rows[] = {
        {"schema", "gpscope.sqlite"},
        {"schema_version", std::to_string(kSqliteSchemaVersion)},
        {"time_origin_realtime_ns", std::to_string(model.timebase.origin_realtime_ns())},
        {"time_origin_utc", model.timebase.OriginUtc()},
        {"partial", model.index.partial ? model.index.partial->Message() : ""},
        {"events", std::to_string(model.events)},
    };
    for (const auto& [key, value] : rows) {
      Binder(s).T(key).T(value);
      Step(s);
    }
  });
  with("INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
    for (const model::ProcessModel& p : model.processes) {
      std::string cmdline;
      for (const std::string& arg : p.cmdline) absl::StrAppend(&cmdline, cmdline.empty() ? "" : " ", arg);
      Binder(s).I(id_of(p.process_uid)).T(absl::StrFormat("%016x", p.process_uid)).U(p.pid)
          .T(p.hostname).T(p.path).T(cmdline).I(p.rank).I(p.local_rank).I(p.world_size)
          .T(p.job_id).U(p.events).U(p.api_calls).I(p.clean_end ? 1 : 0);
      Step(s);
    }
  });
  with("INSERT INTO devices VALUES (?,?,?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
    for (const std::unique_ptr<reader::ProcessTables>& t : model.tables) {
      for (const auto& [device_id, d] : t->devices()) {
        Binder(s).I(id_of(t->process_uid())).U(device_id).T(d.name()).T(d.uuid())
            .T(d.pci_bus_id())
            .T(absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()))
            .U(d.sm_count()).U(d.global_memory_bytes());
        Step(s);
      }
    }
  });
  with("INSERT INTO strings VALUES (?,?,?,?)", [&](sqlite3_stmt* s) {
    for (const std::unique_ptr<reader::ProcessTables>& t : model.tables) {
      const int64_t pid = id_of(t->process_uid());
      // Id 0 is the empty string (the default NVTX domain) in every trace.
      for (size_t id = 0; id < std::max<size_t>(t->string_ids(), 1); ++id) {
        if (id != 0 && !t->HasString(static_cast<uint32_t>(id))) continue;
        const std::string& value = t->String(static_cast<uint32_t>(id));
        Binder b(s);
        b.I(pid).U(id).T(value);
        // Mangled C++ names (kernels): demangled beside them.
        if (value.rfind("_Z", 0) == 0) {
          b.T(analyses::Demangle(value));
        } else {
          b.T(value);
        }
        Step(s);
      }
    }
  });
  with("INSERT INTO gpus VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
    absl::flat_hash_map<uint64_t, int32_t> rank_of;  // by process uid
    for (const model::ProcessModel& p : model.processes) rank_of[p.process_uid] = p.rank;
    for (const analyses::GpuReport& g : report.gpus) {
      if (g.gpu == nullptr) continue;
      const model::GpuModel& m = *g.gpu;
      auto it = rank_of.find(m.process_uid);
      const int32_t rank = it != rank_of.end() ? it->second : -1;
      Binder(s).U(g.gpu_index).I(id_of(m.process_uid)).U(m.device_id).T(g.label).I(rank)
          .U(m.first_ns).U(m.last_ns).I(Rel(m.process_uid, m.first_ns))
          .I(Rel(m.process_uid, m.last_ns)).U(m.busy_ns).U(m.kernel_count).U(m.kernel_ns);
      Step(s);
    }
  });
  with("INSERT INTO ranks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
    for (size_t i = 0; i < report.ranks.rows.size(); ++i) {
      const analyses::RankRow& r = report.ranks.rows[i];
      Binder b(s);
      b.U(r.gpu_index).I(r.rank).U(r.pid).T(r.hostname).U(r.device_id).T(r.label)
          .T(r.step_source).D(r.step_p50_ns).D(r.step_p95_ns).D(r.window_ns)
          .D(r.compute_busy_ns).D(r.comm_busy_ns).D(r.busy_share).D(r.idle_ns);
      if (r.comm_overlap < 0) {
        b.Null();
      } else {
        b.D(r.comm_overlap);
      }
      b.U(r.collectives).D(r.wait_ns).D(r.mean_late_ns)
          .I(report.ranks.straggler == static_cast<int>(i) ? 1 : 0);
      Step(s);
    }
  });
  // Findings: causes first, each followed by the findings grouped under it
  // (parent_id names the cause).
  int64_t next_finding = 1;
  auto write_finding = [&](const analyses::Finding& f, int64_t parent) -> int64_t {
    const int64_t id = next_finding++;
    with("INSERT INTO findings VALUES (?,?,?,?,?,?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
      Binder b(s);
      b.I(id);
      if (parent > 0) {
        b.I(parent);
      } else {
        b.Null();
      }
      b.T(f.rule).T(f.title).T(analyses::SeverityName(f.severity)).U(f.cost_ns);
      if (f.gpu >= 0) {
        b.I(f.gpu);
      } else {
        b.Null();
      }
      // The finding's process, or its GPU's.
      if (f.process >= 0 && static_cast<size_t>(f.process) < report.processes.size() &&
          report.processes[f.process].process != nullptr) {
        b.I(id_of(report.processes[f.process].process->process_uid));
      } else if (f.gpu >= 0 && static_cast<size_t>(f.gpu) < report.gpus.size() &&
                 report.gpus[f.gpu].gpu != nullptr) {
        b.I(id_of(report.gpus[f.gpu].gpu->process_uid));
      } else {
        b.Null();
      }
      b.T(f.scope).T(f.summary).T(f.relation);
      Step(s);
    });
    with("INSERT INTO finding_evidence VALUES (?,?,?,?)", [&](sqlite3_stmt* s) {
      for (const analyses::EvidenceNumber& e : f.evidence) {
        Binder(s).I(id).T(e.key).D(e.value).T(e.unit);
        Step(s);
      }
    });
    // A range is on its GPU's (or process's) clock.
    uint64_t uid = 0;
    if (f.gpu >= 0 && static_cast<size_t>(f.gpu) < report.gpus.size() &&
        report.gpus[f.gpu].gpu != nullptr) {
      uid = report.gpus[f.gpu].gpu->process_uid;
    } else if (f.process >= 0 && static_cast<size_t>(f.process) < report.processes.size() &&
               report.processes[f.process].process != nullptr) {
      uid = report.processes[f.process].process->process_uid;
    }
    with("INSERT INTO finding_ranges VALUES (?,?,?,?,?,?)", [&](sqlite3_stmt* s) {
      for (const analyses::TimeRange& r : f.ranges) {
        Binder(s).I(id).U(r.start_ns).U(r.end_ns).I(Rel(uid, r.start_ns)).I(Rel(uid, r.end_ns))
            .T(r.note);
        Step(s);
      }
    });
    with("INSERT INTO finding_fixes VALUES (?,?,?)", [&](sqlite3_stmt* s) {
      for (size_t i = 0; i < f.fixes.size(); ++i) {
        Binder(s).I(id).U(i).T(f.fixes[i]);
        Step(s);
      }
    });
    return id;
  };
  for (const analyses::Finding& f : findings) {
    const int64_t id = write_finding(f, 0);
    for (const analyses::Finding& g : f.grouped) write_finding(g, id);
  }
  if (status_.ok()) status_ = Exec("COMMIT");
  if (status_.ok()) status_ = Exec(kIndexes);
  if (status_.ok()) status_ = Exec("ANALYZE");
  for (sqlite3_stmt*& s : stmts_) {
    sqlite3_finalize(s);
    s = nullptr;
  }
  if (sqlite3_close(db_) != SQLITE_OK && status_.ok()) Fail("close");
  db_ = nullptr;
  return status_;
}

}  // namespace gpscope::render
