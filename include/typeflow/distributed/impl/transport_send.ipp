#pragma once
// transport_impl: writing. Data frames are written by the calling thread
// (`caller_write`: scatter-gather `sendmsg`, polling for room while reading
// its own sockets), the I/O thread's frames (heartbeat, goodbye, control)
// through asio (`post_send`), both under the per-peer write lock `wmu`.
//
// Sending through the sender thread: `send` hands a data frame of at least
// send_thread_bytes (or any frame to a peer that still has queued frames, so
// frames to a peer keep their order) to one sender thread per transport,
// which writes the queue in order with caller_write (same write lock,
// deadline and failure rules as a caller's write; it never reads). The
// payload counts as in flight from the moment it is queued, so no receive
// overwrites it before it is sent. A caller waiting for a queued send keeps
// reading the sockets it owns (two tasks waiting for their sends to each
// other never stall).

#include <typeflow/distributed/impl/transport_impl.ipp>

namespace typeflow::dist::detail {

TYPEFLOW_DIST_DECL void transport_impl::post_send(peer_state& p, const std::shared_ptr<req_state>& r) {
    if (p.lost.load()) return; // dropped: nothing more is written to it
    if (p.goodbye_received && r->h.type == frame_type::data)
        return fail("sending " + describe(r->h) + " to " + p.name + ", which has shut down");
    p.sendq.push_back(r);
    if (!p.writing) start_write(p);
}

TYPEFLOW_DIST_DECL void transport_impl::start_write(peer_state& p) {
    if (failing || !p.sock || p.lost.load() || p.write_broken.load() || p.writing || p.sendq.empty()) return;
    if (!p.wmu.try_lock()) {
        // A caller is writing a frame; it kicks us when done (flag set
        // before the second try, so one of the two sees the other).
        p.io_write_wanted.store(true);
        if (!p.wmu.try_lock()) return;
        p.io_write_wanted.store(false);
    }
    watch(p);
    if (failing) return p.wmu.unlock();
    p.writing = true;
    auto r = p.sendq.front();
    std::array<asio::const_buffer, 2> bufs{asio::buffer(r->wire), asio::buffer(r->src, r->h.length)};
    asio::async_write(*p.sock, bufs, [this, &p, r](const error_code& ec, std::size_t) {
        p.writing = false;
        if (failing) return write_done_while_failing(p, !ec);
        p.wmu.unlock();
        if (p.lost.load()) return p.sendq.clear();
        if (ec) return write_failed(p, ec);
        p.last_send.store(clock::now().time_since_epoch().count());
        p.sendq.pop_front();
        if (r->h.type == frame_type::data) {
            n_sent.fetch_add(1, std::memory_order_relaxed);
            redeliver();
        }
        else if (r->h.type == frame_type::heartbeat) n_heartbeats.fetch_add(1, std::memory_order_relaxed);
        if (r->h.type == frame_type::goodbye) ::shutdown(p.fd, SHUT_WR);
        complete(r);
        if (!p.sendq.empty()) start_write(p);
        else if (p.parked_owned) unwatch(p);
    });
}

/// I/O thread: a write failed (the peer reset the connection). The peer
/// may have said why first (an abort frame still unread, perhaps on a
/// socket that a caller owns but is not reading now), so what has arrived
/// is read before the write error is reported, and once more after a
/// moment in case that frame is late.
TYPEFLOW_DIST_DECL void transport_impl::write_failed(peer_state& p, const error_code& ec) {
    p.write_broken.store(true);
    read_before_loss(p);
    if (failing || p.lost.load()) return;
    auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
    t->async_wait([this, &p, ec, t](const error_code&) {
        if (failing || p.lost.load()) return;
        read_before_loss(p);
        if (!failing) peer_lost(p, ec);
    });
}

/// I/O thread: reads whatever p has sent that is still unread, unless a
/// caller is reading it right now (that caller then reads it).
TYPEFLOW_DIST_DECL void transport_impl::read_before_loss(peer_state& p) {
    if (p.rx_closed.load() || !p.sock || !p.rmu.try_lock()) return;
    (void)pump(p, true);
    p.rmu.unlock();
}

/// Caller thread (or the sender thread, `queued`): writes data frame `r`
/// to `p` (header and payload in one scatter-gather write, polling while
/// the socket is full). Returns true once the whole frame is written;
/// false if the transport failed, the peer is gone or `deadline` passed
/// (then the failure is, or is being, recorded and `wait` on the request
/// throws). A queued frame's payload was registered in `inflight` when it
/// was queued and leaves it here, whatever the outcome.
TYPEFLOW_DIST_DECL bool transport_impl::caller_write(peer_state& p, req_state& r, clock::time_point deadline, bool queued) {
    const auto* payload = static_cast<const std::byte*>(r.src);
    bool registered = queued && r.h.length;
    auto release = [&] {
        if (registered) unregister_inflight(payload, r.h.length);
        registered = false;
    };
    if (p.goodbye_received.load()) {
        release();
        const std::string why = "sending " + describe(r.h) + " to " + p.name + ", which has shut down";
        asio::post(io, [this, why] { fail(why); });
        return false;
    }
    for (int i = 0; !p.wmu.try_lock(); ++i) { // the I/O thread is writing a small frame
        if (failed.load() || failing_flag.load() || p.lost.load()) {
            release();
            return false;
        }
        if (i > 64) {
            if (clock::now() >= deadline) {
                release();
                fail_peer(p, "timed out sending " + describe(r.h) + " to " + p.name, false);
                return false;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        } else {
            std::this_thread::yield();
        }
    }
    p.caller_writing.store(true);
    bool done = false;
    if (!failing_flag.load() && !p.write_broken.load() && !p.lost.load() && p.sock) {
        if (r.h.length && !registered) {
            std::lock_guard lk(inflight_mu);
            inflight.emplace_back(payload, r.h.length);
            registered = true;
        }
        // The sender thread only writes; the caller keeps reading.
        done = write_frame(p, r, deadline, !queued);
        release();
        if (done) {
            p.last_send.store(clock::now().time_since_epoch().count());
            n_sent.fetch_add(1, std::memory_order_relaxed);
        }
    }
    release();
    p.caller_writing.store(false);
    p.wmu.unlock();
    const bool kick = p.io_write_wanted.exchange(false);
    if (failing_flag.load()) asio::post(io, [this, &p] { caller_write_done_while_failing(p); });
    else {
        if (kick) asio::post(io, [this, &p] { start_write(p); });
        redeliver(); // frames held back while this payload was being written
    }
    return done;
}

TYPEFLOW_DIST_DECL void transport_impl::unregister_inflight(const std::byte* payload, std::size_t n) {
    std::lock_guard lk(inflight_mu);
    for (auto it = inflight.begin(); it != inflight.end(); ++it)
        if (it->first == payload && it->second == n) {
            inflight.erase(it);
            return;
        }
}

TYPEFLOW_DIST_DECL bool transport_impl::write_frame(peer_state& p, req_state& r, clock::time_point deadline, bool read_meanwhile) {
    const int fd = p.fd;
    iovec iov[2];
    iov[0].iov_base = r.wire.data();
    iov[0].iov_len = r.wire.size();
    iov[1].iov_base = const_cast<void*>(r.src);
    iov[1].iov_len = r.h.length;
    int first = 0;
    const int last = r.h.length ? 2 : 1;
    bool partial = false;
    // Giving up part way through leaves the stream cut mid-frame: nothing
    // more (not even an abort frame) may be written to it.
    auto give_up = [&] {
        if (partial) p.write_broken.store(true);
        return false;
    };
    while (first < last) {
        msghdr m{};
        m.msg_iov = iov + first;
        m.msg_iovlen = static_cast<decltype(m.msg_iovlen)>(last - first);
        ssize_t n;
        if (read_meanwhile) {
            n = ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else { // the sender thread
            std::lock_guard lk(sender_io_mu);
            if (failed.load()) return give_up();
            n = ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        if (n >= 0) {
            partial = partial || n > 0;
            auto left = static_cast<std::size_t>(n);
            while (first < last && left >= iov[first].iov_len) left -= iov[first++].iov_len;
            if (first < last) {
                iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
                iov[first].iov_len -= left;
            }
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            const error_code ec(errno, boost::system::system_category());
            p.write_broken.store(true);
            asio::post(io, [this, &p, ec] { write_failed(p, ec); });
            return false;
        }
        // Full: wait for room, watching for failure and the deadline,
        // and meanwhile read the sockets this caller has taken over
        // (their senders may be waiting for room as well).
        for (;;) {
            if (failed.load() || p.lost.load()) return give_up();
            if (clock::now() >= deadline) {
                fail_peer(p, "timed out sending " + describe(r.h) + " to " + p.name, false);
                return give_up();
            }
            pollfd pf[max_poll];
            int nf = 1;
            pf[0] = pollfd{fd, POLLOUT, 0};
            if (read_meanwhile) nf = read_owned(pf, nf);
            const int k = ::poll(pf, static_cast<nfds_t>(nf), 10);
            if (k < 0 && errno != EINTR) break;
            if (k > 0 && pf[0].revents) break;
        }
    }
    return true;
}

TYPEFLOW_DIST_DECL bool transport_impl::use_sender(const peer_state& p, const req_state& r) const {
    return r.h.length >= opt.send_thread_bytes || p.queued.load() > 0;
}

/// Sender thread or I/O thread (both joined before the eventfd is closed).
TYPEFLOW_DIST_DECL void transport_impl::signal_send_done() {
    const int efd = send_efd.load(std::memory_order_acquire);
    if (efd >= 0 && send_waiters.load() > 0) {
        const std::uint64_t one = 1;
        (void)!::write(efd, &one, sizeof one);
    }
}

/// Caller: queues data frame `r` for the sender thread.
TYPEFLOW_DIST_DECL void transport_impl::queue_send(peer_state& p, const std::shared_ptr<req_state>& r) {
    if (r->h.length) {
        std::lock_guard lk(inflight_mu);
        inflight.emplace_back(static_cast<const std::byte*>(r->src), r->h.length);
    }
    p.queued.fetch_add(1);
    {
        std::lock_guard lk(sq_mu);
        if (!sender.joinable()) {
            if (send_efd.load(std::memory_order_relaxed) < 0)
                send_efd.store(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), std::memory_order_release);
            sender = std::thread([this] { sender_loop(); });
        }
        sq.push_back(r);
    }
    sq_cv.notify_one();
}

TYPEFLOW_DIST_DECL void transport_impl::sender_loop() {
    for (;;) {
        std::shared_ptr<req_state> r;
        {
            std::unique_lock lk(sq_mu);
            sq_cv.wait(lk, [&] { return sq_stop || !sq.empty(); });
            if (sq.empty()) return;
            r = std::move(sq.front());
            sq.pop_front();
        }
        auto& p = *peers[static_cast<std::size_t>(r->peer)];
        if (r->prepare) {
            // Under sender_io_mu, like a write: once `failed` is set no
            // user buffer is touched.
            std::lock_guard lk(sender_io_mu);
            if (!failed.load() && !failing_flag.load()) r->prepare(); // else caller_write writes nothing
            r->prepare = nullptr;
        }
        const bool ok = caller_write(p, *r, r->deadline, true);
        p.queued.fetch_sub(1);
        if (ok) r->state.store(1, std::memory_order_release);
        else note_unsent(p, r);
        signal_send_done();
        notify();
    }
}

/// Stops the sender thread; frames still queued are dropped unwritten. The
/// eventfd stays open: the I/O thread may still signal it (a failure
/// finalized during shutdown); shutdown closes it after joining that thread.
TYPEFLOW_DIST_DECL void transport_impl::stop_sender() {
    {
        std::lock_guard lk(sq_mu);
        sq_stop = true;
        for (auto& r : sq) {
            peers[static_cast<std::size_t>(r->peer)]->queued.fetch_sub(1);
            if (r->h.length) unregister_inflight(static_cast<const std::byte*>(r->src), r->h.length);
        }
        sq.clear();
    }
    sq_cv.notify_all();
    if (sender.joinable()) sender.join();
}

/// Shutdown, once no thread of the transport but the caller's runs: closes
/// the eventfd of queued sends.
TYPEFLOW_DIST_DECL void transport_impl::close_send_efd() {
    if (const int efd = send_efd.exchange(-1); efd >= 0) ::close(efd);
}

TYPEFLOW_DIST_DECL void transport_impl::send_small(peer_state& p, frame_type t) {
    auto r = std::make_shared<req_state>();
    r->h.type = t;
    r->is_send = true;
    r->peer = p.rank;
    encode_header(r->h, r->wire.data());
    post_send(p, r);
}

} // namespace typeflow::dist::detail
