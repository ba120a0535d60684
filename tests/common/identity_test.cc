// common/identity.h: launcher variables, the allow-list, this process, file names.
#include "common/identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

namespace gpscope::common {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

ProcessIdentity FromEnv(std::map<std::string, std::string> env) {
  g_env = &env;
  ProcessIdentity id;
  ParseLauncherEnv(FakeEnv, &id);
  g_env = nullptr;
  return id;
}

TEST(IdentityTest, TorchrunVariables) {
  ProcessIdentity id = FromEnv({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"},
                                {"GROUP_RANK", "2"}, {"TORCHELASTIC_RUN_ID", "run7"}});
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.node_rank, 2);
  EXPECT_EQ(id.job_id, "run7");
}

TEST(IdentityTest, SlurmVariables) {
  ProcessIdentity id = FromEnv({{"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "3"},
                                {"SLURM_NTASKS", "16"}, {"SLURM_NODEID", "0"},
                                {"SLURM_JOB_ID", "991"}});
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 16);
  EXPECT_EQ(id.node_rank, 0);
  EXPECT_EQ(id.job_id, "991");
}

TEST(IdentityTest, TorchrunInsideSlurmKeepsTorchrunRankAndSlurmJob) {
  ProcessIdentity id = FromEnv({{"RANK", "9"}, {"WORLD_SIZE", "16"}, {"SLURM_PROCID", "1"},
                                {"SLURM_NODEID", "4"}, {"SLURM_JOB_ID", "77"}});
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.rank, 9);
  EXPECT_EQ(id.node_rank, 4);
  EXPECT_EQ(id.job_id, "77");
}

TEST(IdentityTest, OpenMpiAndPmi) {
  ProcessIdentity ompi = FromEnv({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  EXPECT_EQ(ompi.launcher, "openmpi");
  EXPECT_EQ(ompi.rank, 2);
  EXPECT_EQ(ompi.world_size, 4);
  ProcessIdentity pmi = FromEnv({{"PMI_RANK", "6"}, {"PMI_SIZE", "7"}});
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.rank, 6);
  EXPECT_EQ(pmi.world_size, 7);
}

TEST(IdentityTest, ExplicitGpscopeSettingsWin) {
  ProcessIdentity id = FromEnv({{"RANK", "1"}, {"GPSCOPE_JOB", "mine"}, {"GPSCOPE_RANK", "4"}});
  EXPECT_EQ(id.job_id, "mine");
  EXPECT_EQ(id.rank, 4);
}

TEST(IdentityTest, GarbageRankIsUnknown) {
  ProcessIdentity id = FromEnv({{"RANK", "one"}});
  EXPECT_EQ(id.rank, -1);
  EXPECT_EQ(id.launcher, "");
}

TEST(IdentityTest, AllowListKeepsTopologyDropsSecrets) {
  EXPECT_TRUE(IsAllowListedEnv("RANK"));
  EXPECT_TRUE(IsAllowListedEnv("NCCL_DEBUG"));
  EXPECT_TRUE(IsAllowListedEnv("GPSCOPE_OUTPUT"));
  EXPECT_TRUE(IsAllowListedEnv("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(IsAllowListedEnv("AWS_SECRET_ACCESS_KEY"));
  EXPECT_FALSE(IsAllowListedEnv("HF_TOKEN"));
  EXPECT_FALSE(IsAllowListedEnv("NCCL_IB_TOKEN"));
  EXPECT_FALSE(IsAllowListedEnv("HOME"));
  EXPECT_FALSE(IsAllowListedEnv("PATH"));
}

TEST(IdentityTest, AllowListKeepsBehaviourChangingSettings) {
  // The settings the analyzer cites as causes (issue 21).
  for (const char* name :
       {"CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
        "PYTORCH_NO_CUDA_MEMORY_CACHING", "CUDA_DEVICE_MAX_CONNECTIONS", "CUBLAS_WORKSPACE_CONFIG",
        "NCCL_P2P_DISABLE", "TORCH_NCCL_BLOCKING_WAIT", "TORCHINDUCTOR_MAX_AUTOTUNE",
        "XLA_PYTHON_CLIENT_PREALLOCATE", "TF_GPU_ALLOCATOR", "CUPY_GPU_MEMORY_LIMIT"}) {
    EXPECT_TRUE(IsAllowListedEnv(name)) << name;
  }
  // Prefixes do not open the door to secrets or look-alike names.
  EXPECT_FALSE(IsAllowListedEnv("TORCH_NCCL_AUTH_TOKEN"));
  EXPECT_FALSE(IsAllowListedEnv("TORCHINDUCTOR_REMOTE_CACHE_PASSWORD"));
  EXPECT_FALSE(IsAllowListedEnv("XLA_PYTHON_CLIENT_API_KEY"));
  EXPECT_FALSE(IsAllowListedEnv("NCCL_IB_AUTH_PASSWD"));
  EXPECT_FALSE(IsAllowListedEnv("TORCH_HOME"));
  EXPECT_FALSE(IsAllowListedEnv("CUDA_LAUNCH_BLOCKING_X"));
}

TEST(IdentityTest, ReadsThisProcess) {
  setenv("GPSCOPE_TEST_VISIBLE", "1", 1);
  setenv("MY_API_TOKEN", "secret", 1);
  ProcessIdentity id = ReadProcessIdentity();
  EXPECT_EQ(id.pid, static_cast<uint32_t>(getpid()));
  EXPECT_FALSE(id.hostname.empty());
  ASSERT_FALSE(id.cmdline.empty());
  EXPECT_NE(id.cmdline[0].find("identity_test"), std::string::npos);
  bool visible = false;
  for (auto& [k, v] : id.env) {
    EXPECT_NE(k, "MY_API_TOKEN");
    if (k == "GPSCOPE_TEST_VISIBLE") visible = true;
  }
  EXPECT_TRUE(visible);
}

TEST(IdentityTest, FileNamesAreSafe) {
  EXPECT_EQ(TraceFileName("", "node-1", 42, FileMode::kNode), "node-1.gpscope");
  EXPECT_EQ(TraceFileName("job/7 x", "h", 42, FileMode::kNode), "job_7_x_h.gpscope");
  EXPECT_EQ(TraceFileName("j", "h", 42, FileMode::kProcess), "j_h_42.gpscope");
}

// /proc/driver/nvidia/version as the proprietary and the open kernel
// modules write it; the version goes into the trace header.
TEST(IdentityTest, NvidiaDriverVersionFromProc) {
  EXPECT_EQ(ParseNvidiaDriverVersion(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  9 "
                "19:54:44 UTC 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0)\n"),
            "580.159.04");
  EXPECT_EQ(ParseNvidiaDriverVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                     "550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"),
            "550.54.15");
  EXPECT_EQ(ParseNvidiaDriverVersion("NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104\n"),
            "535.104");
  EXPECT_EQ(ParseNvidiaDriverVersion(""), "");  // no driver (this CI machine)
  EXPECT_EQ(ParseNvidiaDriverVersion("Kernel Module x86_64 version unknown\n"), "");
  EXPECT_EQ(ParseNvidiaDriverVersion("GCC version 13.3.0\n"), "");  // no "Kernel Module"
}

// /proc/self/ns/pid: the host's namespace has the fixed inode 4026531836.
TEST(IdentityTest, PidNamespaceFromTheNsLink) {
  EXPECT_FALSE(IsNonInitialPidNamespace("pid:[4026531836]"));
  EXPECT_TRUE(IsNonInitialPidNamespace("pid:[4026532201]"));
  EXPECT_FALSE(IsNonInitialPidNamespace(""));  // unreadable: assume the host's
}

}  // namespace
}  // namespace gpscope::common
