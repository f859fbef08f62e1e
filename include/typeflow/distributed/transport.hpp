#pragma once
// typeflow::dist::transport — authenticated, framed TCP connections to every
// other task of a cluster (full mesh, bootstrapped through the chief), with
// heartbeats and deadlines. Collectives are built on its send/recv.

#include <typeflow/distributed/cluster_spec.hpp>
#include <typeflow/distributed/config.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/frame.hpp>
#include <typeflow/distributed/log.hpp>
#include <typeflow/distributed/options.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace typeflow::dist {

namespace detail {
struct req_state;
struct transport_impl;
} // namespace detail

/// Counters of a transport, for tests and tuning.
struct transport_stats {
    std::uint64_t data_frames_sent = 0;
    std::uint64_t data_frames_received = 0;
    /// Data frames that arrived before their receive was posted (copied once).
    std::uint64_t unexpected_frames = 0;
    std::uint64_t heartbeats_sent = 0;
    /// Waits for a frame that spun and ended while spinning / that spun and
    /// then slept (the peer was slower than the budget, or this thread lost
    /// its core while spinning).
    std::uint64_t spin_hits = 0;
    std::uint64_t spin_misses = 0;
    /// The current spin budget (see transport_options::adaptive_spin).
    std::chrono::microseconds spin_budget{0};
};

/// A send or receive in flight; complete it with `transport::wait`.
using request = std::shared_ptr<detail::req_state>;

/// Connections from this task to every other task of the cluster.
///
/// Construction bootstraps: every task connects to the chief's address
/// (rendezvous, one message each way per task), then to every lower-ranked
/// task; each connection is authenticated with HMAC-SHA256 over the shared
/// secret. Receives, heartbeats and bootstrap run on one internal I/O thread;
/// data frames are written by the thread that calls `send`, long ones by a
/// sender thread. Any failure (a peer that dies,
/// goes silent for `heartbeat_timeout`, sends a bad or unexpected frame, or a
/// deadline that passes) fails the transport for good: every pending and
/// later operation throws `error` naming the peer, and the other tasks are
/// told (abort frame), unless that peer was marked with `tolerate_loss`:
/// then only that peer is dropped (its requests throw `peer_lost`) and the
/// transport goes on with the others. Destruction says goodbye to every peer.
class transport {
public:
    /// Bootstraps from a spec; throws `error` on timeout or refusal.
    explicit transport(const cluster_spec& spec);
    ~transport();
    transport(const transport&) = delete;
    transport& operator=(const transport&) = delete;

    int rank() const noexcept;
    int size() const noexcept;
    /// Communicator generation, chosen by the chief; carried by every data frame.
    std::uint32_t epoch() const noexcept;
    const transport_options& options() const noexcept;
    /// The cluster this transport connects (its tasks' roles and addresses as given).
    const cluster_spec& spec() const noexcept;
    /// "worker:2 (rank 3, 127.0.0.1:5003)"
    const std::string& peer_name(int rank) const;
    /// Time the constructor took to be connected to every peer.
    std::chrono::steady_clock::duration bootstrap_time() const noexcept;

    /// Starts sending a data frame `h` followed by `h.length` bytes read
    /// straight from `payload` (no copy); `payload` must stay valid and
    /// unchanged until the request completes.
    ///
    /// A frame shorter than `send_thread_bytes` is written by the calling
    /// thread itself (no hand-off), so the request is normally complete on
    /// return; while the peer's socket is full it waits for room until
    /// `deadline` (default: now + op_timeout), which fails the transport
    /// when it passes. Longer frames (and any frame behind them to the same
    /// peer) are queued to the transport's sender thread, which writes them
    /// in order under the same deadline while the caller goes on; `wait`
    /// on such a request reads the caller's sockets until it is written.
    request send(int peer, const frame_header& h, const void* payload);
    request send(int peer, const frame_header& h, const void* payload, std::chrono::steady_clock::time_point deadline);
    /// As above, but `prepare` fills the payload first: on the sender thread
    /// when the frame goes there (so the caller goes on meanwhile), else at
    /// once. The payload counts as in flight (no receive lands in it) from
    /// this call on. `prepare` does not run once the transport has failed.
    request send(int peer, const frame_header& h, const void* payload, std::chrono::steady_clock::time_point deadline,
                 std::function<void()> prepare);
    /// Starts receiving the next data frame from `peer` into `payload`. The
    /// frame's header must equal `expected`, else the transport fails with a
    /// mismatch error naming both headers. Bytes still being read by a queued
    /// send are never overwritten: such a frame is held until the send is done.
    request recv(int peer, const frame_header& expected, void* payload);
    /// As above, but the payload is not stored: `consume(offset, bytes, n)`
    /// is called with each piece as it is read (in order, each byte once,
    /// while the piece is still in cache; whole elements of `expected`'s
    /// dtype at addresses aligned for it), so a reduction runs on the
    /// arriving data without a pass over a receive buffer. `payload` names
    /// the `expected.length` bytes that `consume` writes (held back, like a
    /// receive's, while a queued send still reads them). `consume` may run
    /// on any of the transport's threads before the request completes.
    request recv(int peer, const frame_header& expected, void* payload,
                 std::function<void(std::size_t, const std::byte*, std::size_t)> consume);
    /// Blocks until `r` completes; throws `error` if the transport failed or
    /// `deadline` passed (which fails the transport), `peer_lost` if its
    /// peer was dropped.
    void wait(const request& r, std::chrono::steady_clock::time_point deadline);

    /// Counters so far.
    transport_stats stats() const noexcept;
    /// True once `r` has completed (never blocks).
    bool done(const request& r) const noexcept;
    /// Like `done`, but makes progress first without blocking: a receive
    /// whose peer's socket this thread reads (after a wait, a receive posted
    /// takes it over) reads what has arrived. For waiting on several peers at
    /// once: poll `test` over them (`done` alone would see such a receive
    /// only when the heartbeat tick hands the socket back). Throws `error`
    /// once the transport has failed, `peer_lost` once `r`'s peer is dropped.
    bool test(const request& r);

    /// From now on, a failure of `peer` (it dies, goes silent for
    /// heartbeat_timeout, sends a bad or mismatched frame or an abort, or a
    /// send to it passes its deadline) drops that peer only: it is logged,
    /// its connection closed, its pending and later requests complete with
    /// `peer_lost` (on `wait` and `test`), and every other peer is served
    /// as before. For peers a task can do without (a parameter server's
    /// workers in asynchronous or backup-worker training). `false` restores
    /// the default for a peer not yet dropped.
    void tolerate_loss(int peer, bool tolerate = true);
    /// Drops `peer` now, telling it `reason` (it fails with "aborted by
    /// <this task>: <reason>"), as a failure of a tolerated peer would.
    /// For a peer that sent input this task refuses. Returns once dropped.
    void drop(int peer, const std::string& reason);
    /// True once `peer` has been dropped.
    bool lost(int peer) const;
    /// Why `peer` was dropped; empty while it is not.
    std::string loss(int peer) const;

    /// Fails the transport with `reason` and tells the peers. Idempotent.
    void abort(const std::string& reason);
    bool failed() const noexcept;
    /// The failure reason, empty while healthy.
    std::string failure() const;

private:
    std::unique_ptr<detail::transport_impl> impl_;
};

} // namespace typeflow::dist

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/transport.ipp>
#endif
