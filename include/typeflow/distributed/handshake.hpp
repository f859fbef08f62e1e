#pragma once
// The authentication handshake as pure functions over frames, so it can be
// tested and fuzzed without sockets. HMAC-SHA256 over a shared secret.
//
//   client -> server  hello     (count = client rank, epoch; payload: client nonce, 32 bytes)
//   server -> client  challenge (payload: server nonce, HMAC(k, "typeflow-1 server" | nc | ns | rank))
//   client -> server  response  (payload: HMAC(k, "typeflow-1 client" | ns | nc | rank))
//   server -> client  accept    (or abort with a reason)

#include <typeflow/distributed/config.hpp>
#include <typeflow/distributed/frame.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace typeflow::dist::handshake {

using nonce = std::array<std::byte, 32>;
using mac = std::array<std::byte, 32>;

/// A fresh random nonce (OpenSSL RAND_bytes); throws `error` on failure.
nonce make_nonce();

/// HMAC-SHA256 proof the server sends for (client nonce, server nonce, client rank).
mac server_proof(std::string_view secret, const nonce& nc, const nonce& ns, std::uint32_t rank);
/// HMAC-SHA256 proof the client sends.
mac client_proof(std::string_view secret, const nonce& ns, const nonce& nc, std::uint32_t rank);

/// Constant-time comparison.
bool equal(const mac& a, const std::byte* b) noexcept;

/// Outcome of checking one handshake step: empty on success, else the reason.
using check = std::optional<std::string>;

/// Server: checks a parsed hello header and its payload; on success stores
/// the client's rank and nonce.
check check_hello(const frame_header& h, const std::byte* payload, int world_size, std::uint32_t& rank, nonce& nc);
/// Client: checks the server's challenge; on success stores the server nonce.
check check_challenge(const frame_header& h, const std::byte* payload, std::string_view secret, const nonce& nc,
                      std::uint32_t rank, nonce& ns);
/// Server: checks the client's response.
check check_response(const frame_header& h, const std::byte* payload, std::string_view secret, const nonce& nc,
                     const nonce& ns, std::uint32_t rank);

} // namespace typeflow::dist::handshake

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/handshake.ipp>
#endif
