#pragma once
// Tunables of the transport and collectives (timeouts, limits, chunking).

#include <chrono>
#include <cstddef>

namespace typeflow::dist {

/// Limits and deadlines of one communicator. Every blocking operation is
/// bounded by one of these.
struct transport_options {
    /// A peer from which nothing (data or heartbeat) arrives for this long is
    /// declared dead. Heartbeats are sent every quarter of it.
    std::chrono::milliseconds heartbeat_timeout{10000};
    /// Rendezvous and mesh connection must finish within this.
    std::chrono::milliseconds connect_timeout{60000};
    /// Each side of the authentication handshake must finish within this.
    std::chrono::milliseconds handshake_timeout{5000};
    /// Default deadline of one collective call.
    std::chrono::milliseconds op_timeout{600000};
    /// A wait spins (yielding) this long before it sleeps; lowers latency of
    /// small messages at the cost of CPU.
    std::chrono::microseconds spin_wait{20};
    /// Frames of at most this many bytes are read from the socket by the
    /// thread that waits for them (no hand-off between threads; default:
    /// every frame); longer frames are read by the I/O thread, overlapping
    /// with the caller's reductions and sends (can help with spare cores).
    std::size_t caller_read_bytes = ~std::size_t{0};
    /// Data frames of at least this many payload bytes are written by the
    /// transport's sender thread (started on first use) instead of the
    /// thread that calls `send`: the caller goes on receiving and reducing
    /// while the frame is written, so sending, receiving and reducing
    /// overlap. Shorter frames are written by the caller (no hand-off);
    /// frames to one peer always leave in the order they were sent.
    std::size_t send_thread_bytes = std::size_t{256} << 10;
    /// Largest payload of one frame; longer frames are refused.
    std::size_t max_frame_bytes = std::size_t{64} << 20;
    /// Collectives cut buffers into frames of at most this many bytes.
    std::size_t segment_bytes = std::size_t{1} << 20;
    /// Data that arrives before its receive is posted is buffered up to this
    /// many bytes per peer; beyond it the connection stops reading.
    std::size_t max_unexpected_bytes = std::size_t{256} << 20;
};

} // namespace typeflow::dist
