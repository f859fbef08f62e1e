#pragma once
// The wire frame: a fixed 48-byte little-endian header, then `length` bytes
// of payload. See docs/dist.md for the layout.

#include <typeflow/distributed/config.hpp>
#include <typeflow/distributed/reduce_op.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace typeflow::dist {

/// "TFLW" read as a little-endian 32-bit integer.
inline constexpr std::uint32_t frame_magic = 0x574C4654u;
/// Version of the wire protocol this build speaks.
inline constexpr std::uint16_t frame_version = 1;
/// Bytes in every frame header.
inline constexpr std::size_t frame_header_size = 48;
/// Largest payload of an abort frame (its UTF-8 reason).
inline constexpr std::size_t max_abort_bytes = 4096;
/// Largest payload of a control frame (Cereal-serialised message).
inline constexpr std::size_t max_control_bytes = 64 * 1024;

/// Wire code of a dtype (a data frame's dtype byte): float32 1, float64 2,
/// int32 3, int64 4, bool 5; 0 for a value that names no dtype. (Code 5 was
/// uint8, a 1-byte element like bool, before the runtime took the library's
/// dtype; see docs/dist.md.)
constexpr std::uint8_t wire_code(dtype t) noexcept {
    switch (t) {
    case dtype::float32: return 1;
    case dtype::float64: return 2;
    case dtype::int32: return 3;
    case dtype::int64: return 4;
    case dtype::boolean: return 5;
    }
    return 0;
}

/// The dtype of a wire code; nullopt for an unknown code.
constexpr std::optional<dtype> dtype_of_wire(std::uint8_t code) noexcept {
    for (dtype t : all_dtypes)
        if (code != 0 && wire_code(t) == code) return t;
    return std::nullopt;
}

static_assert(sizeof(bool) == 1, "typeflow::dist sends bool elements as one byte each");

/// What a frame carries. Values are wire codes.
enum class frame_type : std::uint8_t {
    hello = 1,     ///< client -> server: nonce; seq = claimed rank, epoch = client epoch
    challenge = 2, ///< server -> client: server nonce + server's HMAC
    response = 3,  ///< client -> server: client's HMAC
    accept = 4,    ///< server -> client: authenticated
    data = 5,      ///< a slice of a collective's buffer
    heartbeat = 6, ///< liveness, no payload
    control = 7,   ///< small Cereal-serialised control message
    abort = 8,     ///< sender failed; payload is the reason
    goodbye = 9,   ///< sender is shutting down cleanly
};

/// The operation a data frame belongs to. Values are wire codes.
enum class op_code : std::uint8_t {
    none = 0,
    all_reduce = 1,
    broadcast = 2,
    all_gather = 3,
    reduce_scatter = 4,
    barrier = 5,
    send = 6,
    pull = 7,  ///< parameter servers: a worker's request (tag, fingerprint), then the ps's values
    push = 8,  ///< parameter servers: a worker's example count and loss, then its gradients
};

/// "all_reduce", ...
std::string_view name_of(op_code op) noexcept;
/// "data", "heartbeat", ...
std::string_view name_of(frame_type t) noexcept;

/// A decoded frame header.
struct frame_header {
    frame_type type = frame_type::heartbeat;
    op_code op = op_code::none;
    std::uint8_t dtype_code = 0;  ///< wire_code() of a dtype for data frames, else 0
    std::uint8_t reduce_code = 0; ///< a reduce_op for reducing data frames, else 0
    std::uint32_t epoch = 0;      ///< communicator generation
    std::uint64_t seq = 0;        ///< collective sequence number (data frames); claimed rank (hello)
    std::uint64_t count = 0;      ///< elements in the whole collective buffer (data frames)
    std::uint64_t offset = 0;     ///< element offset of this payload in that buffer (data frames)
    std::uint64_t length = 0;     ///< payload bytes that follow the header
    friend bool operator==(const frame_header&, const frame_header&) = default;
};

/// Writes the 48 header bytes.
void encode_header(const frame_header& h, std::byte* out) noexcept;
inline std::array<std::byte, frame_header_size> encode_header(const frame_header& h) noexcept {
    std::array<std::byte, frame_header_size> a{};
    encode_header(h, a.data());
    return a;
}

/// Result of parsing a header: `ok` and the header, or the reason it was refused.
struct header_result {
    bool ok = false;
    frame_header header;
    std::string reason;
};

/// Decodes and validates 48 header bytes: magic, version, known type, zero
/// reserved bytes, payload length within `max_payload` (and the per-type
/// limits), and for data frames a known op, dtype, reduction, a length that is
/// a whole number of elements lying inside [0, count).
header_result parse_header(const std::byte* in, std::size_t max_payload);

/// One line describing a header, for error messages.
std::string describe(const frame_header& h);

} // namespace typeflow::dist

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/frame.ipp>
#endif
