// What the oneDNN-backed kernels (Conv, FC) share: one CPU engine and the
// attribute that hands every primitive's scratchpad to us.
#pragma once

#include <dnnl.hpp>

namespace doppio {

// One engine for the process: creating one per op would cost a lookup of the
// CPU's ISA each time and buys nothing, oneDNN engines being thread-safe.
dnnl::engine& DnnlCpuEngine();

// Every primitive gets its scratchpad from us, sized for it and bound on each
// run to the running thread's ThreadArena. In oneDNN's default (library)
// mode the scratchpad is one buffer per thread, grown for the primitives
// created on that thread; a primitive created on one dag worker and run on
// another would use the other thread's buffer, which may be too small or in
// use by a concurrently running op (oneDNN documents that such primitives
// "cannot migrate between threads"), and its results then vary from run to
// run.
dnnl::primitive_attr UserScratchpadAttr();

}  // namespace doppio
