#include "operators/learning_rate_op.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/optimizer_utils.h"

namespace doppio {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Reads a policy's arguments with its prefix and names the op in errors.
class PolicyArgs {
 public:
  PolicyArgs(const OperatorBase& op, const std::string& policy, const std::string& prefix)
      : op_(op), policy_(policy), prefix_(prefix) {}

  double Float(const std::string& name, float default_value) const {
    return op_.GetSingleArgument<float>(prefix_ + name, default_value);
  }
  int64_t Int(const std::string& name, int64_t default_value) const {
    return op_.GetSingleArgument<int64_t>(prefix_ + name, default_value);
  }
  bool Bool(const std::string& name, bool default_value) const {
    return op_.GetSingleArgument<bool>(prefix_ + name, default_value);
  }
  std::vector<int64_t> Ints(const std::string& name) const {
    return op_.GetRepeatedArgument<int64_t>(prefix_ + name);
  }
  // Throws unless `ok`, naming the argument and the policy that needs it.
  template <typename V>
  void Require(bool ok, const std::string& name, const V& value, const char* rule) const {
    DOPPIO_ENFORCE(ok, "policy '", policy_, "' needs ", prefix_, name, " ", rule, ", got ", value);
  }

 private:
  const OperatorBase& op_;
  const std::string& policy_;
  const std::string& prefix_;
};

double LinearWarmup(int64_t iter, double start_multiplier, int64_t num_iter) {
  if (iter >= num_iter) return 1.0;
  return start_multiplier +
         (1.0 - start_multiplier) * static_cast<double>(iter) / static_cast<double>(num_iter);
}

double Inv(int64_t iter, double gamma, double power) {
  return std::pow(1.0 + gamma * static_cast<double>(iter), -power);
}

// SGDR (https://arxiv.org/abs/1608.03983): restarts every period, the period
// growing by t_mult and both bounds shrinking by lr_shrink at each restart.
double Cosine(int64_t iter, double min_lr, double max_lr, int64_t period, double t_mult,
              double lr_shrink) {
  const double t = static_cast<double>(iter);
  const double p = static_cast<double>(period);
  double restart, cycle_length, position;
  if (t_mult != 1.0) {
    restart = std::floor(std::log(1.0 - t / p * (1.0 - t_mult)) / std::log(t_mult));
    cycle_length = std::pow(t_mult, restart) * p;
    position = t - (1.0 - std::pow(t_mult, restart)) / (1.0 - t_mult) * p;
  } else {
    restart = std::floor(t / p);
    cycle_length = p;
    position = t - cycle_length * restart;
  }
  const double shrink = std::pow(lr_shrink, restart);
  const double low = min_lr * shrink;
  const double high = max_lr * shrink;
  return low + 0.5 * (high - low) * (1.0 + std::cos(kPi * position / cycle_length));
}

// composite: sub-policy i runs for sub_policy_num_iters[i] iterations,
// counted from iteration 1 (Iter's first value) as in Caffe2; the last one
// runs on. Each sees the global iteration and is scaled by its lr_scale.
LearningRateMultiplier MakeComposite(const OperatorBase& op) {
  const std::vector<int64_t> num_iters = op.GetRepeatedArgument<int64_t>("sub_policy_num_iters");
  DOPPIO_ENFORCE(!num_iters.empty(),
                 "policy 'composite' needs sub_policy_num_iters (one count per sub-policy)");
  struct Stage {
    double scale;
    LearningRateMultiplier multiplier;
  };
  std::map<int64_t, Stage> stages;  // first iteration -> stage
  int64_t start = 1;
  for (size_t i = 0; i < num_iters.size(); ++i) {
    DOPPIO_ENFORCE(num_iters[i] > 0, "sub_policy_num_iters[", i, "] must be positive, got ",
                   num_iters[i]);
    const std::string prefix = "sub_policy_" + std::to_string(i) + "_";
    const std::string sub_policy = op.GetSingleArgument<std::string>(prefix + "policy", "");
    DOPPIO_ENFORCE(sub_policy != "composite",
                   "a composite policy cannot contain another composite (", prefix, "policy)");
    DOPPIO_ENFORCE(!sub_policy.empty(), "composite needs ", prefix, "policy");
    stages[start] = Stage{op.GetSingleArgument<float>(prefix + "lr_scale", 1.0f),
                          MakeLearningRateMultiplier(op, sub_policy, prefix)};
    start += num_iters[i];
  }
  return [stages](int64_t iter) {
    auto it = stages.upper_bound(iter);
    if (it != stages.begin()) --it;  // iteration 0 runs the first stage
    return it->second.scale * it->second.multiplier(iter);
  };
}

}  // namespace

LearningRateMultiplier MakeLearningRateMultiplier(const OperatorBase& op,
                                                  const std::string& policy,
                                                  const std::string& prefix) {
  const PolicyArgs args(op, policy, prefix);
  if (policy == "fixed") {
    return [](int64_t) { return 1.0; };
  }
  if (policy == "step") {
    const int64_t stepsize = args.Int("stepsize", 0);
    const double gamma = args.Float("gamma", 0);
    args.Require(stepsize > 0, "stepsize", stepsize, "> 0");
    args.Require(gamma > 0, "gamma", gamma, "> 0");
    return [=](int64_t iter) { return std::pow(gamma, static_cast<double>(iter / stepsize)); };
  }
  if (policy == "multistep") {
    // Caffe's multistep: gamma ^ (number of stepsizes the iteration reached).
    std::vector<int64_t> stepsizes = args.Ints("stepsizes");
    const double gamma = args.Float("gamma", 0);
    args.Require(!stepsizes.empty(), "stepsizes", "none", "(a list of iterations)");
    args.Require(gamma > 0, "gamma", gamma, "> 0");
    std::sort(stepsizes.begin(), stepsizes.end());
    return [=](int64_t iter) {
      const auto passed = std::upper_bound(stepsizes.begin(), stepsizes.end(), iter) -
                          stepsizes.begin();
      return std::pow(gamma, static_cast<double>(passed));
    };
  }
  if (policy == "exp") {
    const double gamma = args.Float("gamma", 0);
    args.Require(gamma > 0, "gamma", gamma, "> 0");
    return [=](int64_t iter) { return std::pow(gamma, static_cast<double>(iter)); };
  }
  if (policy == "inv") {
    const double gamma = args.Float("gamma", 0);
    const double power = args.Float("power", 0);
    args.Require(gamma > 0, "gamma", gamma, "> 0");
    args.Require(power > 0, "power", power, "> 0");
    return [=](int64_t iter) { return Inv(iter, gamma, power); };
  }
  if (policy == "poly") {
    const int64_t max_iter = args.Int("max_iter", -1);
    const double power = args.Float("power", 0);
    args.Require(max_iter > 0, "max_iter", max_iter, "> 0");
    args.Require(power > 0, "power", power, "> 0");
    return [=](int64_t iter) {
      return std::pow(1.0 - static_cast<double>(iter) / static_cast<double>(max_iter), power);
    };
  }
  if (policy == "linearWarmup") {
    const double start_multiplier = args.Float("start_multiplier", 0);
    const int64_t num_iter = args.Int("num_iter", 0);
    args.Require(start_multiplier >= 0, "start_multiplier", start_multiplier, ">= 0");
    args.Require(num_iter >= 0, "num_iter", num_iter, ">= 0");
    return [=](int64_t iter) { return LinearWarmup(iter, start_multiplier, num_iter); };
  }
  if (policy == "constantWarmup") {
    const double multiplier = args.Float("multiplier", 0.5f);
    const int64_t num_iter = args.Int("num_iter", 0);
    args.Require(multiplier > 0, "multiplier", multiplier, "> 0");
    args.Require(num_iter >= 0, "num_iter", num_iter, ">= 0");
    return [=](int64_t iter) { return iter >= num_iter ? 1.0 : multiplier; };
  }
  if (policy == "alter") {
    const bool active_first = args.Bool("active_first", true);
    const int64_t active = args.Int("active_period", -1);
    const int64_t inactive = args.Int("inactive_period", -1);
    args.Require(active >= 0, "active_period", active, ">= 0");
    args.Require(inactive >= 0, "inactive_period", inactive, ">= 0");
    args.Require(active + inactive > 0, "active_period + inactive_period", active + inactive,
                 "> 0");
    return [=](int64_t iter) {
      const bool first_phase = iter % (active + inactive) < (active_first ? active : inactive);
      return first_phase == active_first ? 1.0 : 0.0;
    };
  }
  if (policy == "hill") {
    const int64_t num_iter = args.Int("num_iter", 0);
    const double start_multiplier = args.Float("start_multiplier", 0);
    const double gamma = args.Float("gamma", 0);
    const double power = args.Float("power", 0);
    const double end_multiplier = args.Float("end_multiplier", 0);
    args.Require(num_iter > 0, "num_iter", num_iter, "> 0");
    args.Require(start_multiplier >= 0 && start_multiplier <= 1, "start_multiplier",
                 start_multiplier, "in [0, 1]");
    args.Require(gamma > 0, "gamma", gamma, "> 0");
    args.Require(power > 0, "power", power, "> 0");
    args.Require(end_multiplier >= 0 && end_multiplier <= 1, "end_multiplier", end_multiplier,
                 "in [0, 1]");
    return [=](int64_t iter) {
      if (iter < num_iter) return LinearWarmup(iter, start_multiplier, num_iter);
      return std::max(end_multiplier, Inv(iter - num_iter, gamma, power));
    };
  }
  if (policy == "cosine") {
    const double max_lr = args.Float("max_lr", 0.5f);
    const double min_lr = args.Float("min_lr", 0.1f);
    const int64_t period = args.Int("period", 50);
    const double t_mult = args.Float("t_mult", 1.0f);
    const double lr_shrink = args.Float("lr_shrink", 0.99f);
    args.Require(max_lr >= min_lr, "max_lr", max_lr, ">= min_lr");
    args.Require(period > 0, "period", period, "> 0");
    args.Require(t_mult > 0, "t_mult", t_mult, "> 0");
    return [=](int64_t iter) { return Cosine(iter, min_lr, max_lr, period, t_mult, lr_shrink); };
  }
  if (policy == "composite" && prefix.empty()) return MakeComposite(op);
  DOPPIO_THROW("unknown learning rate policy '", policy, "' (argument ", prefix,
               "policy); known: fixed, step, multistep, exp, inv, poly, linearWarmup, "
               "constantWarmup, alter, hill, cosine, composite");
}

LearningRateSchedule ReadLearningRateSchedule(const OperatorBase& op) {
  DOPPIO_ENFORCE(op.HasArgument("base_lr"),
                 "the base learning rate (argument base_lr) must be set");
  const std::string policy = op.GetSingleArgument<std::string>("policy", "");
  DOPPIO_ENFORCE(!policy.empty(), "a learning rate policy (argument policy) must be given");
  LearningRateSchedule schedule;
  schedule.base_lr = op.GetSingleArgument<float>("base_lr", 0.0f) *
                     static_cast<double>(op.GetSingleArgument<float>("lr_scale", 1.0f));
  schedule.multiplier = MakeLearningRateMultiplier(op, policy, "");
  return schedule;
}

LearningRateOp::LearningRateOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), schedule_(ReadLearningRateSchedule(*this)) {}

void LearningRateOp::RunOnDevice() {
  const int64_t iteration = ReadIteration(*this, 0, Input(0));
  const double learning_rate = schedule_.At(iteration);
  Tensor* output = Output(0);
  output->Resize({});
  output->mutable_data<float>()[0] = static_cast<float>(learning_rate);
}

REGISTER_CPU_OPERATOR(LearningRate, LearningRateOp);

OPERATOR_SCHEMA(LearningRate)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      TensorShape out;
      out.set_data_type(TensorProto::FLOAT);
      return std::vector<TensorShape>{out};
    })
    .Arg("base_lr", "(float, required) base learning rate; negative for descent with "
                    "WeightedSum or Adam", true)
    .Arg("policy", "(string, required) fixed | step | multistep | exp | inv | poly | "
                   "linearWarmup | constantWarmup | alter | hill | cosine | composite", true)
    .Arg("lr_scale", "(float, default 1) multiplies base_lr")
    .Arg("stepsize", "(int) step: iterations per step")
    .Arg("stepsizes", "(ints) multistep: the iterations at which gamma is applied again")
    .Arg("gamma", "(float) step, multistep, exp, inv, hill: decay factor")
    .Arg("power", "(float) inv, poly, hill: exponent")
    .Arg("max_iter", "(int) poly: the iteration where the rate reaches 0")
    .Arg("num_iter", "(int, default 0) linearWarmup, constantWarmup, hill: warmup length")
    .Arg("start_multiplier", "(float, default 0) linearWarmup, hill: first multiplier")
    .Arg("multiplier", "(float, default 0.5) constantWarmup: the warmup multiplier")
    .Arg("end_multiplier", "(float, default 0) hill: lower bound after warmup")
    .Arg("active_first", "(bool, default true) alter: start with the active phase")
    .Arg("active_period", "(int) alter: iterations with multiplier 1")
    .Arg("inactive_period", "(int) alter: iterations with multiplier 0")
    .Arg("max_lr", "(float, default 0.5) cosine: multiplier at the start of a cycle")
    .Arg("min_lr", "(float, default 0.1) cosine: multiplier at the end of a cycle")
    .Arg("period", "(int, default 50) cosine: length of the first cycle")
    .Arg("t_mult", "(float, default 1) cosine: growth of the cycle length per restart")
    .Arg("lr_shrink", "(float, default 0.99) cosine: shrink of both bounds per restart")
    .Arg("sub_policy_num_iters", "(ints) composite: iterations of each sub-policy, whose "
                                 "arguments are prefixed sub_policy_<i>_ (policy, lr_scale, "
                                 "gamma ...)")
    .Input(0, "iteration", "int64 counter of one element (from Iter)")
    .Output(0, "learning_rate", "float32 scalar: base_lr * lr_scale * multiplier(iteration)")
    .Doc("The learning rate for an iteration: base_lr * lr_scale * f(iteration) for the "
         "multiplier f of `policy`: fixed 1; step gamma^floor(it/stepsize); multistep "
         "gamma^(stepsizes reached); exp gamma^it; inv (1 + gamma*it)^-power; poly "
         "(1 - it/max_iter)^power; linearWarmup start + (1-start)*it/num_iter until num_iter, "
         "then 1; constantWarmup multiplier until num_iter, then 1; cosine SGDR between min_lr "
         "and max_lr; composite a sequence of the others.");

NO_GRADIENT(LearningRate, "the learning rate schedule depends only on the iteration count");

}  // namespace doppio
