// Tensors to and from NumPy's .npy format, so that inputs and outputs of the
// command-line tools can be made and checked with numpy.save / numpy.load.
//
// Reading accepts format versions 1.0, 2.0 and 3.0; dtypes float16/32/64,
// int8/16/32/64, uint8/16/32/64 and bool, in either byte order (big-endian data is
// byte-swapped); C order, or Fortran order where the two layouts coincide
// (at most one dimension larger than 1). Everything in the file is validated
// before anything is allocated from it: the magic, the header length, the
// header dict, every dim, the element count, the array's bytes against the
// tensor cap (MaxTensorBytes, core/limits.h), and the file's size, which must
// be exactly the header plus the data the header promises. Every failure
// throws doppio::Error naming the file (or the `source` given for bytes).
//
// Writing produces version 1.0, or 2.0 when the header does not fit 1.0's
// 16-bit length, little-endian, C order, with the header padded to 64 bytes
// as numpy does.
//
// Thread-safety: the functions share no state.
#pragma once

#include <string>

#include "core/tensor.h"

namespace doppio {

// Loads the .npy file at `path` into a CPU tensor.
Tensor ReadNpyFile(const std::string& path);
// Writes a CPU tensor to `path` (replacing any file there).
void WriteNpyFile(const Tensor& tensor, const std::string& path);

// The same on bytes in memory; `source` names them in error messages.
Tensor ParseNpy(const std::string& bytes, const std::string& source);
std::string EncodeNpy(const Tensor& tensor);

// True when `bytes` start with the .npy magic string ("\x93NUMPY").
bool LooksLikeNpy(const std::string& bytes);

}  // namespace doppio
