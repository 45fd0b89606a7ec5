// JSON text for the files Doppio writes itself (traces, flight-recorder
// dumps): one escaping rule in one place.
#pragma once

#include <string>

namespace doppio {

// `text` as a JSON string literal, quotes included: ", \ and control
// characters escaped; other bytes (UTF-8) kept as they are.
std::string JsonString(const std::string& text);

}  // namespace doppio
