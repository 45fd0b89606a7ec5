// Gradient makers: for an OperatorDef, the OperatorDefs that compute the
// gradients of its inputs from the gradients of its outputs. The backward
// pass (a later issue) walks a net in reverse and asks each op's maker.
//
// A maker names blobs with short helpers:
//   I(i)  input i           O(i)  output i
//   GI(i) input i's grad    GO(i) output i's grad
// and returns ops built with SingleGradientDef. An op with no gradient says
// why, with NO_GRADIENT (its inputs get no gradient, e.g. fills) or
// SHOULD_NOT_DO_GRADIENT (asking for one is a mistake, e.g. Save).
//
//   class GetScaleGradient final : public GradientMakerBase {
//     using GradientMakerBase::GradientMakerBase;
//     std::vector<OperatorDef> GetGradientDefs() override {
//       return SingleGradientDef("Scale", "", {GO(0)}, {GI(0)}, Def().arg());
//     }
//   };
//   REGISTER_GRADIENT(Scale, GetScaleGradient);
//
// Thread-safety: the registry is filled during static initialization.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "proto/doppio.pb.h"

namespace doppio {

// A gradient blob: dense (one name), sparse (indices + values, a
// GradientSlice), or none (empty).
struct GradientWrapper {
  std::string dense;
  std::string indices;
  std::string values;
  bool IsDense() const { return !dense.empty(); }
  bool IsSparse() const { return !indices.empty() || !values.empty(); }
  bool IsEmpty() const { return !IsDense() && !IsSparse(); }
};

struct GradientOpsMeta {
  std::vector<OperatorDef> ops;
  // One entry per forward input: the gradient produced for it, if any.
  std::vector<GradientWrapper> input_gradients;
};

class GradientMakerBase {
 public:
  GradientMakerBase(const OperatorDef& def,
                    const std::vector<GradientWrapper>& output_gradients);
  virtual ~GradientMakerBase() = default;

  // The gradient ops; called once per maker.
  virtual std::vector<OperatorDef> GetGradientDefs() = 0;
  // Whether the gradient ops may reuse the forward op's device and engine.
  virtual bool CopyDeviceOption() const { return true; }
  virtual bool CopyEngine() const { return true; }
  virtual bool CopyArguments() const { return false; }
  // Whether Get() marks the ops it returns as gradient ops (is_gradient_op).
  // Makers written in Python return their ops as they built them, as in
  // Caffe2.
  virtual bool MarksGradientOps() const { return true; }

  // Runs GetGradientDefs and fills in which inputs got gradients.
  GradientOpsMeta Get();

 protected:
  const OperatorDef& Def() const { return def_; }
  std::string I(int i) const;
  std::string O(int i) const;
  // Names (and records) the dense gradient of input i: "<input>_grad".
  std::string GI(int i);
  // Sparse gradient of input i: "<input>_grad_indices" / "_values".
  std::string GI_I(int i);
  std::string GI_V(int i);
  // Makes an existing blob (usually an output gradient) input i's dense
  // gradient without any op: Caffe2's SetDense, how Alias and Sum pass their
  // output gradient straight through.
  void SetDense(int i, const std::string& name) {
    input_gradients_.at(i) = GradientWrapper{name, "", ""};
  }
  // Makes existing blobs input i's sparse gradient (a GradientSlice): how
  // Gather hands its indices and output gradient back without any op.
  void SetSparse(int i, const std::string& indices, const std::string& values) {
    input_gradients_.at(i) = GradientWrapper{"", indices, values};
  }
  // The dense gradient of output i (error when that gradient is sparse or
  // absent).
  std::string GO(int i) const;
  std::string GO_I(int i) const;
  std::string GO_V(int i) const;
  bool HasGO(int i) const;

  static std::vector<OperatorDef> SingleGradientDef(
      const std::string& type, const std::string& name,
      const std::vector<std::string>& inputs,
      const std::vector<std::string>& outputs,
      const google::protobuf::RepeatedPtrField<Argument>& args = {});

 private:
  OperatorDef def_;
  std::vector<GradientWrapper> output_gradients_;
  std::vector<GradientWrapper> input_gradients_;
};

// The gradient name convention shared with Caffe2.
std::string GradientName(const std::string& blob);

using GradientMakerCreator = std::function<std::unique_ptr<GradientMakerBase>(
    const OperatorDef&, const std::vector<GradientWrapper>&)>;

class GradientRegistry {
 public:
  enum class Kind { kMaker, kNoGradient, kShouldNotDoGradient };
  struct Entry {
    Kind kind;
    GradientMakerCreator creator;
    std::string reason;  // for kNoGradient / kShouldNotDoGradient
  };

  static void Register(const std::string& type, Entry entry);
  static const Entry* Find(const std::string& type);
  static const std::map<std::string, Entry>& All();
};

// The gradient ops of `def` given its outputs' gradients. Throws when the op
// has no gradient registered, or must not be differentiated.
GradientOpsMeta GetGradientForOp(const OperatorDef& def,
                                 const std::vector<GradientWrapper>& output_gradients);

struct GradientRegisterer {
  GradientRegisterer(const char* type, GradientRegistry::Entry entry) {
    GradientRegistry::Register(type, std::move(entry));
  }
};

}  // namespace doppio

#ifndef DOPPIO_CONCAT_
#define DOPPIO_CONCAT_IMPL_(a, b) a##b
#define DOPPIO_CONCAT_(a, b) DOPPIO_CONCAT_IMPL_(a, b)
#endif

#define REGISTER_GRADIENT(type, ...)                                          \
  static ::doppio::GradientRegisterer DOPPIO_CONCAT_(doppio_grad_##type##_, __LINE__)( \
      #type, ::doppio::GradientRegistry::Entry{                               \
                 ::doppio::GradientRegistry::Kind::kMaker,                    \
                 [](const ::doppio::OperatorDef& def,                         \
                    const std::vector<::doppio::GradientWrapper>& g) {        \
                   return std::unique_ptr<::doppio::GradientMakerBase>(       \
                       new __VA_ARGS__(def, g));                              \
                 },                                                           \
                 ""})

// The op's inputs receive no gradient; `reason` says why.
#define NO_GRADIENT(type, reason)                                             \
  static ::doppio::GradientRegisterer DOPPIO_CONCAT_(doppio_nograd_##type##_, __LINE__)( \
      #type, ::doppio::GradientRegistry::Entry{                               \
                 ::doppio::GradientRegistry::Kind::kNoGradient, nullptr, reason})

// Differentiating through this op is an error; `reason` says why.
#define SHOULD_NOT_DO_GRADIENT(type, reason)                                  \
  static ::doppio::GradientRegisterer DOPPIO_CONCAT_(doppio_nodo_##type##_, __LINE__)( \
      #type, ::doppio::GradientRegistry::Entry{                               \
                 ::doppio::GradientRegistry::Kind::kShouldNotDoGradient,      \
                 nullptr, reason})
