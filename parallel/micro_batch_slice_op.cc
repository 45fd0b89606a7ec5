#include "parallel/micro_batch_slice_op.h"

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

MicroBatchSliceOp::MicroBatchSliceOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      micro_batches_(GetSingleArgument<int64_t>("micro_batches", 0)) {
  DOPPIO_ENFORCE_ARG(micro_batches_ >= 1, "argument micro_batches must be >= 1, got ",
                     micro_batches_);
}

void MicroBatchSliceOp::RunOnDevice() {
  const Tensor& batch = Input(0);
  const Tensor& step = Input(1);
  DOPPIO_ENFORCE_ARG(batch.dtype() != DataType::kUndefined, "input 0 ('", input_name(0),
                     "') was never written: feed the batch before running the net");
  DOPPIO_ENFORCE_ARG(step.numel() == 1 && step.dtype() == DataType::kInt64, "input 1 ('",
                     input_name(1), "') must be one int64, the micro-step");
  const int64_t index = step.data<int64_t>()[0];
  DOPPIO_ENFORCE_INDEX(index >= 0 && index < micro_batches_, "micro-step ", index,
                       " is not in [0, micro_batches = ", micro_batches_, ")");
  // A 0-D blob has no batch dimension (a fed scalar): every micro-step reads it whole.
  if (batch.ndim() == 0) {
    Output(0)->ShareData(batch);
    return;
  }
  const int64_t rows = batch.dim(0);
  DOPPIO_ENFORCE_ARG(rows % micro_batches_ == 0, "accumulate_steps=", micro_batches_,
                     " cannot cut the fed batch '", output_name(0), "' of ", rows,
                     " rows (shape ", batch.dims(), ") into ", micro_batches_,
                     " equal micro-batches: feed a multiple of ", micro_batches_, " rows");
  const int64_t per_step = rows / micro_batches_;
  Output(0)->ShareSlice(batch, index * per_step, per_step);
}

REGISTER_CPU_OPERATOR(MicroBatchSlice, MicroBatchSliceOp);

namespace {

std::vector<TensorShape> MicroBatchShape(const OperatorDef& def,
                                         const std::vector<TensorShape>& inputs) {
  const int64_t parts = ArgumentHelper(def).GetSingle<int64_t>("micro_batches", 0);
  TensorShape out = inputs.at(0);
  if (!out.unknown_shape() && out.dims_size() > 0 && parts >= 1 && out.dims(0) % parts == 0) {
    out.set_dims(0, out.dims(0) / parts);
  } else if (out.dims_size() > 0) {
    out.set_unknown_shape(true);
  }
  return {out};
}

}  // namespace

OPERATOR_SCHEMA(MicroBatchSlice)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(MicroBatchShape)
    .Arg("micro_batches", "(int, required) K: how many equal parts the batch is cut into",
         true)
    .Input(0, "batch", "the whole fed batch: N rows along dim 0, N a multiple of K")
    .Input(1, "step", "int64 scalar: the micro-step, in [0, K)")
    .Output(0, "micro_batch", "rows [step * N / K, (step + 1) * N / K) of batch, a view of "
                              "its storage (a 0-D batch is passed whole)")
    .Doc("Micro-batch `step` of a fed batch: what Parallelize(accumulate_steps=K) inserts "
         "at the start of every micro-step for each blob the training net reads but does "
         "not make, so K micro-steps cover the fed batch once.");

NO_GRADIENT(MicroBatchSlice, "the pass inserts it after the backward pass is derived; the "
                             "rows it selects are inputs, never differentiated");

}  // namespace doppio
