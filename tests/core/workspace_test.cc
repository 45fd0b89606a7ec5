// Workspaces (parents, blob lifetime, concurrency) and SimpleNet (order,
// device options, error context, wiring checks), with test-only ops.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/net.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;

// Y = X + 1 (int64), failing when the `fail_on` argument equals X[0].
class TestIncrementOp final : public Operator<CPUContext> {
 public:
  TestIncrementOp(const OperatorDef& def, Workspace* ws)
      : Operator<CPUContext>(def, ws),
        fail_on_(GetSingleArgument<int64_t>("fail_on", -1)) {}
  void RunOnDevice() override {
    const Tensor& x = Input(0);
    DOPPIO_ENFORCE_EQ(x.numel(), 1, "X must hold one value, got ", x.dims());
    const int64_t value = x.data<int64_t>()[0];
    DOPPIO_ENFORCE_NE(value, fail_on_, "asked to fail");
    Tensor* y = Output(0);
    y->Resize({1});
    y->mutable_data<int64_t>()[0] = value + 1;
  }

 private:
  int64_t fail_on_;
};
OPERATOR_SCHEMA(DoppioTestIncrement).NumInputs(1).NumOutputs(1).AllowInplace({{0, 0}});
REGISTER_CPU_OPERATOR(DoppioTestIncrement, TestIncrementOp);

// Records the seed its context saw: proves the net's device option reached it.
class TestSeedOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override {
    Tensor* y = Output(0);
    y->Resize({1});
    y->mutable_data<int64_t>()[0] = def().device_option().random_seed();
  }
};
OPERATOR_SCHEMA(DoppioTestSeed).NumInputs(0).NumOutputs(1);
REGISTER_CPU_OPERATOR(DoppioTestSeed, TestSeedOp);

void SetInt64(Workspace* ws, const std::string& name, int64_t value) {
  Tensor* t = ws->CreateBlob(name)->GetMutableTensor();
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = value;
}

int64_t GetInt64(Workspace* ws, const std::string& name) {
  return ws->GetBlob(name)->GetTensor().data<int64_t>()[0];
}

NetDef ChainNet(const std::string& name, int length) {
  NetDef net;
  net.set_name(name);
  std::string previous = "x";
  for (int i = 0; i < length; ++i) {
    OperatorDef* op = net.add_op();
    op->set_type("DoppioTestIncrement");
    op->set_name("inc" + std::to_string(i));
    op->add_input(previous);
    previous = "h" + std::to_string(i);
    op->add_output(previous);
  }
  return net;
}

TEST(WorkspaceTest, ParentBlobsAreVisibleAndChildBlobsStayLocal) {
  Workspace parent;
  SetInt64(&parent, "shared", 5);
  Workspace child(&parent);
  EXPECT_TRUE(child.HasBlob("shared"));
  EXPECT_EQ(child.CreateBlob("shared"), parent.GetBlob("shared"));
  child.CreateBlob("local");
  EXPECT_FALSE(parent.HasBlob("local"));
  EXPECT_EQ(child.Blobs(), (std::vector<std::string>{"local", "shared"}));
  EXPECT_EQ(child.LocalBlobs(), (std::vector<std::string>{"local"}));
  EXPECT_TRUE(child.RemoveBlob("local"));
  EXPECT_FALSE(child.RemoveBlob("shared"));  // not the child's to remove
}

TEST(WorkspaceTest, ScopedWorkspaceSeesOnlyItsBoundBlobsUnderInnerNames) {
  Workspace outer;
  SetInt64(&outer, "outer_x", 3);
  SetInt64(&outer, "hidden", 4);
  Workspace scoped(&outer, {{"x", "outer_x"}});
  EXPECT_EQ(scoped.GetBlob("x"), outer.GetBlob("outer_x"));
  EXPECT_EQ(scoped.CreateBlob("x"), outer.GetBlob("outer_x"));
  EXPECT_FALSE(scoped.HasBlob("hidden"));
  EXPECT_FALSE(scoped.HasBlob("outer_x"));
  // Writes through the inner name land in the outer blob; new blobs stay in.
  SetInt64(&scoped, "x", 7);
  EXPECT_EQ(GetInt64(&outer, "outer_x"), 7);
  scoped.CreateBlob("local");
  EXPECT_FALSE(outer.HasBlob("local"));
  EXPECT_EQ(scoped.Blobs(), (std::vector<std::string>{"local", "x"}));
}

TEST(WorkspaceTest, BlobMappingRefusesRebindingAndMissingOuterBlobs) {
  Workspace outer;
  SetInt64(&outer, "a", 1);
  SetInt64(&outer, "b", 2);
  Workspace scoped(&outer, {{"x", "a"}});
  scoped.AddBlobMapping(&outer, {{"x", "a"}});  // the same binding again
  EXPECT_NE(ErrorOf([&] {
              scoped.AddBlobMapping(&outer, {{"x", "b"}});
            }).find("bound to 'a'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              scoped.AddBlobMapping(&outer, {{"y", "missing"}});
            }).find("'missing': it does not exist"),
            std::string::npos);
  scoped.CreateBlob("local");
  EXPECT_NE(ErrorOf([&] {
              scoped.AddBlobMapping(&outer, {{"local", "b"}});
            }).find("has a blob of that name"),
            std::string::npos);
  scoped.AddBlobMapping(&outer, {{"local", "b"}}, /*skip_defined=*/true);
  EXPECT_NE(scoped.GetBlob("local"), outer.GetBlob("b"));  // the local blob stays
}

TEST(WorkspaceTest, CopyForwardedTensorsKeepsTheValueOfTheRun) {
  Workspace outer;
  SetInt64(&outer, "counter", 1);
  Workspace scoped(&outer, {{"c", "counter"}});
  scoped.CopyForwardedTensors({"c", "not_bound"},
                              [](const Tensor& from, Tensor* to) { to->CopyFrom(from); });
  SetInt64(&outer, "counter", 2);
  EXPECT_EQ(GetInt64(&scoped, "c"), 1);
  EXPECT_NE(scoped.GetBlob("c"), outer.GetBlob("counter"));
  EXPECT_EQ(scoped.LocalBlobs(), (std::vector<std::string>{"c"}));
}

TEST(WorkspaceTest, ConcurrentBlobCreationGivesOneBlobPerName) {
  Workspace ws;
  std::vector<std::thread> threads;
  std::vector<Blob*> seen(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) ws.CreateBlob("b" + std::to_string(i));
      seen[t] = ws.CreateBlob("b0");
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ws.Blobs().size(), 200u);
  for (Blob* blob : seen) EXPECT_EQ(blob, seen[0]);
}

TEST(NetTest, SimpleNetRunsInOrderAndReruns) {
  Workspace ws;
  SetInt64(&ws, "x", 10);
  ws.CreateNet(ChainNet("chain", 4));
  ws.RunNet("chain");
  EXPECT_EQ(GetInt64(&ws, "h3"), 14);
  SetInt64(&ws, "x", 0);
  ws.RunNet("chain");
  EXPECT_EQ(GetInt64(&ws, "h3"), 4);
  EXPECT_EQ(ws.Nets(), (std::vector<std::string>{"chain"}));
  EXPECT_THROW(ws.CreateNet(ChainNet("chain", 1)), Error);
  ws.CreateNet(ChainNet("chain", 1), /*overwrite=*/true);
  EXPECT_TRUE(ws.DeleteNet("chain"));
  EXPECT_THROW(ws.RunNet("chain"), Error);
}

TEST(NetTest, RunErrorNamesOpBlobsAndNetAndNetStaysUsable) {
  Workspace ws;
  SetInt64(&ws, "x", 1);
  NetDef net = ChainNet("train", 3);
  Argument* fail = net.mutable_op(2)->add_arg();
  fail->set_name("fail_on");
  fail->set_i(3);
  ws.CreateNet(net);
  const std::string message = ErrorOf([&] { ws.RunNet("train"); });
  EXPECT_NE(message.find("asked to fail"), std::string::npos) << message;
  EXPECT_NE(message.find("op #2 DoppioTestIncrement 'inc2'"), std::string::npos) << message;
  EXPECT_NE(message.find("inputs [h1]"), std::string::npos) << message;
  EXPECT_NE(message.find("net 'train'"), std::string::npos) << message;
  SetInt64(&ws, "x", 5);
  ws.RunNet("train");
  EXPECT_EQ(GetInt64(&ws, "h2"), 8);
}

TEST(NetTest, DeclaredExternalInputsCatchMiswiring) {
  Workspace ws;
  SetInt64(&ws, "x", 1);
  NetDef net = ChainNet("wired", 2);
  net.add_external_input("x");
  ws.CreateNet(net);  // fine
  net.mutable_op(1)->set_input(0, "typo");
  const std::string message = ErrorOf([&] { ws.CreateNet(net, true); });
  EXPECT_NE(message.find("input 'typo'"), std::string::npos) << message;
}

TEST(NetTest, CreationErrorNamesTheOp) {
  Workspace ws;
  NetDef net = ChainNet("broken", 1);  // "x" was never fed
  const std::string message = ErrorOf([&] { ws.CreateNet(net); });
  EXPECT_NE(message.find("input blob 'x' does not exist"), std::string::npos) << message;
  EXPECT_NE(message.find("while creating op #0"), std::string::npos) << message;
}

TEST(NetTest, NetDeviceOptionReachesOpsWithoutOne) {
  Workspace ws;
  NetDef net;
  net.set_name("seeded");
  net.mutable_device_option()->set_random_seed(1234);
  net.add_op()->set_type("DoppioTestSeed");
  net.mutable_op(0)->add_output("a");
  OperatorDef* own = net.add_op();
  own->set_type("DoppioTestSeed");
  own->add_output("b");
  own->mutable_device_option()->set_random_seed(99);
  ws.RunNetOnce(net);
  EXPECT_EQ(GetInt64(&ws, "a"), 1234);
  EXPECT_EQ(GetInt64(&ws, "b"), 99);
}

TEST(NetTest, UnknownExecutorTypeIsNamed) {
  Workspace ws;
  NetDef net;
  net.set_name("n");
  net.set_type("warp_drive");
  const std::string message = ErrorOf([&] { ws.CreateNet(net); });
  EXPECT_NE(message.find("'warp_drive'"), std::string::npos) << message;
  EXPECT_NE(message.find("simple"), std::string::npos) << message;
}

TEST(NetTest, ObserverSeesEveryOp) {
  Workspace ws;
  SetInt64(&ws, "x", 0);
  NetBase* net = ws.CreateNet(ChainNet("observed", 3));
  std::vector<int> seen;
  net->SetOpObserver([&](int index, const OperatorBase& op, double seconds) {
    seen.push_back(index);
    EXPECT_EQ(op.type(), "DoppioTestIncrement");
    EXPECT_GE(seconds, 0.0);
  });
  ws.RunNet("observed");
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

TEST(NetTest, ConcurrentRunsOfDifferentNets) {
  Workspace ws;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    const std::string prefix = "t" + std::to_string(t) + "_";
    SetInt64(&ws, prefix + "x", t);
    NetDef net = ChainNet(prefix + "net", 3);
    for (auto& op : *net.mutable_op()) {
      op.set_input(0, prefix + op.input(0));
      op.set_output(0, prefix + op.output(0));
    }
    ws.CreateNet(net);
  }
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string prefix = "t" + std::to_string(t) + "_";
      for (int i = 0; i < 100; ++i) {
        try {
          ws.RunNet(prefix + "net");
        } catch (...) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(GetInt64(&ws, "t" + std::to_string(t) + "_h2"), t + 3);
  }
}

}  // namespace
}  // namespace doppio
