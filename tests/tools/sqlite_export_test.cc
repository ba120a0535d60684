// export --format sqlite on a trace built here: rows, resolved names, the
// two time columns on the one origin across processes, and the findings.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "tests/testing/trace_builder.h"
#include "tools/analyze/cli.h"

namespace gpscope::analyze {
namespace {

// Two ranks; rank 1's kernels start 2 us after rank 0's on the common
// timebase (the builder maps CUPTI 1e9 to each header's start time).
std::string BuildTrace() {
  testing::TraceBuilder trace;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    testing::TraceBuilder::Process& p = trace.AddProcess(0x200 + rank, 60 + rank);
    p.header().mutable_identity()->set_rank(static_cast<int32_t>(rank));
    p.WriteHeader();
    for (uint32_t i = 0; i < 3; ++i) {
      format::ApiCallEvent a{};
      a.start_ns = 1'000'000'000 + 10'000 * i + 2'000 * rank - 500;
      a.end_ns = a.start_ns + 100;
      a.thread_id = 60 + rank;
      a.correlation_id = 1 + i;
      a.api_name_id = p.Intern("cudaLaunchKernel");
      p.Add(a);
      format::KernelEvent k{};
      k.start_ns = 1'000'000'000 + 10'000 * i + 2'000 * rank;
      k.end_ns = k.start_ns + 1'500;
      k.name_id = p.Intern("_Z6squarePfi");
      k.stream_id = 7;
      k.correlation_id = 1 + i;
      p.Add(k);
    }
    p.Flush();
    p.WriteEnd();
  }
  std::string path =
      ::testing::TempDir() + "sqlite_export_test." + std::to_string(getpid()) + ".gpscope";
  EXPECT_TRUE(trace.WriteFile(path));
  return path;
}

// The rows of `sql` as text, columns separated by '|', rows by '\n'.
std::string Query(sqlite3* db, const char* sql) {
  std::string out;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(s) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      if (c) out += '|';
      const unsigned char* t = sqlite3_column_text(s, c);
      out += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    out += '\n';
  }
  sqlite3_finalize(s);
  return out;
}

TEST(SqliteExportTest, WritesEventsNamesAndTimesOnTheOneOrigin) {
  const std::string trace = BuildTrace();
  const std::string db_path = trace + ".sqlite";
  std::ostringstream out, err;
  ASSERT_EQ(analyze::Run({"export", "--format", "sqlite", "-o", db_path, trace}, out, err), kExitOk)
      << err.str();
  EXPECT_NE(err.str().find("wrote " + db_path), std::string::npos) << err.str();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(Query(db, "SELECT value FROM meta WHERE key = 'schema_version'"), "1\n");
  EXPECT_EQ(Query(db, "SELECT process_id, pid, rank FROM processes ORDER BY process_id"),
            "0|60|0\n1|61|1\n");
  EXPECT_EQ(Query(db, "SELECT COUNT(*), SUM(duration_ns) FROM kernels"), "6|9000\n");
  EXPECT_EQ(Query(db,
                  "SELECT DISTINCT s.value, s.demangled FROM kernels k JOIN strings s"
                  " ON s.process_id = k.process_id AND s.string_id = k.name_id"),
            "_Z6squarePfi|square(float*, int)\n");
  // The earliest event is rank 0's first API call: it is the origin.
  EXPECT_EQ(Query(db, "SELECT MIN(start_rel_ns) FROM api_calls"), "0\n");
  // Each rank's first kernel: 500 ns after the origin, and 2 us later.
  EXPECT_EQ(Query(db,
                  "SELECT p.rank, MIN(k.start_rel_ns), MIN(k.start_ns) - MIN(a.start_ns) FROM"
                  " kernels k JOIN processes p USING (process_id) JOIN api_calls a"
                  " USING (process_id, correlation_id) GROUP BY p.rank ORDER BY p.rank"),
            "0|500|500\n1|2500|500\n");
  // start_rel_ns - start_ns is one offset within a process.
  EXPECT_EQ(Query(db, "SELECT COUNT(DISTINCT start_rel_ns - start_ns) FROM kernels"
                      " GROUP BY process_id"),
            "1\n1\n");
  EXPECT_EQ(Query(db, "SELECT COUNT(*) FROM gpus"), "2\n");
  sqlite3_close(db);
  unlink(db_path.c_str());
  unlink(trace.c_str());
}

TEST(SqliteExportTest, NeedsAnOutputFileAndReportsAnUnwritableOne) {
  const std::string trace = BuildTrace();
  std::ostringstream out, err;
  EXPECT_EQ(analyze::Run({"export", "--format", "sqlite", trace}, out, err), kExitUsage);
  EXPECT_NE(err.str().find("-o OUT.sqlite"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(analyze::Run({"export", "--format", "sqlite", "-o", "/nonexistent/dir/x.sqlite", trace}, out2,
                err2),
            kExitFailed);
  EXPECT_NE(err2.str().find("/nonexistent/dir/x.sqlite"), std::string::npos) << err2.str();
  unlink(trace.c_str());
}

}  // namespace
}  // namespace gpscope::analyze
