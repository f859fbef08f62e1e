#pragma once
// transport_impl: completing requests, and failing the transport for good
// (`fail` on the I/O thread, `fail_any` and `abort_from_caller` elsewhere).

#include <typeflow/distributed/impl/transport_impl.ipp>

namespace typeflow::dist::detail {

TYPEFLOW_DIST_DECL void transport_impl::notify() {
    if (waiting.load() > 0) {
        std::lock_guard lk(mu);
        cv.notify_all();
    }
}

TYPEFLOW_DIST_DECL void transport_impl::complete(const std::shared_ptr<req_state>& r) {
    r->state.store(1);
    notify();
}

TYPEFLOW_DIST_DECL void transport_impl::raw_send(int fd, const void* data, std::size_t n) {
    // Best effort, never blocks: used only for abort/refusal frames.
    (void)::send(fd, data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

TYPEFLOW_DIST_DECL void transport_impl::raw_send(tcp::socket& s, const void* data, std::size_t n) { raw_send(s.native_handle(), data, n); }

TYPEFLOW_DIST_DECL std::vector<std::byte> transport_impl::abort_frame(const std::string& reason) {
    std::string r = reason.substr(0, max_abort_bytes);
    frame_header h;
    h.type = frame_type::abort;
    h.length = r.size();
    std::vector<std::byte> out(frame_header_size + r.size());
    encode_header(h, out.data());
    std::memcpy(out.data() + frame_header_size, r.data(), r.size());
    return out;
}

/// I/O thread only. Tells every connected peer why (an abort frame, sent
/// after a frame already being written so the stream stays whole), then
/// stops every socket operation and only then marks the transport failed,
/// so no user buffer is touched once a caller sees the failure.
TYPEFLOW_DIST_DECL void transport_impl::fail(const std::string& reason) {
    if (failing) return;
    failing = true;
    failing_flag.store(true);
    log(log_level::error, spec.task.name() + ": " + reason);
    {
        std::lock_guard lk(mu);
        failure_msg = reason;
    }
    abort_bytes = abort_frame(reason);
    bool wait_for_writes = false;
    for (auto& p : peers) {
        if (!p->sock || p->fd_closed.load()) continue;
        if (p->writing) wait_for_writes = true;
        else if (!p->wmu.try_lock()) wait_for_writes = true; // a caller is writing a frame
        else {
            send_abort(*p);
            p->wmu.unlock();
        }
    }
    for (auto& c : handshaking)
        if (auto s = c->s.lock(); s && !c->done && !c->writing && s->is_open())
            raw_send(*s, abort_bytes.data(), abort_bytes.size());
    if (!wait_for_writes) return finalize_failure();
    fail_timer.expires_after(std::chrono::milliseconds(200));
    fail_timer.async_wait([this](const error_code&) { finalize_failure(); });
}

/// Called when a write completes while failing.
TYPEFLOW_DIST_DECL void transport_impl::write_done_while_failing(peer_state& p, bool ok) {
    if (ok) send_abort(p);
    p.wmu.unlock();
    check_writes_quiet();
}

/// I/O thread, while failing, holding p.wmu: the abort frame, once.
TYPEFLOW_DIST_DECL void transport_impl::send_abort(peer_state& p) {
    if (p.abort_sent || p.goodbye_sent || p.write_broken.load() || !p.sock || p.fd_closed.load()) return;
    p.abort_sent = true;
    raw_send(p.fd, abort_bytes.data(), abort_bytes.size());
}

/// I/O thread, while failing: a caller finished (or gave up) writing to `p`.
TYPEFLOW_DIST_DECL void transport_impl::caller_write_done_while_failing(peer_state& p) {
    if (failed.load()) return;
    if (!p.writing && p.wmu.try_lock()) {
        send_abort(p);
        p.wmu.unlock();
    }
    check_writes_quiet();
}

TYPEFLOW_DIST_DECL void transport_impl::check_writes_quiet() {
    if (failed.load()) return;
    for (auto& q : peers)
        if (q->writing || q->caller_writing.load()) return;
    finalize_failure();
}

TYPEFLOW_DIST_DECL void transport_impl::finalize_failure() {
    if (failed.load()) return;
    for (auto& p : peers) {
        if (!p->sock || p->fd_closed.load()) continue;
        error_code ec;
        if (p->watched) p->sock->cancel(ec);
        ::shutdown(p->fd, SHUT_RDWR);
        p->wake->cancel();
    }
    if (acceptor) {
        error_code ec;
        acceptor->close(ec);
    }
    ticker.cancel();
    epoch_event.cancel();
    fail_timer.cancel();
    {
        std::lock_guard io_lk(sender_io_mu);
        std::lock_guard lk(mu);
        failed.store(true);
    }
    signal_send_done();
    std::lock_guard lk(mu);
    cv.notify_all();
}

TYPEFLOW_DIST_DECL void transport_impl::wait_failed() {
    std::unique_lock lk(mu);
    ++waiting;
    cv.wait_for(lk, std::chrono::seconds(5), [&] { return failed.load(); });
    --waiting;
}

TYPEFLOW_DIST_DECL std::string transport_impl::failure() {
    std::lock_guard lk(mu);
    return failure_msg;
}

TYPEFLOW_DIST_DECL void transport_impl::peer_lost(peer_state& p, const error_code& ec) {
    if (failing) return;
    if (p.goodbye_received) {
        p.eof = true;
        notify();
        return;
    }
    if (ec == asio::error::operation_aborted && closing.load()) return;
    if (p.lost.load()) return;
    fail_peer(p,
              p.name + (ec == asio::error::eof ? std::string(" closed the connection unexpectedly (process died?)")
                                               : " connection lost: " + ec.message()),
              false);
}

/// Any thread: a failure of peer `p` (`tell`: worth telling it why): drops
/// `p` alone if it may be lost, else fails the transport (at once on the
/// I/O thread). The drop runs as a handler of its own: never inside a read
/// of `p` (which holds p's read lock) or a delivery (which holds rq_mu).
TYPEFLOW_DIST_DECL void transport_impl::fail_peer(peer_state& p, const std::string& why, bool tell) {
    if (p.expendable.load()) asio::post(io, [this, &p, why, tell] { lose_peer(p, why, tell); });
    else fail_any(why);
}

/// I/O thread: drops peer `p` (see transport::tolerate_loss). Tells it why
/// when `tell` and no frame is being written to it, shuts its connection
/// down (a caller reading or writing it stops at once), and completes its
/// requests with state 2; the other peers are not touched.
TYPEFLOW_DIST_DECL void transport_impl::lose_peer(peer_state& p, const std::string& why, bool tell) {
    if (failing || p.lost.load()) return;
    {
        std::lock_guard lk(mu);
        p.lost_why = why;
    }
    // logged before the flag is set: whoever sees lost(rank) also finds the log line
    log(log_level::warning, spec.task.name() + ": dropped " + p.name + ", going on without it: " + why);
    p.lost.store(true);
    p.rx_closed.store(true);
    if (p.sock && !p.fd_closed.load()) {
        if (tell && !p.writing && !p.abort_sent && !p.write_broken.load() && p.wmu.try_lock()) {
            const auto b = abort_frame(why);
            raw_send(p.fd, b.data(), b.size());
            p.abort_sent = true;
            p.wmu.unlock();
        }
        ::shutdown(p.fd, SHUT_RDWR);
        error_code ec;
        if (p.watched) p.sock->cancel(ec);
    }
    p.wake->cancel();
    if (!p.writing) p.sendq.clear(); // heartbeats and the like: nobody waits for them
    fail_peer_requests(p);
}

/// I/O thread: completes every request of dropped peer `p` with state 2,
/// holding p's read lock (so no reader is filling one of them; a reader
/// holding it stops at once, its socket shut down: retried until it has).
TYPEFLOW_DIST_DECL void transport_impl::fail_peer_requests(peer_state& p) {
    if (!p.rmu.try_lock()) {
        auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(1));
        t->async_wait([this, &p, t](const error_code&) {
            if (!closing.load()) fail_peer_requests(p);
        });
        return;
    }
    p.rx_req.reset();
    p.rx_mode = rx_mode_header;
    {
        std::lock_guard lk(rq_mu);
        for (auto& r : p.recvq) r->state.store(2, std::memory_order_release);
        for (auto& r : p.unsent) r->state.store(2, std::memory_order_release);
        p.recvq.clear();
        p.unsent.clear();
        p.unexpected.clear();
        p.unexpected_bytes = 0;
    }
    p.rmu.unlock();
    signal_send_done();
    std::lock_guard lk(mu);
    cv.notify_all();
}

/// Caller or sender thread: send `r` to `p` was not written. If `p` has been
/// dropped it completes with state 2 now, else when `p` is dropped (a
/// failure of the whole transport is reported by `wait` anyway).
TYPEFLOW_DIST_DECL void transport_impl::note_unsent(peer_state& p, const std::shared_ptr<req_state>& r) {
    std::lock_guard lk(rq_mu);
    if (p.lost.load()) r->state.store(2, std::memory_order_release);
    else p.unsent.push_back(r);
}

TYPEFLOW_DIST_DECL void transport_impl::throw_lost(int peer) {
    std::string why;
    {
        std::lock_guard lk(mu);
        why = peers[static_cast<std::size_t>(peer)]->lost_why;
    }
    throw dist::peer_lost(peer, "lost " + names[static_cast<std::size_t>(peer)] + ": " + why);
}

/// Fails the transport from any thread (the I/O thread does it at once).
TYPEFLOW_DIST_DECL void transport_impl::fail_any(const std::string& reason) {
    if (io.get_executor().running_in_this_thread()) return fail(reason);
    asio::post(io, [this, reason] { fail(reason); });
}

TYPEFLOW_DIST_DECL void transport_impl::abort_from_caller(const std::string& reason) {
    asio::post(io, [this, reason] { fail(reason); });
    wait_failed();
}

/// Caller: request `r`'s deadline passed. Fails the transport and throws;
/// if its peer may be lost, drops that peer instead and returns once `r`
/// has completed (with state 2).
TYPEFLOW_DIST_DECL void transport_impl::wait_timed_out(const req_state& r) {
    const std::string what = "timed out waiting for " + describe(r.h) + (r.is_send ? " to " : " from ") + names[r.peer];
    peer_state& p = *peers[static_cast<std::size_t>(r.peer)];
    if (!p.expendable.load()) {
        abort_from_caller(what);
        throw error(failure());
    }
    fail_peer(p, what, false);
    {
        std::unique_lock lk(mu);
        ++waiting;
        cv.wait_for(lk, std::chrono::seconds(5), [&] { return r.state.load() != 0 || failed.load(); });
        --waiting;
    }
    if (r.state.load()) return;
    throw error(failed.load() ? failure() : what);
}

} // namespace typeflow::dist::detail
