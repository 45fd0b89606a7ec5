// An op's random generator as text and back, for checkpoints that resume
// exactly (doppio.distributed.Checkpointer saves each rank's nets' states):
// the standard library's own textual form of std::mt19937, which restores
// the generator to the same point in its sequence.
#pragma once

#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "core/enforce.h"

namespace doppio {

// "" for a generator not made yet (the op has drawn nothing).
inline std::string GeneratorState(const std::unique_ptr<std::mt19937>& generator) {
  if (!generator) return "";
  std::ostringstream text;
  text << *generator;
  return text.str();
}

// Sets `generator` to `state` (GeneratorState's); "" forgets it, so the op
// seeds a new one on its first draw, as it would have. Throws on text that
// is no generator state, leaving `generator` as it was.
inline void SetGeneratorState(const std::string& state, std::unique_ptr<std::mt19937>* generator) {
  if (state.empty()) {
    generator->reset();
    return;
  }
  auto restored = std::make_unique<std::mt19937>();
  std::istringstream text(state);
  text >> *restored;
  DOPPIO_ENFORCE(!text.fail(), "not a random generator state (", state.size(), " bytes)");
  *generator = std::move(restored);
}

}  // namespace doppio
