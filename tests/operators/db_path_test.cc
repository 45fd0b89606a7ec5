// Db paths and the workspace's root folder (operators/db_path.h): relative
// paths resolve against the root, paths leaving it -- by "..", by an absolute
// path elsewhere or through a symbolic link -- are refused with an error
// naming the op, the path and the root unless absolute_path=1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/db.h"
#include "core/workspace.h"
#include "operators/db_path.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;
using testing::StringsArg;
using testing::TempDir;

void ExpectRefused(const std::string& error, const std::string& op, const std::string& path,
                   const std::string& root) {
  for (const std::string& part :
       {op + ": db path '" + path + "' leaves the root folder '" + root + "'",
        std::string("absolute_path=1")}) {
    EXPECT_NE(error.find(part), std::string::npos) << part << " in:\n" << error;
  }
}

// A root folder with a checkpoint in it and, beside it, an outside folder a
// symbolic link inside the root points to.
class RootFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = TempDir("roots");
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_ + "/sub");
    fs::create_directories(outside_);
    fs::create_directory_symlink(outside_, root_ + "/link_out");
    fs::create_directory_symlink(root_ + "/sub", root_ + "/link_in");
    ws_.SetRootFolder(root_);
    Tensor* x = ws_.CreateBlob("x")->GetMutableTensor();
    x->Resize({3});
    for (int i = 0; i < 3; ++i) x->mutable_data<float>()[i] = 0.5f * i;
  }

  OperatorDef Save(const std::string& path, int absolute_path = 0) {
    return MakeOp("Save", {"x"}, {},
                  {StringArg("db", path), StringArg("db_type", "minidb"),
                   IntArg("absolute_path", absolute_path)});
  }
  OperatorDef Load(const std::string& path, int absolute_path = 0) {
    return MakeOp("Load", {}, {"y"},
                  {StringArg("db", path), StringArg("db_type", "minidb"),
                   IntArg("absolute_path", absolute_path), StringsArg("source_blob_names", {"x"})});
  }
  float LoadedSecond() { return ws_.GetBlob("y")->GetTensor().data<float>()[1]; }

  Workspace ws_;
  std::string base_, root_, outside_;
};

TEST_F(RootFolderTest, RelativePathsResolveAgainstTheRoot) {
  ws_.RunOperatorOnce(Save("sub/ckpt"));
  EXPECT_TRUE(fs::is_regular_file(root_ + "/sub/ckpt"));
  ws_.RunOperatorOnce(Load("sub/ckpt"));
  EXPECT_EQ(LoadedSecond(), 0.5f);
  // ".." that stays inside, a link that stays inside, and an absolute path
  // inside the root are all fine.
  ws_.RunOperatorOnce(Load("sub/../sub/ckpt"));
  ws_.RunOperatorOnce(Load("link_in/ckpt"));
  ws_.RunOperatorOnce(Load(root_ + "/sub/ckpt"));

  ws_.RunOperatorOnce(MakeOp("DBExists", {}, {"exists"},
                             {StringArg("db_name", "sub/ckpt"), StringArg("db_type", "minidb")}));
  EXPECT_TRUE(ws_.GetBlob("exists")->GetTensor().data<bool>()[0]);
  ws_.RunOperatorOnce(MakeOp("CreateDB", {}, {"reader"},
                             {StringArg("db", "sub/ckpt"), StringArg("db_type", "minidb")}));
  EXPECT_EQ(ws_.GetBlob("reader")->Get<db::DBReader>().source(), root_ + "/sub/ckpt");
  ws_.RunOperatorOnce(MakeOp("Load", {}, {"dbs_loaded"},
                             {StringsArg("dbs", {"sub/ckpt"}), StringArg("db_type", "minidb"),
                              StringsArg("source_blob_names", {"x"})}));
  EXPECT_TRUE(ws_.GetBlob("dbs_loaded")->IsTensor());
}

TEST_F(RootFolderTest, PathsLeavingTheRootAreRefused) {
  struct Case {
    std::string path;
    const char* how;  // "" or " through a symbolic link"
  };
  const std::vector<Case> cases = {{"../outside/ckpt", ""},
                                   {"sub/../../outside/ckpt", ""},
                                   {outside_ + "/ckpt", ""},
                                   {"link_out/ckpt", " through a symbolic link"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    std::string error = ErrorOf([&] { ws_.RunOperatorOnce(Save(c.path)); });
    ExpectRefused(error, "Save", c.path, root_);
    EXPECT_NE(error.find(std::string("'") + c.how + " (it resolves to"), std::string::npos)
        << error;
    EXPECT_TRUE(fs::is_empty(outside_)) << "Save wrote outside the root";
    ExpectRefused(ErrorOf([&] { ws_.RunOperatorOnce(Load(c.path)); }), "Load", c.path, root_);
    ExpectRefused(ErrorOf([&] {
                    ws_.RunOperatorOnce(MakeOp(
                        "DBExists", {}, {"e"},
                        {StringArg("db_name", c.path), StringArg("db_type", "minidb")}));
                  }),
                  "DBExists", c.path, root_);
  }
  // The root itself is not a db.
  EXPECT_NE(ErrorOf([&] { ws_.RunOperatorOnce(Save("sub/..")); }).find("names the root folder"),
            std::string::npos);
}

TEST_F(RootFolderTest, AbsolutePathUsesThePathAsGiven) {
  ws_.RunOperatorOnce(Save(outside_ + "/ckpt", 1));
  EXPECT_TRUE(fs::is_regular_file(outside_ + "/ckpt"));
  ws_.RunOperatorOnce(Load(outside_ + "/ckpt", 1));
  EXPECT_EQ(LoadedSecond(), 0.5f);
  ws_.RunOperatorOnce(Save(root_ + "/link_out/ckpt2", 1));
  EXPECT_TRUE(fs::is_regular_file(outside_ + "/ckpt2"));
}

TEST_F(RootFolderTest, CreateDBOpensAbsolutePathsAnywhereButKeepsRelativeOnesInside) {
  ws_.RunOperatorOnce(Save(outside_ + "/data", 1));
  // Caffe2's CreateDB has no absolute_path: datasets live anywhere.
  ws_.RunOperatorOnce(
      MakeOp("CreateDB", {}, {"reader"},
             {StringArg("db", outside_ + "/data"), StringArg("db_type", "minidb")}));
  const std::string error = ErrorOf([&] {
    ws_.RunOperatorOnce(MakeOp("CreateDB", {}, {"reader2"},
                               {StringArg("db", "../outside/data"),
                                StringArg("db_type", "minidb")}));
  });
  ExpectRefused(error, "CreateDB", "../outside/data", root_);
  ws_.RunOperatorOnce(MakeOp("CreateDB", {}, {"reader3"},
                             {StringArg("db", root_ + "/../outside/data"),
                              StringArg("db_type", "minidb"), IntArg("absolute_path", 1)}));
}

TEST_F(RootFolderTest, ChildWorkspacesShareTheRootAndAMissingRootIsAnError) {
  Workspace child(&ws_);
  EXPECT_EQ(child.RootFolder(), root_);
  child.RunOperatorOnce(Save("sub/from_child"));
  EXPECT_TRUE(fs::is_regular_file(root_ + "/sub/from_child"));

  Workspace lost;
  lost.SetRootFolder(base_ + "/no_such_root");
  lost.CreateBlob("x")->GetMutableTensor()->Resize({0});
  lost.GetBlob("x")->GetMutableTensor()->mutable_data<float>();
  const std::string error = ErrorOf([&] { lost.RunOperatorOnce(Save("ckpt")); });
  EXPECT_NE(error.find("Save: the root folder '" + base_ + "/no_such_root'"), std::string::npos)
      << error;
  EXPECT_NE(ErrorOf([&] { lost.SetRootFolder(""); }).find("root folder cannot be empty"),
            std::string::npos);
}

TEST(DefaultRootTest, TheDefaultRootIsTheCurrentDirectory) {
  Workspace ws;
  EXPECT_EQ(ws.RootFolder(), ".");
  const std::string dir = TempDir("default_root");
  const fs::path previous = fs::current_path();
  fs::current_path(dir);
  EXPECT_EQ(ResolveDBPath("Save", "a/b", false, "."), "a/b");
  const std::string error = ErrorOf([&] { ResolveDBPath("Load", "../x", false, "."); });
  fs::current_path(previous);
  EXPECT_NE(error.find("Load: db path '../x' leaves the root folder '.'"), std::string::npos)
      << error;
  EXPECT_NE(error.find(fs::path(dir).parent_path().string() + "/x"), std::string::npos) << error;
  EXPECT_EQ(ResolveDBPath("Load", "../x", true, "."), "../x");
  EXPECT_EQ(ResolveDBPath("Load", "x", false, dir), dir + "/x");
}

}  // namespace
}  // namespace doppio
