#pragma once
// Non-template implementation of typeflow::dist::transport (Asio style:
// inline, or compiled once under TYPEFLOW_SEPARATE_COMPILATION; see
// typeflow/distributed/config.hpp): the public members below, over
// detail::transport_impl, whose code is split by concern:
//   transport_impl.ipp       the state: requests, peers, transport_impl (threading notes)
//   transport_failure.ipp    completing requests; failing the transport
//   transport_bootstrap.ipp  rendezvous, handshake, mesh connection
//   transport_recv.ipp       reading: the frame parser, the I/O thread's reader, delivery
//   transport_send.ipp       writing: caller writes, asio writes, the sender thread
//   transport_wait.ipp       a caller's wait: spinning, reading its own sockets, sleeping
//   transport_heartbeat.ipp  heartbeats, dead peers, shutdown

#include <typeflow/distributed/impl/transport_impl.ipp>
#include <typeflow/distributed/impl/transport_failure.ipp>
#include <typeflow/distributed/impl/transport_bootstrap.ipp>
#include <typeflow/distributed/impl/transport_recv.ipp>
#include <typeflow/distributed/impl/transport_send.ipp>
#include <typeflow/distributed/impl/transport_wait.ipp>
#include <typeflow/distributed/impl/transport_heartbeat.ipp>

namespace typeflow::dist {

TYPEFLOW_DIST_DECL transport::transport(const cluster_spec& spec) : impl_(std::make_unique<detail::transport_impl>(spec)) {
    try {
        impl_->start();
    } catch (...) {
        impl_->closing.store(true);
        impl_->shutdown();
        throw;
    }
}

TYPEFLOW_DIST_DECL transport::~transport() {
    if (impl_) impl_->shutdown();
}

TYPEFLOW_DIST_DECL int transport::rank() const noexcept { return impl_->rank; }
TYPEFLOW_DIST_DECL int transport::size() const noexcept { return impl_->size; }
TYPEFLOW_DIST_DECL std::uint32_t transport::epoch() const noexcept { return impl_->epoch; }
TYPEFLOW_DIST_DECL const transport_options& transport::options() const noexcept { return impl_->opt; }
TYPEFLOW_DIST_DECL const cluster_spec& transport::spec() const noexcept { return impl_->spec; }
TYPEFLOW_DIST_DECL const std::string& transport::peer_name(int r) const { return impl_->names.at(static_cast<std::size_t>(r)); }
TYPEFLOW_DIST_DECL std::chrono::steady_clock::duration transport::bootstrap_time() const noexcept { return impl_->bootstrap_duration; }

TYPEFLOW_DIST_DECL request transport::send(int peer, const frame_header& h, const void* payload) {
    return send(peer, h, payload, std::chrono::steady_clock::now() + impl_->opt.op_timeout);
}

TYPEFLOW_DIST_DECL request transport::send(int peer, const frame_header& h, const void* payload,
                                           std::chrono::steady_clock::time_point deadline) {
    return send(peer, h, payload, deadline, {});
}

TYPEFLOW_DIST_DECL request transport::send(int peer, const frame_header& h, const void* payload,
                                           std::chrono::steady_clock::time_point deadline, std::function<void()> prepare) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("send: bad peer rank " + std::to_string(peer));
    if (failed()) throw error(failure());
    auto r = std::make_shared<detail::req_state>();
    r->h = h;
    r->h.type = frame_type::data;
    encode_header(r->h, r->wire.data());
    r->src = payload;
    r->peer = peer;
    r->is_send = true;
    auto& p = *impl_->peers[static_cast<std::size_t>(peer)];
    if (p.lost.load()) { // dropped: completes at once, `wait` throws peer_lost
        r->state.store(2, std::memory_order_release);
        return r;
    }
    if (impl_->use_sender(p, *r)) { // written by the sender thread
        r->deadline = deadline;
        r->queued = true;
        r->prepare = std::move(prepare);
        impl_->queue_send(p, r);
        return r;
    }
    if (prepare) prepare();
    // Written here, by the calling thread; on failure the request stays
    // pending and `wait` reports the transport's failure.
    if (impl_->caller_write(p, *r, deadline)) r->state.store(1, std::memory_order_release);
    else impl_->note_unsent(p, r);
    return r;
}

TYPEFLOW_DIST_DECL request transport::recv(int peer, const frame_header& expected, void* payload) { return recv(peer, expected, payload, {}); }

TYPEFLOW_DIST_DECL request transport::recv(int peer, const frame_header& expected, void* payload,
                                           std::function<void(std::size_t, const std::byte*, std::size_t)> consume) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("recv: bad peer rank " + std::to_string(peer));
    if (failed()) throw error(failure());
    auto r = std::make_shared<detail::req_state>();
    r->h = expected;
    r->h.type = frame_type::data;
    r->dst = payload;
    r->peer = peer;
    r->consume = std::move(consume);
    // Posted by the calling thread itself (no hand-off to the I/O thread).
    impl_->post_recv(*impl_->peers[static_cast<std::size_t>(peer)], r);
    return r;
}

TYPEFLOW_DIST_DECL void transport::wait(const request& r, std::chrono::steady_clock::time_point deadline) {
    impl_->wait(r, deadline);
    if (r->state.load(std::memory_order_acquire) == 2) impl_->throw_lost(r->peer);
}

TYPEFLOW_DIST_DECL transport_stats transport::stats() const noexcept {
    transport_stats s;
    s.data_frames_sent = impl_->n_sent.load();
    s.data_frames_received = impl_->n_received.load();
    s.unexpected_frames = impl_->n_unexpected.load();
    s.heartbeats_sent = impl_->n_heartbeats.load();
    s.spin_hits = impl_->n_spin_hits.load();
    s.spin_misses = impl_->n_spin_misses.load();
    s.spin_budget = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::nanoseconds(impl_->spin_budget_ns.load(std::memory_order_relaxed)));
    return s;
}

TYPEFLOW_DIST_DECL bool transport::done(const request& r) const noexcept { return r->state.load(std::memory_order_acquire) != 0; }
TYPEFLOW_DIST_DECL bool transport::test(const request& r) {
    const bool d = impl_->test(r);
    if (d && r->state.load(std::memory_order_acquire) == 2) impl_->throw_lost(r->peer);
    return d;
}

TYPEFLOW_DIST_DECL void transport::tolerate_loss(int peer, bool tolerate) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("tolerate_loss: bad peer rank " + std::to_string(peer));
    impl_->peers[static_cast<std::size_t>(peer)]->expendable.store(tolerate);
}

TYPEFLOW_DIST_DECL void transport::drop(int peer, const std::string& reason) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("drop: bad peer rank " + std::to_string(peer));
    auto& p = *impl_->peers[static_cast<std::size_t>(peer)];
    auto* impl = impl_.get();
    boost::asio::post(impl->io, [impl, &p, reason] { impl->lose_peer(p, reason, true); });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!p.lost.load() && !failed() && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
}

TYPEFLOW_DIST_DECL bool transport::lost(int peer) const { return impl_->peers.at(static_cast<std::size_t>(peer))->lost.load(); }

TYPEFLOW_DIST_DECL std::string transport::loss(int peer) const {
    const auto& p = *impl_->peers.at(static_cast<std::size_t>(peer));
    std::lock_guard lk(impl_->mu);
    return p.lost_why;
}

TYPEFLOW_DIST_DECL void transport::abort(const std::string& reason) {
    if (!impl_->failed.load()) impl_->abort_from_caller(reason);
}

TYPEFLOW_DIST_DECL bool transport::failed() const noexcept { return impl_->failed.load(); }
TYPEFLOW_DIST_DECL std::string transport::failure() const { return impl_->failure(); }

} // namespace typeflow::dist
