// common/safe_path.h: the output directory and trace file checks against
// the machine's other users. "Another user" is played two ways: as root the
// test hands files to an unused uid (12345) with chown; as anyone it asks
// the checks on behalf of a uid that is not the files' owner. Both run in CI
// (root); the chown cases say SKIPPED elsewhere.
#include "common/safe_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "proto/framing.h"

namespace gpscope::common {
namespace {

constexpr uid_t kOtherUid = 12345;

class SafePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpscope-safe-path-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    old_umask_ = umask(022);
  }
  void TearDown() override {
    umask(old_umask_);
    ASSERT_EQ(std::system(("rm -rf '" + root_ + "'").c_str()), 0);
  }
  std::string P(const std::string& rel) const { return root_ + "/" + rel; }
  static uid_t Me() { return geteuid(); }
  // Makes `path` (ours) another user's, as far as the checks can tell: as
  // root it is handed to kOtherUid and the checks run for root; otherwise
  // the checks run for a uid that is not ours. Returns that uid.
  static uid_t AsAnotherUsers(const std::string& path) {
    if (Me() != 0) return Me() + 1000;
    EXPECT_EQ(lchown(path.c_str(), kOtherUid, kOtherUid), 0);
    return 0;
  }
  static uid_t OwnerOf(const std::string& path) {
    struct stat st{};
    lstat(path.c_str(), &st);
    return st.st_uid;
  }
  static mode_t Mode(const std::string& path) {
    struct stat st{};
    lstat(path.c_str(), &st);
    return st.st_mode & 07777;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string root_;
  mode_t old_umask_ = 0;
};

TEST_F(SafePathTest, CreatesMissingComponentsPrivateAndReportsTheAbsolutePath) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("a/b/c"), DirModeFor(0640), Me(), &dir, &error)) << error;
  EXPECT_EQ(dir.path(), P("a/b/c"));
  EXPECT_EQ(Mode(P("a")), 0750u);
  EXPECT_EQ(Mode(P("a/b/c")), 0750u);
  EXPECT_FALSE(dir.shared());
  // Relative to the working directory: absolute in path().
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(root_.c_str()), 0);
  OutputDir rel;
  const bool ok = OpenOutputDir("./x/../rel-out", DirModeFor(0600), Me(), &rel, &error);
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(rel.path(), P("rel-out"));
  EXPECT_EQ(Mode(P("rel-out")), 0700u);
}

TEST_F(SafePathTest, DirectoryModesFollowTheFileMode) {
  EXPECT_EQ(DirModeFor(0640), 0750u);
  EXPECT_EQ(DirModeFor(0600), 0700u);
  EXPECT_EQ(DirModeFor(0660), 0770u);
  EXPECT_EQ(DirModeFor(0644), 0755u);
}

TEST_F(SafePathTest, ADirectoryOfAnotherUserIsRefused) {
  ASSERT_EQ(mkdir(P("theirs").c_str(), 0755), 0);
  const uid_t asker = AsAnotherUsers(P("theirs"));
  OutputDir dir;
  std::string error;
  EXPECT_FALSE(OpenOutputDir(P("theirs"), 0750, asker, &dir, &error));
  EXPECT_NE(error.find("belongs to uid " + std::to_string(OwnerOf(P("theirs")))),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("refusing to write traces there"), std::string::npos) << error;
  EXPECT_FALSE(dir.is_open());
}

TEST_F(SafePathTest, ARootOwnedDirectoryIsAcceptedForAnyUser) {
  if (Me() != 0) GTEST_SKIP() << "needs root to own a directory by root";
  ASSERT_EQ(mkdir(P("roots").c_str(), 0755), 0);
  OutputDir dir;
  std::string error;
  EXPECT_TRUE(OpenOutputDir(P("roots"), 0750, kOtherUid, &dir, &error)) << error;
}

TEST_F(SafePathTest, AWorldWritableDirectoryIsRefusedUnlessSticky) {
  ASSERT_EQ(mkdir(P("open").c_str(), 0700), 0);
  ASSERT_EQ(chmod(P("open").c_str(), 0777), 0);
  OutputDir dir;
  std::string error;
  EXPECT_FALSE(OpenOutputDir(P("open"), 0750, Me(), &dir, &error));
  EXPECT_NE(error.find("writable by every user (mode 0777, not sticky)"), std::string::npos)
      << error;
  ASSERT_EQ(chmod(P("open").c_str(), 01777), 0);
  ASSERT_TRUE(OpenOutputDir(P("open"), 0750, Me(), &dir, &error)) << error;
  EXPECT_TRUE(dir.shared());
}

TEST_F(SafePathTest, ASymlinkOfAnotherUserIsNotFollowed) {
  ASSERT_EQ(mkdir(P("target").c_str(), 0700), 0);
  ASSERT_EQ(symlink(P("target").c_str(), P("mine").c_str()), 0);
  // Ours, in a directory only we may write to: followed, and the path is
  // the real one.
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("mine"), 0750, Me(), &dir, &error)) << error;
  EXPECT_EQ(dir.path(), P("target"));
  // Another user's link to the same directory is not followed.
  ASSERT_EQ(symlink(P("target").c_str(), P("gpscope-out").c_str()), 0);
  const uid_t asker = AsAnotherUsers(P("gpscope-out"));
  EXPECT_FALSE(OpenOutputDir(P("gpscope-out"), 0750, asker, &dir, &error));
  EXPECT_NE(error.find("is a symbolic link that belongs to uid " +
                       std::to_string(OwnerOf(P("gpscope-out")))),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("refusing to follow it"), std::string::npos) << error;
}

TEST_F(SafePathTest, ASymlinkPlantedByAnotherUserIsNotFollowedAsRoot) {
  if (Me() != 0) GTEST_SKIP() << "needs root to hand a link to another uid";
  ASSERT_EQ(mkdir(P("private").c_str(), 0700), 0);
  ASSERT_EQ(symlink(P("private").c_str(), P("gpscope-out").c_str()), 0);
  ASSERT_EQ(lchown(P("gpscope-out").c_str(), kOtherUid, kOtherUid), 0);
  OutputDir dir;
  std::string error;
  EXPECT_FALSE(OpenOutputDir(P("gpscope-out"), 0750, 0, &dir, &error));
  EXPECT_NE(error.find("belongs to uid 12345"), std::string::npos) << error;
  // Nothing was created through it.
  EXPECT_EQ(Read(P("private")), "");
}

TEST_F(SafePathTest, OurSymlinkInADirectoryOthersMayWriteIsNotFollowed) {
  ASSERT_EQ(mkdir(P("shared").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("target").c_str(), 0700), 0);
  ASSERT_EQ(symlink(P("target").c_str(), P("shared/out").c_str()), 0);
  ASSERT_EQ(chmod(P("shared").c_str(), 0777), 0);  // anyone could swap the link
  OutputDir dir;
  std::string error;
  EXPECT_FALSE(OpenOutputDir(P("shared/out"), 0750, Me(), &dir, &error));
  EXPECT_NE(error.find("in a directory other users may write to"), std::string::npos) << error;
}

TEST_F(SafePathTest, AFileWhereADirectoryShouldBeIsNamed) {
  std::ofstream(P("file")) << "x";
  OutputDir dir;
  std::string error;
  EXPECT_FALSE(OpenOutputDir(P("file/sub"), 0750, Me(), &dir, &error));
  EXPECT_NE(error.find(P("file")), std::string::npos) << error;
}

TEST_F(SafePathTest, TraceFilesAreCreated0640WithAHeader) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("out"), DirModeFor(0640), Me(), &dir, &error)) << error;
  bool foreign = true;
  const int fd = OpenTraceFileIn(dir, "job_host.gpscope", 0640, Me(), &foreign, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_FALSE(foreign);
  close(fd);
  EXPECT_EQ(Mode(P("out/job_host.gpscope")), 0640u);
  EXPECT_EQ(Read(P("out/job_host.gpscope")).size(), format::kFileHeaderBytes);
  // A second opener appends to the same file.
  const int again = OpenTraceFileIn(dir, "job_host.gpscope", 0640, Me(), &foreign, &error);
  EXPECT_GE(again, 0) << error;
  close(again);
}

TEST_F(SafePathTest, ASymlinkAtTheTraceNameIsForeignAndItsTargetUntouched) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("out"), 0750, Me(), &dir, &error)) << error;
  // Another trace the link points at: not appended to.
  const int victim = format::OpenForAppend(P("victim.gpscope").c_str(), nullptr, 0);
  ASSERT_GE(victim, 0);
  close(victim);
  ASSERT_EQ(symlink(P("victim.gpscope").c_str(), P("out/vm.gpscope").c_str()), 0);
  bool foreign = false;
  EXPECT_EQ(OpenTraceFileIn(dir, "vm.gpscope", 0640, Me(), &foreign, &error), -1);
  EXPECT_TRUE(foreign);
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_EQ(Read(P("victim.gpscope")).size(), format::kFileHeaderBytes);
}

TEST_F(SafePathTest, AFifoAtTheTraceNameIsForeignAndDoesNotBlock) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("out"), 0750, Me(), &dir, &error)) << error;
  ASSERT_EQ(mkfifo(P("out/vm.gpscope").c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  bool foreign = false;
  EXPECT_EQ(OpenTraceFileIn(dir, "vm.gpscope", 0640, Me(), &foreign, &error), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(foreign);
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
}

TEST_F(SafePathTest, AFileOthersMayWriteIsForeign) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("out"), 0750, Me(), &dir, &error)) << error;
  const int made = format::OpenForAppend(P("out/vm.gpscope").c_str(), nullptr, 0);
  ASSERT_GE(made, 0);
  close(made);
  ASSERT_EQ(chmod(P("out/vm.gpscope").c_str(), 0666), 0);
  bool foreign = false;
  EXPECT_EQ(OpenTraceFileIn(dir, "vm.gpscope", 0640, Me(), &foreign, &error), -1);
  EXPECT_TRUE(foreign);
  EXPECT_NE(error.find("writable by every user (mode 0666)"), std::string::npos) << error;
}

TEST_F(SafePathTest, AnotherUsersPreMadeTraceInAStickyDirectoryIsForeignAsRoot) {
  if (Me() != 0) GTEST_SKIP() << "needs root to hand a file to another uid";
  ASSERT_EQ(mkdir(P("tmp").c_str(), 01777), 0);
  ASSERT_EQ(chmod(P("tmp").c_str(), 01777), 0);
  const int made = format::OpenForAppend(P("tmp/vm.gpscope").c_str(), nullptr, 0);
  ASSERT_GE(made, 0);
  close(made);
  ASSERT_EQ(chown(P("tmp/vm.gpscope").c_str(), kOtherUid, kOtherUid), 0);
  ASSERT_EQ(chmod(P("tmp/vm.gpscope").c_str(), 0644), 0);
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("tmp"), 0750, 0, &dir, &error)) << error;
  bool foreign = false;
  EXPECT_EQ(OpenTraceFileIn(dir, "vm.gpscope", 0640, 0, &foreign, &error), -1);
  EXPECT_TRUE(foreign);
  EXPECT_NE(error.find("belongs to uid 12345 in a shared (sticky) directory"), std::string::npos)
      << error;
  EXPECT_EQ(Read(P("tmp/vm.gpscope")).size(), format::kFileHeaderBytes);
}

TEST_F(SafePathTest, TrustedFileRules) {
  OutputDir dir;
  std::string error, why;
  ASSERT_TRUE(OpenOutputDir(P("out"), 0750, Me(), &dir, &error)) << error;
  struct stat st{};
  st.st_mode = S_IFREG | 0640;
  st.st_uid = 1000;
  EXPECT_TRUE(TrustedFile(st, dir, 1000, &why)) << why;
  EXPECT_FALSE(TrustedFile(st, dir, 1001, &why));
  EXPECT_EQ(why, "belongs to uid 1000");
  st.st_uid = 0;
  EXPECT_TRUE(TrustedFile(st, dir, 1001, &why)) << "root's file in a directory that is not shared";
  st.st_mode = S_IFREG | 0646;
  st.st_uid = 1000;
  EXPECT_FALSE(TrustedFile(st, dir, 1000, &why));
  st.st_mode = S_IFIFO | 0600;
  EXPECT_FALSE(TrustedFile(st, dir, 1000, &why));
  EXPECT_EQ(why, "is a FIFO");
}

TEST_F(SafePathTest, PrivateNamesAreDistinctAndKeepTheSuffix) {
  const std::string a = PrivateTraceName("job_host.gpscope", 1000, 42);
  const std::string b = PrivateTraceName("job_host.gpscope", 1000, 42);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("job_host.u1000-42-", 0), 0u) << a;
  EXPECT_EQ(a.substr(a.size() - 8), ".gpscope");
}

TEST_F(SafePathTest, CreateFileInNeverTruncatesAForeignFile) {
  OutputDir dir;
  std::string error;
  ASSERT_TRUE(OpenOutputDir(P("out"), 0750, Me(), &dir, &error)) << error;
  std::ofstream(P("out/theirs.html")) << "someone else's";
  const uid_t asker = AsAnotherUsers(P("out/theirs.html"));
  EXPECT_EQ(CreateFileIn(dir, "theirs.html", 0640, asker, &error), -1);
  EXPECT_NE(error.find("refusing to write it"), std::string::npos) << error;
  EXPECT_EQ(Read(P("out/theirs.html")), "someone else's");
  std::ofstream(P("out/report.html")) << "ours";
  ASSERT_EQ(symlink(P("out/report.html").c_str(), P("out/link.html").c_str()), 0);
  EXPECT_EQ(CreateFileIn(dir, "link.html", 0640, Me(), &error), -1);
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  const int fd = CreateFileIn(dir, "report.html", 0640, Me(), &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(Read(P("out/report.html")), "") << "ours: truncated";
  const int fresh = CreateFileIn(dir, "new.gpscope", 0640, Me(), &error);
  ASSERT_GE(fresh, 0) << error;
  close(fresh);
  EXPECT_EQ(Mode(P("out/new.gpscope")), 0640u);
}

TEST_F(SafePathTest, LibraryPathsMustBeRegularFilesAndAreCheckedWithoutBlocking) {
  ASSERT_EQ(mkfifo(P("libfake.so.1").c_str(), 0644), 0);
  std::ofstream(P("libreal.so.1")) << "\x7f" "ELF";
  std::string why;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(IsRegularFile(P("libfake.so.1"), &why));
  EXPECT_NE(why.find("is a FIFO"), std::string::npos) << why;
  EXPECT_TRUE(IsRegularFile(P("libreal.so.1"), &why)) << why;
  EXPECT_FALSE(IsRegularFile(P("missing.so"), &why));
  // A bare name found as a FIFO in a directory of LD_LIBRARY_PATH.
  const char* old = getenv("LD_LIBRARY_PATH");
  const std::string saved = old != nullptr ? old : "";
  setenv("LD_LIBRARY_PATH", ("/nonexistent:" + root_).c_str(), 1);
  EXPECT_FALSE(SearchPathIsSafe("libfake.so.1", &why));
  EXPECT_NE(why.find("(on LD_LIBRARY_PATH) is a FIFO"), std::string::npos) << why;
  EXPECT_TRUE(SearchPathIsSafe("libreal.so.1", &why)) << why;
  EXPECT_TRUE(SearchPathIsSafe("libnot-there.so", &why)) << why;
  EXPECT_FALSE(SearchPathIsSafe(P("libfake.so.1"), &why)) << "a path is stat()ed";
  if (old != nullptr) {
    setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    unsetenv("LD_LIBRARY_PATH");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace gpscope::common
