// Shapes through a net from its ops' schemas (OpSchema::InferTensor): the
// walk behind cost estimates (operators/op_cost.h), Caffe2's
// workspace.InferShapesAndTypes and graph passes that need shapes
// (transforms/channels_last). Advisory: an op without a schema, or whose
// inference cannot decide, leaves its outputs unknown rather than failing.
//
// Pure functions; thread-safe as the schema registry is after static
// initialization.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

// The shape and dtype of every tensor blob of `workspace`.
std::map<std::string, TensorShape> WorkspaceShapes(const Workspace& workspace);

// Input shapes of `op` from `shapes`; false when one is unknown (its name
// goes to *missing).
bool KnownInputShapes(const OperatorDef& op, const std::map<std::string, TensorShape>& shapes,
                      std::vector<TensorShape>* inputs, std::string* missing);

// Records `op`'s inferred outputs in `shapes`; an output whose shape cannot
// be inferred is forgotten, so later readers see it as unknown rather than
// stale. `inputs` are the op's input shapes when `inputs_known`.
void RecordOutputs(const OperatorDef& op, const std::vector<TensorShape>& inputs, bool inputs_known,
                   std::map<std::string, TensorShape>* shapes);

// The blob shapes after `net`, starting from `known_shapes` (e.g. the
// parameter shapes that an init net's fill ops set). The last write wins.
std::map<std::string, TensorShape> InferNetShapes(
    const NetDef& net, const std::map<std::string, TensorShape>& known_shapes);

}  // namespace doppio
