// libFuzzer target: the frame-header parser and the handshake's checks, fed
// arbitrary bytes as a server and a client would read them off the wire.
// Properties: no crash or sanitizer report; a header that parses re-encodes
// to the same 48 bytes; accepted payload lengths respect the limits; a
// forged handshake never authenticates.
#include <typeflow/distributed/frame.hpp>
#include <typeflow/distributed/handshake.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace tfd = typeflow::dist;

namespace {
/// Reads one frame from [p, end): header, then payload if present and allowed.
bool next_frame(const std::byte*& p, const std::byte* end, std::size_t max_payload, tfd::frame_header& h,
                const std::byte*& payload) {
    if (end - p < static_cast<std::ptrdiff_t>(tfd::frame_header_size)) return false;
    auto r = tfd::parse_header(p, max_payload);
    if (!r.ok) {
        if (r.reason.empty()) __builtin_trap();
        return false;
    }
    auto again = tfd::encode_header(r.header);
    if (std::memcmp(again.data(), p, tfd::frame_header_size) != 0) __builtin_trap();
    (void)tfd::describe(r.header);
    h = r.header;
    if (h.type == tfd::frame_type::data && h.length > max_payload) __builtin_trap();
    if (h.type != tfd::frame_type::data && h.length > tfd::max_control_bytes) __builtin_trap();
    p += tfd::frame_header_size;
    if (static_cast<std::uint64_t>(end - p) < h.length) return false; // truncated
    payload = p;
    p += h.length;
    return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto* p = reinterpret_cast<const std::byte*>(data);
    const auto* end = p + size;
    const std::size_t max_payload = size > 0 ? (std::size_t{1} << (data[0] % 40)) : 1024;
    static const std::string secret = "fuzz-secret";
    static const tfd::handshake::nonce ns = [] {
        tfd::handshake::nonce n{};
        for (std::size_t i = 0; i < n.size(); ++i) n[i] = std::byte(i * 7);
        return n;
    }();

    // Server side: hello, then response.
    {
        const std::byte* q = p;
        tfd::frame_header h;
        const std::byte* payload = nullptr;
        if (next_frame(q, end, 0, h, payload)) {
            std::uint32_t rank = 0;
            tfd::handshake::nonce nc{};
            if (!tfd::handshake::check_hello(h, payload, 4, rank, nc)) {
                if (rank >= 4) __builtin_trap();
                if (next_frame(q, end, 0, h, payload)) {
                    // The fuzzer cannot know the secret: a response must never verify...
                    auto bad = tfd::handshake::check_response(h, payload, secret, nc, ns, rank);
                    if (!bad) {
                        // ...unless it is the genuine proof (impossible without the secret).
                        auto proof = tfd::handshake::client_proof(secret, ns, nc, rank);
                        if (std::memcmp(proof.data(), payload, proof.size()) != 0) __builtin_trap();
                    }
                }
            }
        }
    }
    // Client side: a challenge (or an abort) from a server.
    {
        const std::byte* q = p;
        tfd::frame_header h;
        const std::byte* payload = nullptr;
        if (next_frame(q, end, 0, h, payload)) {
            tfd::handshake::nonce got{};
            (void)tfd::handshake::check_challenge(h, payload, secret, ns, 1, got);
        }
    }
    // Data path: a stream of frames as the transport's reader consumes them.
    {
        const std::byte* q = p;
        tfd::frame_header h;
        const std::byte* payload = nullptr;
        while (next_frame(q, end, max_payload, h, payload)) {
        }
    }
    return 0;
}
