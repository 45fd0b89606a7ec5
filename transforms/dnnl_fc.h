// DnnlFC: every CPU FC / FCTransposed of an inference net that names no
// engine and fuses nothing gets engine "DNNL", so its GEMM runs on oneDNN's OpenMP pool, the
// one the Conv kernels use, instead of OpenBLAS's own threads beside it
// (two pools spinning on 2 cores cost far more than the GEMMs; see
// tools/bench/README.md, inference_bench). The result differs from
// OpenBLAS's by float rounding only; training nets keep OpenBLAS.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {
namespace transforms {

NetDef DnnlFC(const NetDef& net, int* rewritten = nullptr);

}  // namespace transforms
}  // namespace doppio
