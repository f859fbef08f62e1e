#pragma once
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/handshake.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

namespace typeflow::dist::handshake {

TYPEFLOW_DIST_DECL nonce make_nonce() {
    nonce n;
    if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1)
        throw error("OpenSSL RAND_bytes failed");
    return n;
}

namespace detail {
TYPEFLOW_DIST_DECL mac proof(std::string_view label, std::string_view secret, const nonce& a, const nonce& b, std::uint32_t rank) {
    unsigned char msg[32 + 64 + 4];
    std::size_t n = 0;
    std::memcpy(msg, label.data(), label.size());
    n += label.size();
    std::memcpy(msg + n, a.data(), 32);
    n += 32;
    std::memcpy(msg + n, b.data(), 32);
    n += 32;
    for (int i = 0; i < 4; ++i) msg[n++] = static_cast<unsigned char>((rank >> (8 * i)) & 0xff);
    mac out{};
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg, n,
              reinterpret_cast<unsigned char*>(out.data()), &len) ||
        len != out.size())
        throw error("OpenSSL HMAC-SHA256 failed");
    return out;
}
} // namespace detail

TYPEFLOW_DIST_DECL mac server_proof(std::string_view secret, const nonce& nc, const nonce& ns, std::uint32_t rank) {
    return detail::proof("typeflow-1 server", secret, nc, ns, rank);
}

TYPEFLOW_DIST_DECL mac client_proof(std::string_view secret, const nonce& ns, const nonce& nc, std::uint32_t rank) {
    return detail::proof("typeflow-1 client", secret, ns, nc, rank);
}

TYPEFLOW_DIST_DECL bool equal(const mac& a, const std::byte* b) noexcept { return CRYPTO_memcmp(a.data(), b, a.size()) == 0; }

TYPEFLOW_DIST_DECL check check_hello(const frame_header& h, const std::byte* payload, int world_size, std::uint32_t& rank,
                                     nonce& nc) {
    if (h.type != frame_type::hello)
        return "expected a hello frame, got " + std::string(name_of(h.type));
    if (h.length != nc.size()) return std::string("hello with wrong payload length");
    if (h.seq >= static_cast<std::uint64_t>(world_size))
        return "hello claims rank " + std::to_string(h.seq) + " outside 0.." + std::to_string(world_size - 1);
    rank = static_cast<std::uint32_t>(h.seq);
    std::memcpy(nc.data(), payload, nc.size());
    return std::nullopt;
}

TYPEFLOW_DIST_DECL check check_challenge(const frame_header& h, const std::byte* payload, std::string_view secret,
                                         const nonce& nc, std::uint32_t rank, nonce& ns) {
    if (h.type == frame_type::abort) return "server refused: " + std::string(reinterpret_cast<const char*>(payload), h.length);
    if (h.type != frame_type::challenge)
        return "expected a challenge frame, got " + std::string(name_of(h.type));
    if (h.length != 64) return std::string("challenge with wrong payload length");
    std::memcpy(ns.data(), payload, ns.size());
    if (!equal(server_proof(secret, nc, ns, rank), payload + 32))
        return std::string("server failed authentication (wrong shared secret?)");
    return std::nullopt;
}

TYPEFLOW_DIST_DECL check check_response(const frame_header& h, const std::byte* payload, std::string_view secret,
                                        const nonce& nc, const nonce& ns, std::uint32_t rank) {
    if (h.type != frame_type::response)
        return "expected a response frame, got " + std::string(name_of(h.type));
    if (h.length != 32) return std::string("response with wrong payload length");
    if (!equal(client_proof(secret, ns, nc, rank), payload))
        return std::string("client failed authentication (wrong shared secret?)");
    return std::nullopt;
}

} // namespace typeflow::dist::handshake
