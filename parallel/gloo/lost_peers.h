// Which peer a failed Gloo collective lost. Gloo's text names the peer only
// by address ("Connection closed by peer [127.0.0.1]:23169"); a person
// reading a dead job's log wants the rank.
#pragma once

#include <exception>
#include <string>

#include <gloo/context.h>

namespace doppio {

// The peers of `world` whose connections failed, ranks first:
// "lost rank 1 (127.0.0.1:23169)" or "lost ranks 1 (...), 3 (...)", the
// rank whose failure `error` is listed first. A pair fails when its peer
// died, closed the connection, or stayed silent past the world's timeout
// (Gloo then fails the pair that timed out). "no peer identified" when no
// pair failed and `error` names no peer's address; "" when the world's
// pairs cannot be inspected. Never throws.
std::string DescribeLostPeers(gloo::Context& world, const std::exception& error) noexcept;

}  // namespace doppio
