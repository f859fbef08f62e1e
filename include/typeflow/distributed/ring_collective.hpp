#pragma once
// typeflow::dist::ring_collective — collectives on CPU buffers over the TCP
// transport: pipelined ring algorithms with a fixed reduction order.

#include <typeflow/distributed/collective.hpp>
#include <typeflow/distributed/config.hpp>
#include <typeflow/distributed/transport.hpp>

#include <memory>
#include <vector>

namespace typeflow::dist {

/// Ring collectives over a transport.
///
/// all_reduce is a reduce-scatter then an all-gather around the ring
/// rank -> rank+1, each buffer cut into size() chunks and each chunk into
/// frames of at most `segment_bytes`. A received frame is reduced with the
/// local data piece by piece as it is read, while the piece is in cache
/// (no pass over a receive buffer); frames of at least
/// `transport_options::send_thread_bytes` are written by the transport's
/// sender thread while the caller receives and reduces the next ones.
/// The element i in chunk c is reduced in the fixed order
/// x[c+1], x[c+2], ..., x[c] (ranks mod size()) by one task, then copied to
/// all, so every task gets the same bits. mean is sum then division by size().
/// max/min propagate NaN.
///
/// Messages of at most `direct_bytes` (default 64 KiB) take a latency path
/// instead. When size() is a power of two, recursive doubling: log2(size())
/// exchanges with the task whose rank differs in one bit, each reducing
/// (lower half) op (upper half), so the result is ((x[0] op x[1]) op
/// (x[2] op x[3])) ... on every task. Otherwise one hop: every task sends
/// its buffer to every other and reduces all of them in rank order x[0],
/// x[1], ..., x[size()-1]. Either way the same bits everywhere.
class ring_collective final : public collective {
public:
    /// Uses `t`, which must outlive this object.
    explicit ring_collective(transport& t);
    /// Bootstraps and owns a transport.
    explicit ring_collective(const cluster_spec& spec);

    int rank() const noexcept override;
    int size() const noexcept override;
    void all_reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override;
    void broadcast(void* buf, std::size_t count, dtype t, int root) override;
    void all_gather(const void* in, void* out, std::size_t count, dtype t) override;
    void reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override;
    void barrier() override;
    void set_timeout(std::chrono::milliseconds t) override;
    using collective::all_reduce;
    using collective::broadcast;

    /// all_reduce of at most this many bytes uses the one-hop exchange (0: never).
    void set_direct_bytes(std::size_t bytes) noexcept { direct_bytes_ = bytes; }
    std::size_t direct_bytes() const noexcept { return direct_bytes_; }
    /// Largest frame payload the collectives send (default: transport_options::segment_bytes).
    void set_segment_bytes(std::size_t bytes);
    transport& get_transport() noexcept { return *t_; }

private:
    struct range {
        std::size_t begin, end;
    };
    void reduce_scatter_ring(const std::byte* in, std::byte* out, std::size_t total, dtype t, reduce_op op,
                             op_code code, bool gather_after, range (*chunk)(std::size_t, int, int, std::size_t),
                             std::size_t param);
    void all_gather_ring(std::byte* out, std::size_t total, dtype t, op_code code, std::uint8_t red,
                         range (*chunk)(std::size_t, int, int, std::size_t), std::size_t param);
    frame_header header(op_code code, dtype t, std::uint8_t red, std::size_t total, std::size_t off, std::size_t n) const;
    /// Deadline of the current collective (also stored for its sends).
    std::chrono::steady_clock::time_point deadline() const;
    request snd(int peer, const frame_header& h, const void* payload);
    // waits for r; a collective needs every task, so a peer the transport
    // has dropped (transport::tolerate_loss) fails the transport
    void wait_on(const request& r, std::chrono::steady_clock::time_point deadline);
    mutable std::chrono::steady_clock::time_point send_deadline_{};

    std::unique_ptr<transport> owned_;
    transport* t_;
    std::uint64_t seq_ = 0;
    std::chrono::milliseconds timeout_;
    std::size_t segment_bytes_;
    std::size_t direct_bytes_ = 64 * 1024;
    void all_reduce_direct(const void* in, void* out, std::size_t count, dtype t, reduce_op op);
    void all_reduce_doubling(const void* in, void* out, std::size_t count, dtype t, reduce_op op);
    std::vector<std::byte> scratch_;
};

} // namespace typeflow::dist

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/distributed/impl/ring_collective.ipp>
#endif
