#include "operators/iter_op.h"

#include <limits>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/serialization.h"

namespace doppio {

namespace {

// Adds one to the counter tensor of `op`'s output 0, refusing anything that is
// not a single non-negative integer (a float counter, or one from a corrupt
// checkpoint, must not be silently reset). An int32 counter (Caffe2 scripts
// make them with ConstantFill dtype=INT32; Caffe2's Iter re-typed the tensor
// to int64, leaving its value undefined) becomes int64 with its value kept.
void IncrementIter(const OperatorBase& op, Tensor* counter) {
  if (counter->dtype() == DataType::kInt32 && counter->numel() == 1) {
    const int64_t value = counter->data<int32_t>()[0];
    counter->Resize({1});
    counter->raw_mutable_data(DataType::kInt64);
    counter->mutable_data<int64_t>()[0] = value;
  }
  DOPPIO_ENFORCE(counter->dtype() == DataType::kInt64, "the iteration counter '", op.output_name(0),
                 "' holds ", DataTypeName(counter->dtype()), "; it must be int64 (or int32)");
  DOPPIO_ENFORCE(counter->numel() == 1, "the iteration counter '", op.output_name(0),
                 "' must hold one element, but has shape ", counter->dims());
  int64_t* value = counter->mutable_data<int64_t>();
  DOPPIO_ENFORCE(*value >= 0, "the iteration counter '", op.output_name(0), "' is negative (",
                 *value, ")");
  DOPPIO_ENFORCE(*value < std::numeric_limits<int64_t>::max(), "the iteration counter '",
                 op.output_name(0), "' would overflow");
  ++*value;
}

}  // namespace

void IterOp::RunOnDevice() {
  if (InputSize() == 0 && !OutputBlob(0)->IsTensor()) {
    Tensor* counter = Output(0);
    counter->Resize({1});
    counter->mutable_data<int64_t>()[0] = 0;
  }
  IncrementIter(*this, Output(0));
}

void AtomicIterOp::RunOnDevice() {
  const MutexPointer& mutex = InputAs<MutexPointer>(0);
  DOPPIO_ENFORCE(mutex != nullptr, "the mutex blob '", input_name(0),
                 "' holds no mutex; make it with CreateMutex");
  std::lock_guard<std::mutex> lock(*mutex);
  IncrementIter(*this, Output(0));
}

void CreateMutexOp::RunOnDevice() {
  OutputBlob(0)->Reset(std::make_unique<MutexPointer>(std::make_unique<std::mutex>()));
}

REGISTER_CPU_OPERATOR(Iter, IterOp);
REGISTER_CPU_OPERATOR(AtomicIter, AtomicIterOp);
REGISTER_CPU_OPERATOR(CreateMutex, CreateMutexOp);

OPERATOR_SCHEMA(Iter)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      if (!in.empty()) return std::vector<TensorShape>{in[0]};
      TensorShape out;
      out.add_dims(1);
      out.set_data_type(TensorProto::INT64);
      return std::vector<TensorShape>{out};
    })
    .Input(0, "iter", "int64 counter of one element (updated in place)")
    .Output(0, "iter", "the same counter, plus one")
    .Doc("Stores a single int64 that goes up by one on each run: the iteration count of "
         "SGD. Without an input, a blob that holds no tensor yet starts at 0.");

OPERATOR_SCHEMA(AtomicIter)
    .NumInputs(2)
    .NumOutputs(1)
    .EnforceInplace({{1, 0}})
    .Input(0, "mutex", "the mutex blob made by CreateMutex")
    .Input(1, "iter", "int64 counter of one element (updated in place)")
    .Output(0, "iter", "the same counter, plus one")
    .Doc("Like Iter, but increments while holding the mutex, so nets running "
         "concurrently (e.g. Hogwild SGD) can share one counter.");

OPERATOR_SCHEMA(CreateMutex)
    .NumInputs(0)
    .NumOutputs(1)
    .Output(0, "mutex", "a blob holding a new mutex")
    .Doc("Creates a mutex for AtomicIter.");

NO_GRADIENT(Iter, "the iteration counter is bookkeeping, not a function of parameters");
NO_GRADIENT(AtomicIter, "the iteration counter is bookkeeping, not a function of parameters");
SHOULD_NOT_DO_GRADIENT(CreateMutex, "a mutex is not a tensor");

// ---- the mutex blob in checkpoints ----
// As in Caffe2 a mutex serializes to an empty BlobProto of its type, and
// loads as a fresh, unlocked mutex.

namespace {

constexpr const char* kMutexBlobType = "std::unique_ptr<std::mutex>";

class MutexSerializer final : public BlobSerializerBase {
 public:
  void Serialize(const Blob&, const std::string& name, const SerializationAcceptor& acceptor,
                 int64_t /*chunk_size*/) override {
    BlobProto proto;
    proto.set_name(name);
    proto.set_type(kMutexBlobType);
    proto.set_content("");
    acceptor(name, proto.SerializeAsString());
  }
};

class MutexDeserializer final : public BlobDeserializerBase {
 public:
  void Deserialize(const BlobProto&, Blob* blob) override {
    blob->Reset(std::make_unique<MutexPointer>(std::make_unique<std::mutex>()));
  }
};

BlobSerializerRegisterer g_mutex_serializer(std::type_index(typeid(MutexPointer)), [] {
  return std::make_unique<MutexSerializer>();
});
BlobDeserializerRegisterer g_mutex_deserializer(kMutexBlobType, [] {
  return std::make_unique<MutexDeserializer>();
});

}  // namespace

}  // namespace doppio
