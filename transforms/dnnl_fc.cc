#include "transforms/dnnl_fc.h"

#include "transforms/net_graph.h"

namespace doppio {
namespace transforms {

NetDef DnnlFC(const NetDef& input_net, int* rewritten) {
  NetDef net = input_net;
  int count = 0;
  for (OperatorDef& op : *net.mutable_op()) {
    // Fused ones (fusion_type 1) are on oneDNN already.
    if ((op.type() == "FC" || op.type() == "FCTransposed") && op.engine().empty() &&
        IntArg(op, "fusion_type", 0) == 0 && RunsOnCpu(net, op)) {
      op.set_engine("DNNL");
      ++count;
    }
  }
  if (rewritten != nullptr) *rewritten = count;
  return net;
}

}  // namespace transforms
}  // namespace doppio
