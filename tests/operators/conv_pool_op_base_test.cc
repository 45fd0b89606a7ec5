// The shared conv/pool argument handling and im2col, against values worked
// out by hand from Caffe2's formulas.
#include <gtest/gtest.h>

#include <vector>

#include "operators/conv_pool_op_base.h"
#include "operators/im2col.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringArg;

struct SizeCase {
  int64_t in, stride, kernel, dilation;
  LegacyPadding legacy;
  int64_t pad_head, pad_tail;                       // given
  int64_t want_out, want_head, want_tail;           // expected
};

TEST(ConvPoolOpBaseTest, ComputeSizeAndPad) {
  const std::vector<SizeCase> cases = {
      // floor((7 + 1 + 2 - 3) / 2) + 1 = 4
      {7, 2, 3, 1, LegacyPadding::kNotSet, 1, 2, 4, 1, 2},
      // dilated kernel 5: floor((9 - 5) / 1) + 1 = 5
      {9, 1, 3, 2, LegacyPadding::kNotSet, 0, 0, 5, 0, 0},
      // VALID drops pads: floor((6 - 3) / 2) + 1 = 2
      {6, 2, 3, 1, LegacyPadding::kValid, 0, 0, 2, 0, 0},
      // SAME, stride 2: target 3, needed (3 - 1) * 2 + 3 - 6 = 1 -> head 0, tail 1
      {6, 2, 3, 1, LegacyPadding::kSame, 0, 0, 3, 0, 1},
      // SAME, stride 1, kernel 4: needed 3 -> head 1, tail 2
      {5, 1, 4, 1, LegacyPadding::kSame, 0, 0, 5, 1, 2},
      // Caffe pooling rounds up: ceil((5 - 2) / 2) + 1 = 3, tail grows by 2
      {5, 2, 2, 1, LegacyPadding::kCaffeLegacyPooling, 0, 0, 3, 0, 2},
      // with pad 1: ceil((6 + 2 - 3) / 2) + 1 = 4; standard 3 -> tail 1 + 2 = 3
      {6, 2, 3, 1, LegacyPadding::kCaffeLegacyPooling, 1, 1, 4, 1, 3},
      // ceil((4 + 4 - 3) / 3) + 1 = 3, but window 3 would start at 6, in the
      // tail padding: 2 windows, as the standard size
      {4, 3, 3, 1, LegacyPadding::kCaffeLegacyPooling, 2, 2, 2, 2, 2},
  };
  for (const SizeCase& c : cases) {
    int64_t head = c.pad_head, tail = c.pad_tail, out = -1;
    ComputeSizeAndPad(c.in, c.stride, c.kernel, c.dilation, c.legacy, "Test", &head, &tail,
                      &out);
    EXPECT_EQ(out, c.want_out) << "in " << c.in << " kernel " << c.kernel;
    EXPECT_EQ(head, c.want_head) << "in " << c.in << " kernel " << c.kernel;
    EXPECT_EQ(tail, c.want_tail) << "in " << c.in << " kernel " << c.kernel;
  }
  int64_t head = 0, tail = 0, out = 0;
  EXPECT_THROW(ComputeSizeAndPad(2, 1, 3, 1, LegacyPadding::kNotSet, "Test", &head, &tail, &out),
               Error);
}

TEST(ConvPoolOpBaseTest, ArgumentSpellings) {
  // 2-D per-side pads: [t, l, b, r] = [begin per axis..., end per axis...]
  const ConvPoolArgs hw(MakeOp("Conv", {"X", "w"}, {"Y"},
                               {IntArg("kernel_h", 3), IntArg("kernel_w", 2),
                                IntArg("pad_t", 1), IntArg("pad_l", 0), IntArg("pad_b", 2),
                                IntArg("pad_r", 1), IntArg("stride_h", 2),
                                IntArg("stride_w", 1)}));
  const ConvPoolGeometry g = hw.Resolve({2, 3, 8, 5}, "X");
  EXPECT_EQ(g.kernel, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(g.pads, (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(g.output, (std::vector<int64_t>{5, 5}));  // (8+3-3)/2+1, (5+1-2)/1+1
  EXPECT_EQ(g.OutputDims(7), (std::vector<int64_t>{2, 7, 5, 5}));

  // A scalar applies to every axis of a 3-D NHWC input.
  const ConvPoolArgs scalar(MakeOp("MaxPool", {"X"}, {"Y"},
                                   {IntArg("kernel", 2), IntArg("stride", 2),
                                    StringArg("order", "NHWC")}));
  const ConvPoolGeometry g3 = scalar.Resolve({1, 4, 6, 8, 3}, "X");
  EXPECT_EQ(g3.channels, 3);
  EXPECT_EQ(g3.output, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(g3.OutputDims(3), (std::vector<int64_t>{1, 2, 3, 4, 3}));

  // Global pooling covers the whole image.
  const ConvPoolArgs global(MakeOp("AveragePool", {"X"}, {"Y"}, {IntArg("global_pooling", 1)}));
  const ConvPoolGeometry gg = global.Resolve({2, 3, 5}, "X");
  EXPECT_EQ(gg.kernel, (std::vector<int64_t>{5}));
  EXPECT_EQ(gg.output, (std::vector<int64_t>{1}));

  // Conflicts and bad lengths are errors naming the op / blob.
  EXPECT_THROW(ConvPoolArgs(MakeOp("Conv", {}, {}, {IntArg("kernel", 2),
                                                    IntsArg("kernels", {2, 2})})),
               Error);
  EXPECT_THROW(ConvPoolArgs(MakeOp("Conv", {}, {}, {IntArg("kernel_h", 2)})), Error);
  EXPECT_THROW(ConvPoolArgs(MakeOp("Conv", {}, {}, {IntArg("stride", 0)})), Error);
  const ConvPoolArgs three(MakeOp("Conv", {}, {}, {IntsArg("kernels", {2, 2, 2})}));
  try {
    three.Resolve({1, 1, 4, 4}, "data");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'data'"), std::string::npos) << error.what();
  }
  const ConvPoolArgs missing(MakeOp("MaxPool", {}, {}, {}));
  EXPECT_THROW(missing.Resolve({1, 1, 4, 4}, "X"), Error);
}

TEST(Im2ColTest, RoundTripCountsWindowCoverage) {
  // col2im(im2col(ones)) counts how many windows cover each pixel; for a
  // 1-D image of 5, kernel 3, stride 2, pads 1/1: windows start at -1, 1, 3.
  for (StorageOrder order : {StorageOrder::kNCHW, StorageOrder::kNHWC}) {
    Im2ColShape s;
    s.image = {5};
    s.output = {3};
    s.kernel = {3};
    s.stride = {2};
    s.dilation = {1};
    s.pad_begin = {1};
    s.channels = 1;
    s.pixel_stride = 1;
    const std::vector<double> image(5, 1.0);
    std::vector<double> col(9, -1.0);
    Im2ColNd(order, s, image.data(), col.data());
    // Window at -1 reads [pad, x0, x1]: its first entry is zero.
    EXPECT_EQ(col[0], 0.0);
    std::vector<double> back(5, 0.0);
    Col2ImNdAdd(order, s, col.data(), back.data());
    EXPECT_EQ(back, (std::vector<double>{1, 2, 1, 2, 1}));
  }
}

}  // namespace
}  // namespace doppio
