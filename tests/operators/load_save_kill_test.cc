// A Save killed with SIGKILL in the middle -- as a crash, the OOM killer or
// `kill -9` would -- leaves the previous checkpoint at the same path intact
// and bit-identical, and the next Save to that path removes the killed one's
// temporary. The Save runs in a real child process (this test binary
// again, running only SaveKillChild.Save), killed by the fault-injection
// hook (DOPPIO_FAULT_INJECT, operators/load_save_op.h) or from here.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/workspace.h"
#include "tests/test_util.h"

extern char** environ;

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::DirectoryListing;
using testing::IntArg;
using testing::MakeOp;
using testing::ReadBytes;
using testing::StringArg;
using testing::TempDir;

constexpr const char* kChildVariable = "DOPPIO_KILL_TEST_CHILD";
// Two blobs of 3M floats: about 24 MB of records in 24 chunks.
constexpr int64_t kElements = 3000000;
constexpr int64_t kFaultBytes = 10000000;

// The value of element i of blob `blob` in the checkpoint numbered `seed`.
float Pattern(int seed, int blob, int64_t i) {
  return static_cast<float>(seed * 1000 + blob) + static_cast<float>(i % 4096) / 8.0f;
}

void FillAndSave(int seed, const std::string& db_type, const std::string& path) {
  Workspace ws;
  for (int blob = 0; blob < 2; ++blob) {
    Tensor* tensor = ws.CreateBlob("w" + std::to_string(blob))->GetMutableTensor();
    tensor->Resize({kElements});
    float* data = tensor->mutable_data<float>();
    for (int64_t i = 0; i < kElements; ++i) data[i] = Pattern(seed, blob, i);
  }
  ws.RunOperatorOnce(MakeOp("Save", {"w0", "w1"}, {},
                            {StringArg("db", path), StringArg("db_type", db_type),
                             IntArg("absolute_path", 1)}));
}

// Checks every element against Pattern(seed, ...); stops at the first miss.
void ExpectCheckpoint(int seed, const std::string& db_type, const std::string& path) {
  Workspace ws;
  ws.RunOperatorOnce(MakeOp("Load", {}, {"w0", "w1"},
                            {StringArg("db", path), StringArg("db_type", db_type),
                             IntArg("absolute_path", 1)}));
  for (int blob = 0; blob < 2; ++blob) {
    const Tensor& tensor = ws.GetBlob("w" + std::to_string(blob))->GetTensor();
    ASSERT_EQ(tensor.numel(), kElements);
    const float* data = tensor.data<float>();
    for (int64_t i = 0; i < kElements; ++i) {
      ASSERT_EQ(data[i], Pattern(seed, blob, i)) << "blob " << blob << " element " << i;
    }
  }
}

// The child's part: save checkpoint `seed`, under whatever fault the parent
// put in the environment. Skipped in a normal run.
TEST(SaveKillChild, Save) {
  const char* setting = std::getenv(kChildVariable);
  if (setting == nullptr) GTEST_SKIP() << "runs only as the child of SaveKillTest";
  const std::string text = setting;  // "SEED DB_TYPE PATH"
  const size_t first = text.find(' '), second = text.find(' ', first + 1);
  FillAndSave(std::stoi(text.substr(0, first)), text.substr(first + 1, second - first - 1),
              text.substr(second + 1));
}

// The checkpoint's bytes: the file, or every file of the LMDB directory but
// its lock file (which readers write).
std::string Snapshot(const std::string& path) {
  if (!fs::is_directory(path)) return ReadBytes(path);
  std::string all;
  for (const std::string& name : DirectoryListing(path)) {
    if (name != "lock.mdb") all += name + ":" + ReadBytes(path + "/" + name);
  }
  return all;
}

// Temporaries a Save left beside `path`.
std::vector<std::string> Leftovers(const std::string& path) {
  std::vector<std::string> found;
  const std::string prefix = fs::path(path).filename().string() + ".tmp-";
  for (const std::string& name : DirectoryListing(fs::path(path).parent_path().string())) {
    if (name.compare(0, prefix.size(), prefix) == 0) {
      found.push_back((fs::path(path).parent_path() / name).string());
    }
  }
  return found;
}

int64_t BytesOf(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    const int64_t size = static_cast<int64_t>(fs::file_size(path + "/data.mdb", error));
    return error ? 0 : size;
  }
  const int64_t size = static_cast<int64_t>(fs::file_size(path, error));
  return error ? 0 : size;
}

// Starts this binary as the child saving checkpoint `seed`, with `fault` as
// DOPPIO_FAULT_INJECT.
pid_t SpawnChild(int seed, const std::string& db_type, const std::string& path,
                 const std::string& fault) {
  // A child killed mid-test must not leave Bazel's premature-exit marker or
  // a half-written XML report behind as if it were the test.
  const auto inherited = [](const std::string& variable) {
    for (const char* name : {"TEST_PREMATURE_EXIT_FILE=", "XML_OUTPUT_FILE=", "GTEST_OUTPUT=",
                             "TEST_SHARD_STATUS_FILE=", "GTEST_SHARD_INDEX=",
                             "GTEST_TOTAL_SHARDS=", "DOPPIO_FAULT_INJECT="}) {
      if (variable.compare(0, std::strlen(name), name) == 0) return false;
    }
    return true;
  };
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (inherited(*entry)) variables.push_back(*entry);
  }
  variables.push_back(std::string(kChildVariable) + "=" + std::to_string(seed) + " " + db_type +
                      " " + path);
  variables.push_back("DOPPIO_FAULT_INJECT=" + fault);
  std::vector<char*> envp;
  for (std::string& variable : variables) envp.push_back(&variable[0]);
  envp.push_back(nullptr);
  std::string program = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=SaveKillChild.Save";
  char* argv[] = {&program[0], &filter[0], nullptr};
  pid_t pid = 0;
  const int status = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data());
  EXPECT_EQ(status, 0) << std::strerror(status);
  return status == 0 ? pid : -1;
}

void ExpectKilled(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited with status " << WEXITSTATUS(status)
                                   << " instead of being killed";
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

class SaveKillTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    db_type_ = GetParam();
    dir_ = TempDir("kill_" + db_type_ + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = dir_ + "/checkpoint";
    FillAndSave(1, db_type_, path_);
    before_ = Snapshot(path_);
    ASSERT_GT(before_.size(), static_cast<size_t>(2 * kElements * 4));
  }

  // The previous checkpoint survived, bit for bit, and still loads; a later
  // Save in this process replaces it as usual.
  void ExpectPreviousCheckpointIntact() {
    EXPECT_TRUE(Snapshot(path_) == before_) << "the checkpoint at " << path_ << " changed";
    ExpectCheckpoint(1, db_type_, path_);
    FillAndSave(3, db_type_, path_);
    ExpectCheckpoint(3, db_type_, path_);
    EXPECT_EQ(Leftovers(path_), std::vector<std::string>{})
        << "the next Save left the killed Save's temporary behind";
  }

  std::string db_type_, dir_, path_, before_;
};

TEST_P(SaveKillTest, KilledByTheHookMidWrite) {
  const pid_t child = SpawnChild(2, db_type_, path_, "save_after_bytes:" +
                                                         std::to_string(kFaultBytes));
  ASSERT_GT(child, 0);
  ExpectKilled(child);
  // It died mid-write: a partial temporary is left, larger than the fault
  // point and smaller than a whole checkpoint.
  const std::vector<std::string> leftovers = Leftovers(path_);
  ASSERT_EQ(leftovers.size(), 1u) << "expected the killed Save's temporary";
  EXPECT_GT(BytesOf(leftovers[0]), kFaultBytes);
  if (db_type_ == "minidb") EXPECT_LT(BytesOf(leftovers[0]), BytesOf(path_));
  ExpectPreviousCheckpointIntact();
}

TEST_P(SaveKillTest, KilledByTheHookJustBeforeTheRename) {
  const pid_t child = SpawnChild(2, db_type_, path_, "save_before_rename");
  ASSERT_GT(child, 0);
  ExpectKilled(child);
  // The whole new checkpoint was written and synced beside the target.
  const std::vector<std::string> leftovers = Leftovers(path_);
  ASSERT_EQ(leftovers.size(), 1u);
  ExpectCheckpoint(2, db_type_, leftovers[0]);
  ExpectPreviousCheckpointIntact();
}

TEST_P(SaveKillTest, KilledFromOutsideMidWrite) {
  const pid_t child = SpawnChild(2, db_type_, path_, "save_stall_after_bytes:" +
                                                         std::to_string(kFaultBytes));
  ASSERT_GT(child, 0);
  // Wait until the child's temporary holds more than the stall point.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool stalled = false;
  while (!stalled && std::chrono::steady_clock::now() < deadline) {
    for (const std::string& leftover : Leftovers(path_)) {
      if (BytesOf(leftover) > kFaultBytes) stalled = true;
    }
    if (!stalled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ExpectKilled(child);
  ASSERT_TRUE(stalled) << "the child never wrote past " << kFaultBytes << " bytes";
  ExpectPreviousCheckpointIntact();
}

INSTANTIATE_TEST_SUITE_P(MiniDBAndLMDB, SaveKillTest, ::testing::Values("minidb", "lmdb"));

// The PID of a process that has exited and been reaped.
pid_t DeadPid() {
  std::string program = "/bin/true";
  char* argv[] = {&program[0], nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, environ), 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(kill(pid, 0), -1);
  return pid;
}

TEST(StaleTemporariesTest, OnlyTemporariesOfDeadProcessesAreRemoved) {
  const std::string dir = TempDir("stale_temporaries");
  const std::string dead = std::to_string(DeadPid());
  const std::string live = std::to_string(getppid());
  const std::string self = std::to_string(getpid());
  const std::vector<std::string> removed = {
      "checkpoint.tmp-" + dead + "-12-0",      // a killed minidb Save
      "checkpoint.tmp-" + dead + "-34-1.old",  // a killed directory swap
  };
  fs::create_directory(dir + "/checkpoint.tmp-" + dead + "-56-2");  // a killed lmdb Save
  testing::WriteBytes(dir + "/checkpoint.tmp-" + dead + "-56-2/data.mdb", "x");
  const std::vector<std::string> kept = {
      "checkpoint",                              // no checkpoint yet: a stray file
      "checkpoint.tmp-" + live + "-12-0",        // a Save still running elsewhere
      "checkpoint.tmp-" + self + "-12-0",        // this process (another thread)
      "checkpoint.tmp-" + dead + "-notes",       // not a name Save makes
      "checkpoint.tmp-" + dead + "-1-2-3",
      "checkpoint.tmp-x" + dead + "-1-2",
      "checkpoint.tmp-" + dead + "-1-2.bak",
      "other.tmp-" + dead + "-12-0",             // another target's
      "checkpoint2.tmp-" + dead + "-12-0",
  };
  for (const std::string& name : removed) testing::WriteBytes(dir + "/" + name, "x");
  for (const std::string& name : kept) {
    if (name != "checkpoint") testing::WriteBytes(dir + "/" + name, "x");
  }
  Workspace ws;
  ws.CreateBlob("w")->GetMutableTensor()->Resize({2});
  ws.GetBlob("w")->GetMutableTensor()->mutable_data<float>()[0] = 1.5f;
  ws.GetBlob("w")->GetMutableTensor()->mutable_data<float>()[1] = -2.0f;
  ws.RunOperatorOnce(MakeOp("Save", {"w"}, {},
                            {StringArg("db", dir + "/checkpoint"), StringArg("db_type", "minidb"),
                             IntArg("absolute_path", 1)}));
  std::vector<std::string> expected = kept;
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> listing = DirectoryListing(dir);
  std::sort(listing.begin(), listing.end());
  EXPECT_EQ(listing, expected);
  Workspace loaded;
  loaded.RunOperatorOnce(MakeOp("Load", {}, {"w"},
                                {StringArg("db", dir + "/checkpoint"),
                                 StringArg("db_type", "minidb"), IntArg("absolute_path", 1)}));
  const float* data = loaded.GetBlob("w")->GetTensor().data<float>();
  EXPECT_EQ(data[0], 1.5f);
  EXPECT_EQ(data[1], -2.0f);
}

}  // namespace
}  // namespace doppio
