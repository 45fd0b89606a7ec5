// The backward pass: from a forward NetDef and its loss blobs, the gradient
// operators (asked of each op's gradient maker, core/gradient.h) and the
// blob -> gradient map, following Caffe2's IR (caffe2/python/core.py):
//
// - Each loss gets a ConstantFill(loss) -> "<loss>_grad" of value 1.0 unless
//   its initial gradient is given.
// - Ops are visited in reverse. Blobs are versioned as the forward net writes
//   them (SSA), so an op that overwrites a blob in place hands the gradient of
//   the older version to the ops before it, and a gradient op that needs a
//   forward blob whose value was overwritten later is an error, not a silent
//   wrong answer.
// - A blob version read by several ops gets the gradients of all of them
//   summed: the first gradient keeps its name, the others are renamed
//   "_<grad>_autosplit_<k>", and a Sum op writes the total. Sparse gradients
//   (GradientSlice) are "summed" by concatenating indices and values
//   ("<grad>_indices_concat", "<grad>_values_concat"); mixing dense and
//   sparse gradients of one blob is an error, as in Caffe2.
// - NO_GRADIENT ops (StopGradient, fills) give their inputs no gradient;
//   SHOULD_NOT_DO_GRADIENT ops on a path to a loss are an error naming the
//   op.
// - Every other op with an output gradient is differentiated, also when its
//   inputs come only from fills or a StopGradient: Caffe2 programs fetch
//   those gradients (x_grad of an x made by a Const), so they exist.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "proto/doppio.pb.h"

namespace doppio {

struct BackwardResult {
  // The gradient ops, in the order they must run (after the forward net).
  std::vector<OperatorDef> ops;
  // Every blob that got a gradient, with that gradient (dense or sparse).
  std::map<std::string, GradientWrapper> gradients;
};

// Losses get all-ones gradients made by ConstantFill ops.
BackwardResult AddGradientOperators(const NetDef& net,
                                    const std::vector<std::string>& losses);

// Losses listed in `loss_gradients` use the given (existing) blob as their
// gradient instead; the others get all-ones gradients.
BackwardResult AddGradientOperators(
    const NetDef& net, const std::vector<std::string>& losses,
    const std::map<std::string, GradientWrapper>& loss_gradients);

}  // namespace doppio
