#include "core/layout_advice.h"

#include <exception>
#include <map>
#include <mutex>

namespace doppio {

namespace {

struct Advisors {
  std::mutex mutex;
  std::map<std::string, LayoutAdvisor> by_type;
};

Advisors& Registry() {
  static Advisors* advisors = new Advisors();  // never destroyed: used at exit
  return *advisors;
}

}  // namespace

const char* ActivationLayoutName(ActivationLayout layout) {
  switch (layout) {
    case ActivationLayout::kNchw:
      return "NCHW";
    case ActivationLayout::kNhwc:
      return "NHWC";
    case ActivationLayout::kOther:
      return "other";
    case ActivationLayout::kNoPreference:
      break;
  }
  return "no preference";
}

bool RegisterLayoutAdvisor(const std::string& op_type, LayoutAdvisor advisor) {
  Advisors& advisors = Registry();
  std::lock_guard<std::mutex> lock(advisors.mutex);
  advisors.by_type[op_type] = std::move(advisor);
  return true;
}

ActivationLayout AdviseLayout(const OperatorDef& op, const std::vector<TensorShape>& input_shapes) {
  LayoutAdvisor advisor;
  {
    Advisors& advisors = Registry();
    std::lock_guard<std::mutex> lock(advisors.mutex);
    auto found = advisors.by_type.find(op.type());
    if (found == advisors.by_type.end()) return ActivationLayout::kNoPreference;
    advisor = found->second;
  }
  try {
    return advisor(op, input_shapes);
  } catch (const std::exception&) {
    // Advice is for speed only; the op reports a real problem when it runs.
    return ActivationLayout::kNoPreference;
  }
}

}  // namespace doppio
