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
    fail(p.name + (ec == asio::error::eof ? std::string(" closed the connection unexpectedly (process died?)")
                                          : " connection lost: " + ec.message()));
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

TYPEFLOW_DIST_DECL void transport_impl::wait_timed_out(const req_state& r) {
    const std::string what = describe(r.h) + (r.is_send ? " to " : " from ") + names[r.peer];
    abort_from_caller("timed out waiting for " + what);
    throw error(failure());
}

} // namespace typeflow::dist::detail
