#pragma once
// Tunables of the transport and collectives (timeouts, limits, chunking).

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace typeflow::dist {

/// Limits and deadlines of one communicator. Every blocking operation is
/// bounded by one of these.
///
/// Allowed ranges (inclusive), checked by `cluster_spec::parse` (the JSON
/// keys in parentheses) and again by the transport's constructor, so options
/// set in code are held to the same bounds (an `error` names the field and
/// the range):
///   heartbeat_timeout, connect_timeout, handshake_timeout, op_timeout
///     (`*_ms`): 1 .. max_duration_count ms (about 24.8 days);
///   spin_wait (`spin_wait_us`): 0 .. max_duration_count us (0: never spin);
///   max_frame_bytes, max_unexpected_bytes: 1 .. max_buffer_bytes (1 TiB);
///   segment_bytes: 1 .. max_frame_bytes;
///   caller_read_bytes, send_thread_bytes: 1 .. SIZE_MAX (thresholds only).
/// The bounds keep every deadline (`now + timeout`) and every conversion to
/// nanoseconds far from overflow.
struct transport_options {
    /// Largest count of every duration option, in its own unit (2^31 - 1,
    /// the longest timeout `poll` takes).
    static constexpr std::int64_t max_duration_count = 2147483647;
    /// Largest max_frame_bytes and max_unexpected_bytes (1 TiB): sums of
    /// buffered bytes stay far from overflow.
    static constexpr std::uint64_t max_buffer_bytes = std::uint64_t{1} << 40;

    /// A peer from which nothing (data or heartbeat) arrives for this long is
    /// declared dead. Heartbeats are sent every quarter of it.
    std::chrono::milliseconds heartbeat_timeout{10000};
    /// Rendezvous and mesh connection must finish within this.
    std::chrono::milliseconds connect_timeout{60000};
    /// Each side of the authentication handshake must finish within this.
    std::chrono::milliseconds handshake_timeout{5000};
    /// Default deadline of one collective call.
    std::chrono::milliseconds op_timeout{600000};
    /// Longest a caller waiting for a frame polls its socket (non-blocking
    /// `recv`, `sched_yield` in between so a task sharing the core, perhaps
    /// the peer, runs) before it sleeps in `poll`: a peer answers a small
    /// message within microseconds, and sleeping would cost a wake-up (on a
    /// virtual machine an idle vCPU's wake-up costs tens of microseconds).
    /// With `adaptive_spin` this bounds an adaptive budget.
    std::chrono::microseconds spin_wait{100};
    /// Adapt the spin budget to what spinning achieves (default): it doubles
    /// (up to `spin_wait`) after a wait that ended while spinning and halves
    /// after a wait that outlasted it, so a task whose peers are slow (long
    /// frames, uneven work, more tasks than cores) soon stops burning CPU
    /// that the others need; at a budget of zero every 64th wait spins
    /// 10 us to find out whether spinning pays again. false: every wait
    /// spins the whole `spin_wait` first.
    bool adaptive_spin = true;
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
