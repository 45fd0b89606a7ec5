// The math of SoftmaxWithLoss and AveragedLoss (and their gradients), written
// once for the host (g++) and the device (nvcc). The CPU ops loop over
// samples and call these; the CUDA kernels (loss_op_gpu.cu) run one sample
// (or one element) per thread and reduce the sums in a block. Every CPU CI
// run therefore executes the expressions the GPU runs.
//
// Bad input: the CPU ops check labels and probability rows first and throw
// doppio::Error. On the GPU the labels live in device memory, and checking
// them on the host would stall the stream, so the same functors turn a bad
// label or a probability row that is no distribution into a nan loss (and
// nan gradients), which the next step's loss makes visible.
//
// Plain C++ only (no core headers), so nvcc can include it without the
// generated proto header.
#pragma once

#include <cmath>
#include <cstdint>

#include "operators/elementwise_functors.h"

namespace doppio {
namespace functors {

// SoftmaxWithLoss's view of its logits X: [outer, classes, inner]. Sample
// (o, s) is entry o * inner + s of the labels and weights, and its class c
// sits at at(o, c, s) of X and of the softmax P. Without spatial=1, inner is 1
// and a sample is a row.
struct SoftmaxLossLayout {
  int64_t outer = 1, classes = 1, inner = 1;

  DOPPIO_HOST_DEVICE int64_t samples() const { return outer * inner; }
  DOPPIO_HOST_DEVICE int64_t at(int64_t o, int64_t c, int64_t s) const {
    return (o * classes + c) * inner + s;
  }
};

// The label spatial SoftmaxWithLoss skips, as in Caffe2.
constexpr int64_t kIgnoredLabel = -1;
// Caffe2's tolerance for a probability row's sum.
constexpr double kProbabilitySumTolerance = 1e-5;

// Writes the softmax of sample (o, s) into p and returns its log-sum-exp,
// so that log P_c = x_c - lse exactly (no log of an underflowed P).
template <typename T>
DOPPIO_HOST_DEVICE T SoftmaxOfSample(const SoftmaxLossLayout& layout, int64_t o, int64_t s,
                                     const T* x, T* p) {
  // No classes: nothing to normalize (a sample with a label cannot exist).
  if (layout.classes == 0) return T(0);
  T max_value = x[layout.at(o, 0, s)];
  for (int64_t c = 1; c < layout.classes; ++c) {
    const T value = x[layout.at(o, c, s)];
    max_value = value > max_value ? value : max_value;
  }
  T sum = T(0);
  for (int64_t c = 0; c < layout.classes; ++c) {
    const int64_t at = layout.at(o, c, s);
    p[at] = std::exp(x[at] - max_value);
    sum += p[at];
  }
  for (int64_t c = 0; c < layout.classes; ++c) p[layout.at(o, c, s)] /= sum;
  return max_value + std::log(sum);
}

// Whether row o of label probabilities is a distribution (non-negative,
// summing to 1 within Caffe2's tolerance).
template <typename T>
DOPPIO_HOST_DEVICE bool IsProbabilityRow(const SoftmaxLossLayout& layout, int64_t o,
                                         const T* probs) {
  double total = 0;
  for (int64_t c = 0; c < layout.classes; ++c) {
    const T value = probs[layout.at(o, c, 0)];
    if (!(value >= T(0))) return false;
    total += static_cast<double>(value);
  }
  const double off = total - 1.0;
  return (off < 0 ? -off : off) < kProbabilitySumTolerance;
}

// One sample's part of the loss: its weighted cross entropy and its weight
// in the normalizer (both 0 for an ignored sample).
struct SampleLoss {
  double weighted_loss = 0;
  double weight = 0;
};

// The targets and weights of SoftmaxWithLoss: class labels of type L, or
// probability rows shaped like X (label_probs non-null, labels null).
template <typename T, typename L>
struct SoftmaxLossTargets {
  SoftmaxLossLayout layout;
  const L* labels = nullptr;
  const T* label_probs = nullptr;
  const T* weights = nullptr;  // null: every sample weighs 1
  bool spatial = false;        // label kIgnoredLabel is skipped

  DOPPIO_HOST_DEVICE double WeightOf(int64_t sample) const {
    return weights != nullptr ? static_cast<double>(weights[sample]) : 1.0;
  }
  DOPPIO_HOST_DEVICE bool Ignored(int64_t sample) const {
    return label_probs == nullptr && spatial && labels[sample] == static_cast<L>(kIgnoredLabel);
  }
  // A class label outside [0, classes) that is not ignored.
  DOPPIO_HOST_DEVICE bool BadLabel(int64_t sample) const {
    if (label_probs != nullptr || Ignored(sample)) return false;
    const L label = labels[sample];
    return label < L(0) || static_cast<int64_t>(label) >= layout.classes;
  }
};

// SoftmaxWithLoss for one sample: writes its softmax into p and returns its
// weighted cross entropy -sum_c t_c log P_c (t one-hot for a class label).
template <typename T, typename L>
DOPPIO_HOST_DEVICE SampleLoss SoftmaxLossOfSample(const SoftmaxLossTargets<T, L>& targets,
                                                  const T* x, int64_t sample, T* p) {
  const SoftmaxLossLayout& layout = targets.layout;
  const int64_t o = sample / layout.inner;
  const int64_t s = sample % layout.inner;
  const T lse = SoftmaxOfSample(layout, o, s, x, p);
  if (targets.Ignored(sample)) return SampleLoss{0.0, 0.0};
  const double weight = targets.WeightOf(sample);
  if (targets.BadLabel(sample)) return SampleLoss{static_cast<double>(NAN), weight};
  double loss = 0;
  if (targets.label_probs != nullptr) {
    if (!IsProbabilityRow(layout, o, targets.label_probs)) {
      return SampleLoss{static_cast<double>(NAN), weight};
    }
    for (int64_t c = 0; c < layout.classes; ++c) {
      const int64_t at = layout.at(o, c, 0);
      loss += static_cast<double>(targets.label_probs[at]) * static_cast<double>(lse - x[at]);
    }
  } else {
    const int64_t label = static_cast<int64_t>(targets.labels[sample]);
    loss = static_cast<double>(lse - x[layout.at(o, label, s)]);
  }
  return SampleLoss{weight * loss, weight};
}

// The loss from the sums over samples: scale times the weighted mean, 0
// when the weights sum to 0.
DOPPIO_HOST_DEVICE inline double SoftmaxLossValue(double loss_sum, double weight_sum,
                                                  double scale) {
  return weight_sum != 0 ? scale * loss_sum / weight_sum : 0.0;
}

// The gradient's common factor scale * d_loss / sum of counted weights.
DOPPIO_HOST_DEVICE inline double SoftmaxLossGradientCoefficient(double scale, double d_loss,
                                                                double weight_sum) {
  return weight_sum != 0 ? scale * d_loss / weight_sum : 0.0;
}

// A sample's weight in the gradient's normalizer: 0 when ignored, nan for a
// bad label (then every gradient is nan, as the loss was).
template <typename T, typename L>
DOPPIO_HOST_DEVICE double CountedWeight(const SoftmaxLossTargets<T, L>& targets, int64_t sample) {
  if (targets.Ignored(sample)) return 0.0;
  if (targets.BadLabel(sample)) return static_cast<double>(NAN);
  return targets.WeightOf(sample);
}

// dX at flat index `index` of X: (P - t) * weight * coefficient, 0 for an
// ignored sample.
template <typename T, typename L>
DOPPIO_HOST_DEVICE T SoftmaxLossGradientAt(const SoftmaxLossTargets<T, L>& targets, const T* p,
                                           int64_t index, double coefficient) {
  const SoftmaxLossLayout& layout = targets.layout;
  const int64_t s = index % layout.inner;
  const int64_t c = (index / layout.inner) % layout.classes;
  const int64_t o = index / (layout.inner * layout.classes);
  const int64_t sample = o * layout.inner + s;
  if (targets.Ignored(sample)) return T(0);
  const T factor = static_cast<T>(coefficient * CountedWeight(targets, sample));
  T target;
  if (targets.label_probs != nullptr) {
    target = targets.label_probs[index];
  } else {
    target = static_cast<int64_t>(targets.labels[sample]) == c ? T(1) : T(0);
  }
  return factor * (p[index] - target);
}

// ---- AveragedLoss ----

// The mean from the sum of n elements (0 for none).
DOPPIO_HOST_DEVICE inline double AverageOf(double sum, int64_t n) {
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

// Every element of AveragedLoss's input gets dY / n.
template <typename T>
DOPPIO_HOST_DEVICE T AveragedLossGradientValue(T dy, int64_t n) {
  return n > 0 ? dy / static_cast<T>(n) : T(0);
}

// ---- CPU launchers: the host instantiation of the same functors ----

// SoftmaxWithLoss over all samples: fills p and returns the loss.
template <typename T, typename L>
double CpuSoftmaxLoss(const SoftmaxLossTargets<T, L>& targets, const T* x, double scale, T* p) {
  double loss_sum = 0, weight_sum = 0;
  for (int64_t sample = 0; sample < targets.layout.samples(); ++sample) {
    const SampleLoss part = SoftmaxLossOfSample(targets, x, sample, p);
    loss_sum += part.weighted_loss;
    weight_sum += part.weight;
  }
  return SoftmaxLossValue(loss_sum, weight_sum, scale);
}

// SoftmaxWithLossGradient: dx for every element of X.
template <typename T, typename L>
void CpuSoftmaxLossGradient(const SoftmaxLossTargets<T, L>& targets, const T* p, double scale,
                            double d_loss, T* dx) {
  double weight_sum = 0;
  for (int64_t sample = 0; sample < targets.layout.samples(); ++sample) {
    weight_sum += CountedWeight(targets, sample);
  }
  const double coefficient = SoftmaxLossGradientCoefficient(scale, d_loss, weight_sum);
  const SoftmaxLossLayout& layout = targets.layout;
  const int64_t count = layout.samples() * layout.classes;
  for (int64_t i = 0; i < count; ++i) dx[i] = SoftmaxLossGradientAt(targets, p, i, coefficient);
}

}  // namespace functors
}  // namespace doppio
