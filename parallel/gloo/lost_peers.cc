#include "parallel/gloo/lost_peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <gloo/transport/tcp/pair.h>

namespace doppio {
namespace {

using TcpPair = gloo::transport::tcp::Pair;
using TcpAddress = gloo::transport::tcp::Address;

// tcp::Pair keeps its peer's address and its failure protected and offers
// no accessor. A derived class may form pointers to those members, and such
// a pointer applies to any tcp::Pair. Never instantiated.
class TcpPairInternals : public TcpPair {
 public:
  TcpPairInternals() = delete;

  static const TcpAddress& Peer(const TcpPair& pair) { return pair.*(&TcpPairInternals::peer_); }

  // The exception the pair failed with, or null. The device thread sets it
  // under the pair's mutex. That thread holds the mutex only briefly, but a
  // failure report must never hang: give up after a short wait.
  static std::exception_ptr Failure(TcpPair& pair) {
    std::mutex& mutex = pair.*(&TcpPairInternals::m_);
    std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
    for (int attempt = 0; attempt < 200 && !lock.try_lock(); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!lock.owns_lock()) return nullptr;
    return pair.*(&TcpPairInternals::ex_);
  }
};

// "127.0.0.1:23169" / "[::1]:23169". Gloo's own str(), the one in its error
// texts, prints the port without converting it from network byte order, so
// its number matches no socket that ss or netstat lists.
std::string FormatAddress(const TcpAddress& address) {
  const sockaddr_storage& storage = address.getSockaddr();
  char host[INET6_ADDRSTRLEN] = {0};
  if (storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    if (::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)) != nullptr) {
      return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
    }
  } else if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)) != nullptr) {
      return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
  }
  return address.str();
}

// Whether `failure` holds the very exception being reported (Gloo rethrows
// the pair's stored exception object) or one with the same text.
bool IsSameFailure(const std::exception_ptr& failure, const std::exception& error) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& stored) {
    return &stored == &error || std::string(stored.what()) == error.what();
  } catch (...) {
  }
  return false;
}

struct Peer {
  int rank;
  std::string address;
};

std::string ListPeers(const std::vector<Peer>& peers) {
  std::string text = peers.size() == 1 ? "lost rank " : "lost ranks ";
  for (size_t i = 0; i < peers.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(peers[i].rank) + " (" + peers[i].address + ")";
  }
  return text;
}

}  // namespace

std::string DescribeLostPeers(gloo::Context& world, const std::exception& error) noexcept {
  try {
    std::vector<Peer> failed;  // the reported failure's pair first
    std::vector<Peer> named;   // pairs whose address the text contains
    const std::string text = error.what();
    for (int rank = 0; rank < world.size; ++rank) {
      if (rank == world.rank) continue;
      auto* pair = dynamic_cast<TcpPair*>(world.getPair(rank).get());
      if (pair == nullptr) return "";  // another transport, or not connected
      const TcpAddress& address = TcpPairInternals::Peer(*pair);
      Peer peer{rank, FormatAddress(address)};
      if (const std::exception_ptr failure = TcpPairInternals::Failure(*pair)) {
        if (IsSameFailure(failure, error)) {
          failed.insert(failed.begin(), peer);
        } else {
          failed.push_back(peer);
        }
      } else if (const std::string shown = address.str();
                 !shown.empty() && text.find(shown) != std::string::npos) {
        named.push_back(peer);
      }
    }
    if (!failed.empty()) return ListPeers(failed);
    if (!named.empty()) return ListPeers(named);
    return "no peer identified";
  } catch (...) {
    return "";
  }
}

}  // namespace doppio
