// A symbolic link swapped in between the check of a db path and its use
// (operators/db_path.h): Load and Save open inside the directory they walked
// to without following links, so the swap makes them fail or land inside
// the root, never outside it. The deterministic tests swap between
// CheckDBPath and OpenDBLocation; the racing ones swap continuously from a
// second thread while the ops run.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/workspace.h"
#include "operators/db_path.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::DirectoryListing;
using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;
using testing::StringsArg;
using testing::TempDir;

class SwappedLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = TempDir("swapped_link");
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_ + "/sub");
    fs::create_directories(outside_);
    // The same name outside and a link to it beside the real folder, for
    // swapping in.
    fs::create_directory_symlink(outside_, root_ + "/sub_link");
    ws_.SetRootFolder(root_);
    SetX(0.5f);
  }

  void SetX(float second) {
    Tensor* x = ws_.CreateBlob("x")->GetMutableTensor();
    x->Resize({2});
    x->mutable_data<float>()[0] = 0.0f;
    x->mutable_data<float>()[1] = second;
  }

  OperatorDef Save(const std::string& path) {
    return MakeOp("Save", {"x"}, {}, {StringArg("db", path), StringArg("db_type", "minidb")});
  }
  OperatorDef Load(const std::string& path) {
    return MakeOp("Load", {}, {"y"},
                  {StringArg("db", path), StringArg("db_type", "minidb"),
                   StringsArg("source_blob_names", {"x"})});
  }

  // Swaps root/sub (a folder) and root/sub_link (a link to outside) in one
  // atomic step.
  void Swap() const {
    ASSERT_EQ(renameat2(AT_FDCWD, (root_ + "/sub").c_str(), AT_FDCWD,
                        (root_ + "/sub_link").c_str(), RENAME_EXCHANGE),
              0)
        << std::strerror(errno);
  }

  Workspace ws_;
  std::string base_, root_, outside_;
};

TEST_F(SwappedLinkTest, DirectorySwappedAfterTheCheckIsNotFollowed) {
  const CheckedDBPath checked = CheckDBPath("Save", "sub/ckpt", false, root_);
  ASSERT_TRUE(checked.confined);
  EXPECT_EQ(checked.components, (std::vector<std::string>{"sub", "ckpt"}));
  Swap();
  // What opening by name would now reach: the folder outside the root.
  EXPECT_TRUE(fs::equivalent(fs::path(checked.path).parent_path(), outside_));
  EXPECT_MESSAGE_HAS(ErrorOf([&] { OpenDBLocation("Save", checked); }), "Save: cannot open '",
                     root_ + "/sub' on the way to db '" + root_ + "/sub/ckpt'",
                     "symbolic link");
}

TEST_F(SwappedLinkTest, UnconfinedPathsFollowLinksAsInCaffe2) {
  const CheckedDBPath checked = CheckDBPath("Save", root_ + "/sub_link/ckpt", true, root_);
  EXPECT_FALSE(checked.confined);
  const DBLocation where = OpenDBLocation("Save", checked);
  EXPECT_EQ(where.name(), "ckpt");
  struct stat held, outside;
  ASSERT_EQ(fstat(where.directory(), &held), 0);
  ASSERT_EQ(stat(outside_.c_str(), &outside), 0);
  EXPECT_EQ(held.st_ino, outside.st_ino);
}

TEST_F(SwappedLinkTest, DirectoryUnchangedCheckSeesASwap) {
  const CheckedDBPath checked = CheckDBPath("Load", "sub/data", false, root_);
  const DBLocation where = OpenDBLocation("Load", checked);
  EXPECT_EQ(ErrorIfAny([&] { where.EnforceDirectoryUnchanged("Load", checked.path); }), "");
  Swap();
  EXPECT_MESSAGE_HAS(ErrorOf([&] { where.EnforceDirectoryUnchanged("Load", checked.path); }),
                     "Load", "changed after its path was checked");
}

TEST_F(SwappedLinkTest, ConfinedLMDBSavesReplaceAndLoadInsideTheWalkedDirectory) {
  const auto lmdb = [](OperatorDef op) {
    for (Argument& arg : *op.mutable_arg()) {
      if (arg.name() == "db_type") arg.set_s("lmdb");
    }
    return op;
  };
  ws_.RunOperatorOnce(lmdb(Save("sub/ckpt_lmdb")));
  SetX(7.0f);
  // The second Save replaces a non-empty directory: an exchange inside the
  // held directory, then the old one removed there.
  ws_.RunOperatorOnce(lmdb(Save("sub/ckpt_lmdb")));
  ws_.RunOperatorOnce(lmdb(Load("sub/ckpt_lmdb")));
  EXPECT_EQ(ws_.GetBlob("y")->GetTensor().data<float>()[1], 7.0f);
  EXPECT_EQ(DirectoryListing(root_ + "/sub"), std::vector<std::string>{"ckpt_lmdb"});
  EXPECT_EQ(DirectoryListing(outside_), std::vector<std::string>{});
}

// Runs `attempt` over and over for about a second while another thread keeps
// swapping root/sub and root/sub_link; returns how many attempts succeeded.
template <typename Attempt>
int RaceSwaps(const std::string& root, Attempt attempt) {
  std::atomic<bool> done{false};
  std::thread swapper([&] {
    while (!done.load()) {
      renameat2(AT_FDCWD, (root + "/sub").c_str(), AT_FDCWD, (root + "/sub_link").c_str(),
                RENAME_EXCHANGE);
    }
  });
  int succeeded = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int attempts = 0;
  while (std::chrono::steady_clock::now() < deadline || attempts < 50) {
    ++attempts;
    if (attempt()) ++succeeded;
  }
  done = true;
  swapper.join();
  return succeeded;
}

TEST_F(SwappedLinkTest, SavesRacingASwapNeverWriteOutsideTheRoot) {
  const int saved = RaceSwaps(root_, [&] {
    return ErrorIfAny([&] { ws_.RunOperatorOnce(Save("sub/ckpt")); }).empty();
  });
  EXPECT_EQ(DirectoryListing(outside_), std::vector<std::string>{})
      << "a Save wrote outside the root folder";
  // Which of the two names is the folder now does not matter: every
  // checkpoint that was written is inside the root.
  RecordProperty("saves_succeeded", saved);
}

TEST_F(SwappedLinkTest, LoadsRacingASwapNeverReadOutsideTheRoot) {
  ws_.RunOperatorOnce(Save("sub/ckpt"));
  // A checkpoint with other values at the same name outside the root.
  ws_.RunOperatorOnce(MakeOp("Save", {"x"}, {},
                             {StringArg("db", outside_ + "/ckpt"), StringArg("db_type", "minidb"),
                              IntArg("absolute_path", 1)}));
  SetX(99.0f);
  ws_.RunOperatorOnce(MakeOp("Save", {"x"}, {},
                             {StringArg("db", outside_ + "/ckpt"), StringArg("db_type", "minidb"),
                              IntArg("absolute_path", 1)}));
  int outside_reads = 0;
  RaceSwaps(root_, [&] {
    if (!ErrorIfAny([&] { ws_.RunOperatorOnce(Load("sub/ckpt")); }).empty()) return false;
    if (ws_.GetBlob("y")->GetTensor().data<float>()[1] != 0.5f) ++outside_reads;
    return true;
  });
  EXPECT_EQ(outside_reads, 0) << "a Load read the checkpoint outside the root folder";
}

}  // namespace
}  // namespace doppio
