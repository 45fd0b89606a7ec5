// FTRL-Proximal (McMahan et al. 2013) as Caffe2's ftrl_op:
//   Ftrl(var, n_z, grad[, alpha]) -> (var, n_z)
//   SparseFtrl(var, n_z, indices, grad[, alpha]) -> (var, n_z), in place,
//       on the rows `indices` of var (grad holds one row per index).
// n_z holds, for every element of var, its squared-gradient sum n and its
// accumulated z, interleaved (var's shape + [2]). Per element:
//   n' = n + g^2;  sigma = (sqrt(n') - sqrt(n)) / alpha;  z' = z + g - sigma w
//   w' = (lambda1 sign(z') - z') / ((beta + sqrt(n')) / alpha + lambda2)
//        if |z'| > lambda1, else 0.
// Arguments alpha (default 0.005; an `alpha` input overrides it), beta (1),
// lambda1 (0.001), lambda2 (0.001), as in Caffe2.
#pragma once

#include "core/operator.h"

namespace doppio {

struct FtrlArgs {
  double alpha = 0.005;
  double beta = 1.0;
  double lambda1 = 0.001;
  double lambda2 = 0.001;
};

// Ftrl and SparseFtrl (kSparse).
template <bool kSparse>
class FtrlOp final : public Operator<CPUContext> {
 public:
  FtrlOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  static constexpr int kGradInput = kSparse ? 3 : 2;
  static constexpr int kAlphaInput = kSparse ? 4 : 3;
  FtrlArgs args_;
};

}  // namespace doppio
