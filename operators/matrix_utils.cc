#include "operators/matrix_utils.h"

namespace doppio {

int64_t DimsProduct(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= dims[i];
  return product;
}

int CanonicalAxisOf(const std::string& op, const char* arg, int axis, const std::string& blob,
                    const std::vector<int64_t>& dims) {
  const int rank = static_cast<int>(dims.size());
  DOPPIO_ENFORCE(axis >= -rank && axis < rank, "op ", op, ": argument ", arg, " = ", axis,
                 " is out of range for '", blob, "' of shape ", dims, " (rank ", rank, ")");
  return axis < 0 ? axis + rank : axis;
}

}  // namespace doppio
