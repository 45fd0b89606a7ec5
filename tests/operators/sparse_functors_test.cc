// The host instantiations of sparse_functors.h, which the CUDA kernels of
// the sparse ops run too, against references written out here.
#include "operators/sparse_functors.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace doppio {
namespace {

TEST(SparseFunctors, AdagradStepFollowsCaffe2Formula) {
  double moment = 0, effective_lr = 0;
  const double update = functors::AdagradStep{1e-3, 0.5}(2.0, 3.0, -0.1, &moment, &effective_lr);
  // moment' = 0.5 * 3 + 2^2 = 5.5; rate = -0.1 / (sqrt(5.5) + 1e-3).
  EXPECT_DOUBLE_EQ(moment, 5.5);
  EXPECT_DOUBLE_EQ(effective_lr, -0.1 / (2.345207879911715 + 1e-3));
  EXPECT_DOUBLE_EQ(update, 2.0 * -0.1 / (2.345207879911715 + 1e-3));
}

TEST(SparseFunctors, MomentumColumnAppliesRepeatedIndicesInOrder) {
  // Two rows of width 2; indices 1, 0, 1: row 1 is stepped twice.
  const std::vector<int64_t> index = {1, 0, 1};
  const std::vector<float> grad = {1, 2, 3, 4, 5, 6};
  std::vector<float> moment = {0.5f, 0.25f, 1, 2};
  std::vector<float> param = {10, 20, 30, 40};
  std::vector<float> steps(6);
  const functors::SparseMomentumSgdElement element{0.9, false};
  for (int64_t column = 0; column < 2; ++column) {
    functors::SparseUpdateColumn(element, column, 3, 2, 2, index.data(), grad.data(), 0.1,
                                 moment.data(), param.data(), steps.data());
  }
  // m' = lr*g + mu*m, param -= m', written out per visit.
  // row 1 col 0: m = 0.1*1 + 0.9*1 = 1.0, then 0.1*5 + 0.9*1.0 = 1.4
  // row 1 col 1: m = 0.1*2 + 0.9*2 = 2.0, then 0.1*6 + 0.9*2.0 = 2.4
  // row 0 col 0: m = 0.1*3 + 0.9*0.5 = 0.75; col 1: 0.1*4 + 0.9*0.25 = 0.625
  const std::vector<float> expected_steps = {1.0f, 2.0f, 0.75f, 0.625f, 1.4f, 2.4f};
  const std::vector<float> expected_moment = {0.75f, 0.625f, 1.4f, 2.4f};
  const std::vector<float> expected_param = {9.25f, 19.375f, 27.6f, 35.6f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(steps[i], expected_steps[i], 1e-6) << i;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(moment[i], expected_moment[i], 1e-6) << i;
    EXPECT_NEAR(param[i], expected_param[i], 1e-5) << i;
  }
}

TEST(SparseFunctors, NesterovElement) {
  float moment = 2, param = 1;
  const float step = functors::SparseMomentumSgdElement{0.5, true}(4.0f, 0.25, &moment, &param);
  // m' = 0.5*2 + 0.25*4 = 2; step = 1.5*2 - 0.5*2 = 2.
  EXPECT_FLOAT_EQ(moment, 2.0f);
  EXPECT_FLOAT_EQ(step, 2.0f);
  EXPECT_FLOAT_EQ(param, -1.0f);
}

TEST(SparseFunctors, AdagradColumnAccumulatesRepeatedRows) {
  const std::vector<int32_t> index = {0, 0};
  const std::vector<double> grad = {3, 4};
  std::vector<double> moment = {0};
  std::vector<double> param = {1};
  functors::SparseUpdateColumn(functors::SparseAdagradElement{0.0}, 0, 2, 1, 1, index.data(),
                               grad.data(), -1.0, moment.data(), param.data(),
                               static_cast<double*>(nullptr));
  // moment 9 then 25; param 1 - 3/3 - 4/5.
  EXPECT_DOUBLE_EQ(moment[0], 25.0);
  EXPECT_DOUBLE_EQ(param[0], 1.0 - 1.0 - 0.8);
}

TEST(SparseFunctors, OutOfRangeRowsAreSkippedNotWritten) {
  const std::vector<int64_t> index = {-1, 2};
  const std::vector<float> grad = {1, 1};
  std::vector<float> moment = {0, 0};
  std::vector<float> param = {5, 6};
  std::vector<float> steps = {0, 0};
  functors::SparseUpdateColumn(functors::SparseMomentumSgdElement{0, false}, 0, 2, 1, 2,
                               index.data(), grad.data(), 1.0, moment.data(), param.data(),
                               steps.data());
  EXPECT_EQ(param, (std::vector<float>{5, 6}));
  EXPECT_TRUE(std::isnan(steps[0]) && std::isnan(steps[1]));
}

TEST(SparseFunctors, GatherSource) {
  const std::vector<int32_t> index = {2, 0, 3};
  // Rows of 4 elements, 3 rows: element 5 is row index[1] = 0, column 1.
  EXPECT_EQ(functors::GatherSource(5, 4, 3, index.data()), 1);
  EXPECT_EQ(functors::GatherSource(3, 4, 3, index.data()), 2 * 4 + 3);
  EXPECT_EQ(functors::GatherSource(8, 4, 3, index.data()), -1);
}

}  // namespace
}  // namespace doppio
