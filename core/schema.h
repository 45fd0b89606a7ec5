// OpSchema: the contract of one operator type, written beside its kernel as a
// fluent builder that doubles as documentation:
//
//   OPERATOR_SCHEMA(Scale)
//       .NumInputs(1).NumOutputs(1)
//       .AllowInplace({{0, 0}})
//       .IdenticalTypeAndShape()
//       .Arg("scale", "(float, default 1.0) the multiplier")
//       .Doc("Y = scale * X");
//
// Operator creation verifies every OperatorDef against its schema (input and
// output counts, in-place rules) and refuses op types that have none, so an op
// registered without a schema cannot run.
//
// Thread-safety: schemas are built during static initialization and only read
// afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

class OpSchema {
 public:
  // Inferred output shapes from input shapes (and the op's arguments).
  using InferenceFunction = std::function<std::vector<TensorShape>(
      const OperatorDef&, const std::vector<TensorShape>&)>;

  // An op's work for given input shapes, as Caffe2's OpSchema::Cost: for
  // profilers and planners (tools/inspect_net), not for correctness.
  struct Cost {
    uint64_t flops = 0;          // floating-point operations (a multiply-add is 2)
    uint64_t bytes_read = 0;     // input bytes, parameters included
    uint64_t bytes_written = 0;  // output bytes
    uint64_t params_bytes = 0;   // of bytes_read, the learned parameters'
  };
  using CostInferenceFunctionType =
      std::function<Cost(const OperatorDef&, const std::vector<TensorShape>&)>;

  struct Argument {
    std::string name;
    std::string description;
    bool required = false;
  };
  struct Slot {
    std::string name;
    std::string description;
  };

  OpSchema() = default;
  OpSchema(std::string type, std::string file, int line);

  // ---- builders ----
  OpSchema& NumInputs(int n) { return NumInputs(n, n); }
  OpSchema& NumInputs(int min, int max);
  OpSchema& NumInputs(std::set<int> allowed);
  OpSchema& NumOutputs(int n) { return NumOutputs(n, n); }
  OpSchema& NumOutputs(int min, int max);
  OpSchema& NumOutputs(std::set<int> allowed);
  // Outputs as a function of inputs (e.g. Sum: 1 output for any inputs).
  OpSchema& NumInputsOutputs(std::function<bool(int, int)> valid);
  // (input, output) pairs that may share a blob.
  OpSchema& AllowInplace(std::set<std::pair<int, int>> pairs);
  OpSchema& AllowInplace(std::function<bool(int, int)> allowed);
  // (input, output) pairs that must share a blob (e.g. optimizer updates).
  OpSchema& EnforceInplace(std::set<std::pair<int, int>> pairs);
  OpSchema& AllowAnyInplace() {
    return AllowInplace([](int, int) { return true; });
  }
  OpSchema& TensorInferenceFunction(InferenceFunction function);
  OpSchema& CostInferenceFunction(CostInferenceFunctionType function);
  // Output 0 has input 0's shape and type.
  OpSchema& IdenticalTypeAndShape();
  // Element k of every output depends only on element k of the inputs that
  // have the outputs' shape, and on whole inputs of one element (a learning
  // rate, an iteration count): the op computes the same on any block of the
  // flattened tensors. What lets the sharded optimizer state (ZeRO stage 1)
  // run an update op on a shard's block of a parameter.
  OpSchema& Elementwise() {
    elementwise_ = true;
    return *this;
  }
  // CPU kernels: float16 and bfloat16 inputs are widened to float32, the
  // float kernel runs and its outputs are rounded back to the inputs' type
  // (core/low_precision_op.h), as GPUs run half ops with float32
  // accumulation. Outputs in `float32_outputs` stay float32 (SpatialBN's
  // statistics, its scale and bias gradients); an output in place over a
  // float32 input stays float32 too. Float inputs alone run the kernel as is.
  OpSchema& LowPrecisionInFloat32(std::set<int> float32_outputs = {}) {
    low_precision_in_float32_ = true;
    float32_outputs_ = std::move(float32_outputs);
    return *this;
  }
  OpSchema& Doc(std::string doc);
  OpSchema& Arg(std::string name, std::string description, bool required = false);
  OpSchema& Input(int index, std::string name, std::string description);
  OpSchema& Output(int index, std::string name, std::string description);
  // Arguments that name blobs (strings) or hold nets whose ops name blobs
  // (RecurrentNetwork's links and step nets): passes that rename an op's
  // blobs (the data-parallel copy onto each device) rename these too.
  OpSchema& BlobNameArgs(std::set<std::string> names);
  OpSchema& NetArgs(std::set<std::string> names);
  // Applies a part that several schemas share (e.g. the arguments every
  // filler op takes), so it is written once.
  OpSchema& Apply(const std::function<void(OpSchema&)>& shared_part) {
    shared_part(*this);
    return *this;
  }

  // ---- queries ----
  const std::string& type() const { return type_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& doc() const { return doc_; }
  const std::vector<Argument>& args() const { return args_; }
  const std::vector<Slot>& inputs() const { return inputs_; }
  const std::vector<Slot>& outputs() const { return outputs_; }
  int min_input() const { return min_input_; }
  int max_input() const { return max_input_; }
  int min_output() const { return min_output_; }
  int max_output() const { return max_output_; }
  const std::set<std::string>& blob_name_args() const { return blob_name_args_; }
  const std::set<std::string>& net_args() const { return net_args_; }
  bool inplace_allowed(int input, int output) const;
  bool inplace_enforced(int input, int output) const;
  bool elementwise() const { return elementwise_; }
  bool low_precision_in_float32() const { return low_precision_in_float32_; }
  const std::set<int>& float32_outputs() const { return float32_outputs_; }
  bool has_shape_inference() const { return static_cast<bool>(inference_); }
  std::vector<TensorShape> InferTensor(const OperatorDef& def,
                                       const std::vector<TensorShape>& inputs) const;
  bool HasCostInferenceFunction() const { return static_cast<bool>(cost_inference_); }
  // Throws an Error when the op has no cost function or the shapes do not
  // fit it.
  Cost InferCost(const OperatorDef& def, const std::vector<TensorShape>& inputs) const;

  // Throws an Error naming what in `def` violates this schema.
  void Verify(const OperatorDef& def) const;
  // "NumInputs 1-2, NumOutputs 1, in-place {0->0}" for listings.
  std::string Summary() const;

 private:
  std::string type_, file_, doc_;
  int line_ = 0;
  int min_input_ = 0, max_input_ = 1 << 30;
  int min_output_ = 0, max_output_ = 1 << 30;
  std::set<int> allowed_inputs_, allowed_outputs_;
  std::function<bool(int, int)> num_inputs_outputs_;
  std::function<bool(int, int)> inplace_allowed_;
  std::set<std::pair<int, int>> inplace_enforced_;
  InferenceFunction inference_;
  CostInferenceFunctionType cost_inference_;
  std::vector<Argument> args_;
  std::vector<Slot> inputs_, outputs_;
  std::set<std::string> blob_name_args_, net_args_;
  bool elementwise_ = false;
  bool low_precision_in_float32_ = false;
  std::set<int> float32_outputs_;
};

// Renames every blob `op` names: inputs, outputs, control inputs, and,
// through its schema, blob-name arguments and the ops and external blobs of
// net arguments (recursively).
void RenameOpBlobs(OperatorDef* op, const std::function<std::string(const std::string&)>& rename);

class OpSchemaRegistry {
 public:
  // Creates the schema for `type`; a second schema for one type is an error
  // at start-up (two files defining one op).
  static OpSchema& NewSchema(const std::string& type, const char* file, int line);
  // nullptr when the type has no schema.
  static const OpSchema* Schema(const std::string& type);
  static const std::map<std::string, OpSchema>& All();

 private:
  static std::map<std::string, OpSchema>& Map();
};

}  // namespace doppio

#define DOPPIO_CONCAT_IMPL_(a, b) a##b
#define DOPPIO_CONCAT_(a, b) DOPPIO_CONCAT_IMPL_(a, b)

// Defines the schema of op `name` at namespace scope.
#define OPERATOR_SCHEMA(name)                                                  \
  static ::doppio::OpSchema& DOPPIO_CONCAT_(doppio_schema_##name##_, __LINE__) \
      [[maybe_unused]] =                                                       \
          ::doppio::OpSchemaRegistry::NewSchema(#name, __FILE__, __LINE__)
