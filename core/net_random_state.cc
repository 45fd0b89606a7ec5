// Saving and restoring a net's random generators (core/net.h).
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/net.h"
#include "core/random_state.h"

namespace doppio {

std::vector<std::string> NetRandomStates(const NetBase& net) {
  std::vector<std::string> states;
  for (const auto& op : net.operators()) states.push_back(op->RandomState());
  return states;
}

void SetNetRandomStates(NetBase* net, const std::vector<std::string>& states) {
  const auto& ops = net->operators();
  DOPPIO_ENFORCE(states.size() == ops.size(), "net '", net->name(), "' has ", ops.size(),
                 " ops but the random states are of ", states.size(),
                 " (saved from another net?)");
  // Every state is checked before any op changes.
  for (size_t i = 0; i < states.size(); ++i) {
    std::unique_ptr<std::mt19937> check;
    try {
      SetGeneratorState(states[i], &check);
    } catch (Error& error) {
      error.AppendContext(MakeString("for op ", i, " (", ops[i]->DisplayName(), ") of net '",
                                     net->name(), "'"));
      throw;
    }
  }
  for (size_t i = 0; i < states.size(); ++i) ops[i]->SetRandomState(states[i]);
}

}  // namespace doppio
