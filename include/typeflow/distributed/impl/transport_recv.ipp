#pragma once
// transport_impl: reading (whoever holds peer_state::rmu).
//
// Every connection is read by one incremental parser per peer (`pump`),
// run by whichever thread holds the peer's read lock `rmu`: the calling
// thread while it waits for a receive from that peer (or waits for room
// to write while it owns the peer), else the I/O thread. A caller that
// posts a receive takes the peer over (`caller_owned`); the I/O thread
// then stops watching that socket (after at most one wake-up) until the
// heartbeat tick, a shutdown or a failure hands it back. So in steady
// state a collective's frames are read by the thread that needs them,
// with no hand-off between threads. Frames that arrive before their
// receive is posted are buffered (`unexpected`) and delivered once it is.

#include <typeflow/distributed/impl/transport_impl.ipp>

namespace typeflow::dist::detail {

TYPEFLOW_DIST_DECL void transport_impl::touch(peer_state& p) {
    p.last_recv.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

/// I/O thread: hands p's descriptor to the reactor (before any asio
/// operation on `p.sock`).
TYPEFLOW_DIST_DECL void transport_impl::watch(peer_state& p) {
    if (p.watched || p.fd_closed.load()) return;
    error_code ec;
    p.sock->assign(p.protocol, p.fd, ec);
    if (ec) return fail(p.name + ": cannot watch the connection: " + ec.message());
    p.watched = true;
}

/// I/O thread: takes p's descriptor out of the reactor while a caller
/// owns it and no asio write is in progress.
TYPEFLOW_DIST_DECL void transport_impl::unwatch(peer_state& p) {
    if (!p.watched || p.writing || !p.sendq.empty()) return;
    error_code ec;
    (void)p.sock->release(ec);
    if (!ec) p.watched = false;
}

/// The reader saw end of stream or an error (any thread).
TYPEFLOW_DIST_DECL transport_impl::rx transport_impl::rx_lost(peer_state& p, const error_code& ec, bool on_io) {
    p.rx_closed.store(true);
    if (on_io) peer_lost(p, ec);
    else asio::post(io, [this, &p, ec] { peer_lost(p, ec); });
    return rx::stop;
}

/// The reader found `why` wrong with p's frames (`tell`: worth telling p).
TYPEFLOW_DIST_DECL transport_impl::rx transport_impl::rx_fail(peer_state& p, const std::string& why, bool tell) {
    p.rx_closed.store(true);
    fail_peer(p, why, tell);
    return rx::stop;
}

TYPEFLOW_DIST_DECL bool transport_impl::same_op(const frame_header& a, const frame_header& b) {
    return a.type == b.type && a.op == b.op && a.dtype_code == b.dtype_code && a.reduce_code == b.reduce_code &&
           a.epoch == b.epoch && a.seq == b.seq && a.count == b.count && a.offset == b.offset && a.length == b.length;
}

/// The failure of a receive that expected `want` and got `got` from `p`.
TYPEFLOW_DIST_DECL std::string transport_impl::mismatch(const peer_state& p, const frame_header& want, const frame_header& got) {
    return "mismatched collective with " + p.name + ": this task expects " + describe(want) + ", the peer sent " +
           describe(got);
}

/// Holding p.rmu: a header was parsed; decides where its payload goes.
TYPEFLOW_DIST_DECL transport_impl::rx transport_impl::begin_frame(peer_state& p, bool on_io) {
    const auto& h = p.rx_h;
    switch (h.type) {
    case frame_type::heartbeat: p.rx_mode = rx_mode_header; return rx::again;
    case frame_type::goodbye:
        p.goodbye_received = true;
        p.rx_mode = rx_mode_header;
        if (on_io) {
            if (!p.goodbye_sent) send_goodbye(p);
        } else {
            asio::post(io, [this, &p] {
                if (!p.goodbye_sent && !failing) send_goodbye(p);
            });
        }
        notify();
        return rx::again;
    case frame_type::abort:
    case frame_type::control:
        p.rx_ctl.resize(h.length);
        p.rx_dst = p.rx_ctl.data();
        p.rx_got = 0;
        p.rx_mode = rx_mode_ctl;
        return rx::again;
    case frame_type::data: break;
    default: return rx_fail(p, p.name + " sent an unexpected " + std::string(name_of(h.type)) + " frame");
    }
    if (!epoch_known || h.epoch != epoch)
        return rx_fail(p, p.name + " sent data of epoch " + std::to_string(h.epoch) + ", current epoch " + std::to_string(epoch));
    std::unique_lock lk(rq_mu);
    if (p.unexpected.empty() && !p.recvq.empty() && writable(*p.recvq.front())) {
        // While this frame is read in place, `unexpected` stays empty
        // (only the holder of rmu fills it), so a caller posting
        // receives meanwhile delivers nothing and the front stays put.
        auto& req = p.recvq.front();
        if (!same_op(req->h, h)) {
            const std::string why = mismatch(p, req->h, h);
            lk.unlock();
            return rx_fail(p, why);
        }
        p.rx_req = req;
        p.rx_dst = static_cast<std::byte*>(req->dst);
        p.rx_got = 0;
        p.rx_mode = rx_mode_deliver;
        p.parked = false;
        return rx::again;
    }
    if (p.unexpected_bytes + h.length <= opt.max_unexpected_bytes) {
        lk.unlock();
        p.rx_u = unexpected_frame{h, std::make_unique_for_overwrite<std::byte[]>(h.length)};
        p.rx_dst = p.rx_u.data.get();
        p.rx_got = 0;
        p.rx_mode = rx_mode_unexpected;
        p.parked = false;
        return rx::again;
    }
    // Too much buffered: stop reading until a receive is posted (deliver()
    // then wakes the reader; parked is set under rq_mu). The header is
    // kept and looked at again then.
    p.parked = true;
    p.rx_mode = rx_mode_pending;
    return rx::parked;
}

/// Holding p.rmu: the current frame's payload is complete.
TYPEFLOW_DIST_DECL transport_impl::rx transport_impl::end_frame(peer_state& p, bool on_io) {
    const auto mode = p.rx_mode;
    p.rx_mode = rx_mode_header;
    if (mode == rx_mode_deliver) {
        std::shared_ptr<req_state> req = std::move(p.rx_req);
        {
            std::lock_guard lk(rq_mu);
            p.recvq.pop_front();
        }
        n_received.fetch_add(1, std::memory_order_relaxed);
        complete(req);
    } else if (mode == rx_mode_unexpected) {
        std::lock_guard lk(rq_mu);
        p.unexpected_bytes += p.rx_h.length;
        p.unexpected.push_back(std::move(p.rx_u));
        n_unexpected.fetch_add(1, std::memory_order_relaxed);
        n_received.fetch_add(1, std::memory_order_relaxed);
        deliver(p); // a receive may have been posted meanwhile
    } else if (mode == rx_mode_ctl) {
        if (p.rx_h.type == frame_type::abort)
            return rx_fail(p, "aborted by " + p.name + ": " +
                                  std::string(reinterpret_cast<const char*>(p.rx_ctl.data()), p.rx_ctl.size()),
                           false);
        if (on_io) on_control(p, p.rx_ctl);
        else asio::post(io, [this, &p, m = p.rx_ctl] { on_control(p, m); });
        if (failing) return rx::stop;
    }
    return rx::again;
}

/// Holding p.rmu: reads and handles everything available on p's socket
/// without blocking. again: the socket is drained (or `r`, if given, is
/// complete); parked: too much buffered; stop: the reader is finished
/// (failure or end of stream, already reported).
TYPEFLOW_DIST_DECL transport_impl::rx transport_impl::pump(peer_state& p, bool on_io, const req_state* r) {
    if (p.rx_closed.load() || !p.sock) return rx::stop;
    const int fd = p.fd;
    std::byte* st = p.stage.get();
    for (;;) {
        if (failing_flag.load() || p.lost.load()) return rx::stop;
        if (p.rx_mode == rx_mode_pending) {
            const rx k = begin_frame(p, on_io);
            if (k != rx::again) return k;
            continue;
        }
        if (p.rx_mode == rx_mode_header) {
            if (r && r->state.load(std::memory_order_relaxed)) return rx::again;
            if (p.st_end - p.st_beg >= frame_header_size) {
                auto res = parse_header(st + p.st_beg, opt.max_frame_bytes);
                p.st_beg += frame_header_size;
                if (!res.ok) return rx_fail(p, p.name + " sent a bad frame: " + res.reason);
                p.rx_h = res.header;
                const rx k = begin_frame(p, on_io);
                if (k != rx::again) return k;
                continue;
            }
            if (p.st_beg) { // keep a partial header at the front
                std::memmove(st, st + p.st_beg, p.st_end - p.st_beg);
                p.st_end -= p.st_beg;
                p.st_beg = 0;
            }
            // Read ahead into the staging buffer (a small frame's header
            // and payload in one call), except when the next receive is
            // long: then only the header, so its payload is read in place.
            std::size_t want = stage_bytes - p.st_end;
            {
                std::lock_guard lk(rq_mu);
                if (p.unexpected.empty() && !p.recvq.empty() && p.recvq.front()->h.length >= stage_bytes / 4 &&
                    !p.recvq.front()->consume)
                    want = frame_header_size - p.st_end;
            }
            const ssize_t n = ::recv(fd, st + p.st_end, want, MSG_DONTWAIT);
            if (n > 0) {
                p.st_end += static_cast<std::size_t>(n);
                touch(p);
                continue;
            }
            if (n == 0) return rx_lost(p, asio::error::eof, on_io);
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return rx::again;
            return rx_lost(p, error_code(errno, boost::system::system_category()), on_io);
        }
        // Payload of the current frame.
        const std::size_t need = p.rx_h.length - p.rx_got;
        if (need == 0) {
            const rx k = end_frame(p, on_io);
            if (k != rx::again) return k;
            continue;
        }
        if (p.rx_mode == rx_mode_deliver && p.rx_req->consume) {
            // A consumed payload goes through the staging buffer: hand
            // over whole elements, from an address aligned for them (a
            // frame of an odd length may have left the buffer at any
            // offset); with less than one element buffered, read more.
            const auto dt = dtype_of_wire(p.rx_h.dtype_code); // parse_header checked it
            const std::size_t unit = dt ? dtype_size(*dt) : 1;
            std::size_t k = std::min(need, p.st_end - p.st_beg);
            if (k < need) k -= k % unit;
            if (!k || reinterpret_cast<std::uintptr_t>(st + p.st_beg) % unit) {
                std::memmove(st, st + p.st_beg, p.st_end - p.st_beg);
                p.st_end -= p.st_beg;
                p.st_beg = 0;
            }
            if (k) {
                p.rx_req->consume(p.rx_got, st + p.st_beg, k);
                p.st_beg += k;
                p.rx_got += k;
                continue;
            }
            const ssize_t n = ::recv(fd, st + p.st_end, stage_bytes - p.st_end, MSG_DONTWAIT);
            if (n > 0) {
                p.st_end += static_cast<std::size_t>(n);
                touch(p);
                continue;
            }
            if (n == 0) return rx_lost(p, asio::error::eof, on_io);
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return rx::again;
            return rx_lost(p, error_code(errno, boost::system::system_category()), on_io);
        }
        if (p.st_end > p.st_beg) {
            const std::size_t k = std::min(need, p.st_end - p.st_beg);
            std::memcpy(p.rx_dst + p.rx_got, st + p.st_beg, k);
            p.st_beg += k;
            p.rx_got += k;
            continue;
        }
        // Staging empty: the rest of the payload straight to its place,
        // whatever follows (next headers) into the staging buffer.
        p.st_beg = p.st_end = 0;
        iovec iov[2];
        iov[0].iov_base = p.rx_dst + p.rx_got;
        iov[0].iov_len = need;
        iov[1].iov_base = st;
        iov[1].iov_len = stage_bytes;
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = 2;
        const ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT);
        if (n > 0) {
            const auto got = static_cast<std::size_t>(n);
            if (got > need) {
                p.rx_got += need;
                p.st_end = got - need;
            } else {
                p.rx_got += got;
            }
            touch(p);
            continue;
        }
        if (n == 0) return rx_lost(p, asio::error::eof, on_io);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return rx::again;
        return rx_lost(p, error_code(errno, boost::system::system_category()), on_io);
    }
}

/// Releases p's read lock; wakes the I/O thread if it found the lock taken.
TYPEFLOW_DIST_DECL void transport_impl::unlock_rx(peer_state& p) {
    p.rmu.unlock();
    if (p.io_read_wanted.exchange(false)) asio::post(io, [&p] { p.wake->cancel(); });
}

/// I/O thread: takes p back from the caller if no caller is reading it now.
TYPEFLOW_DIST_DECL void transport_impl::take_back(peer_state& p) {
    if (!p.caller_owned.load() || !p.rmu.try_lock()) return;
    p.caller_owned.store(false);
    p.rmu.unlock();
    p.wake->cancel();
}

/// I/O thread: sleeps until p's wake timer is cancelled.
TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::park(peer_state& p) {
    p.wake->expires_at(clock::time_point::max());
    error_code ignored;
    co_await p.wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

/// I/O thread: watches p's socket while no caller owns it.
TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::reader(peer_state& p) {
    auto sock = p.sock; // keeps the socket alive for this coroutine
    bool need_wait = true;
    for (;;) {
        if (need_wait) {
            watch(p);
            if (failing) co_return;
            error_code ec;
            co_await sock->async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
            if (failing || closing.load() || p.rx_closed.load()) co_return;
            if (ec) co_return peer_lost(p, ec);
        }
        need_wait = true;
        if (failing || closing.load() || p.rx_closed.load()) co_return;
        if (p.caller_owned.load()) { // a caller reads this socket; wait to be handed it back
            unwatch(p);
            p.parked_owned = true;
            co_await park(p);
            p.parked_owned = false;
            need_wait = false;
            continue;
        }
        if (!p.rmu.try_lock()) {
            // A caller is reading; it wakes us when it lets go (flag set
            // before the second try, so one of the two sees the other).
            p.io_read_wanted.store(true);
            if (!p.rmu.try_lock()) {
                co_await park(p);
                need_wait = false;
                continue;
            }
            p.io_read_wanted.store(false);
        }
        const rx k = pump(p, true);
        p.rmu.unlock();
        if (k == rx::stop) co_return;
        if (k == rx::parked) {
            co_await park(p);
            touch(p);
            need_wait = false;
        }
    }
}

/// False while a queued send still reads bytes that receive `r` would
/// overwrite; such a frame waits in the unexpected queue instead.
TYPEFLOW_DIST_DECL bool transport_impl::writable(const req_state& r) {
    if (!r.h.length) return true;
    const auto* b = static_cast<const std::byte*>(r.dst);
    const auto* e = b + r.h.length;
    // Data frames are written only by callers (never queued in sendq).
    // A caller writing an overlapping payload: flag it under the lock, so
    // the caller (which removes its entry under the lock, then reads the
    // flag) is sure to see it and have the frame delivered.
    std::lock_guard lk(inflight_mu);
    for (const auto& [sb, n] : inflight)
        if (n && sb < e && b < sb + n) {
            delivery_blocked.store(true);
            return false;
        }
    return true;
}

/// Hands buffered frames to posted receives, in order, while possible.
/// Any thread, holding rq_mu.
TYPEFLOW_DIST_DECL void transport_impl::deliver(peer_state& p) {
    while (!p.unexpected.empty() && !p.recvq.empty() && !failing_flag.load()) {
        auto req = p.recvq.front();
        auto& u = p.unexpected.front();
        if (!same_op(req->h, u.h))
            return fail_peer(p, mismatch(p, req->h, u.h), true);
        if (!writable(*req)) {
            delivery_blocked.store(true);
            return;
        }
        if (u.h.length) {
            if (req->consume) req->consume(0, u.data.get(), u.h.length);
            else std::memcpy(req->dst, u.data.get(), u.h.length);
        }
        p.unexpected_bytes -= u.h.length;
        p.unexpected.pop_front();
        p.recvq.pop_front();
        complete(req);
    }
    if (p.parked.load()) asio::post(io, [&p] { p.wake->cancel(); });
}

/// Any thread: retries buffered frames that waited for a send to finish.
TYPEFLOW_DIST_DECL void transport_impl::redeliver() {
    if (!delivery_blocked.exchange(false)) return;
    std::lock_guard lk(rq_mu);
    for (auto& q : peers) deliver(*q);
}

/// True when the thread that waits for receive `r` reads its frame itself
/// (transport_options::caller_read_bytes).
TYPEFLOW_DIST_DECL bool transport_impl::caller_reads(const req_state& r) const { return r.h.length <= opt.caller_read_bytes; }

/// Any thread: queues receive `r` (delivering a buffered frame at once).
TYPEFLOW_DIST_DECL void transport_impl::post_recv(peer_state& p, const std::shared_ptr<req_state>& r) {
    if (caller_reads(*r)) p.caller_owned.store(true); // the caller reads this socket from now on (see pump)
    else if (p.caller_owned.load()) { // a long frame: the I/O thread reads it
        p.caller_owned.store(false);
        asio::post(io, [&p] { p.wake->cancel(); });
    }
    std::lock_guard lk(rq_mu);
    if (p.lost.load()) { // dropped: this receive never completes otherwise
        r->state.store(2, std::memory_order_release);
        return;
    }
    if (p.unexpected.empty() && p.goodbye_received.load())
        return fail_any("waiting for " + describe(r->h) + " from " + p.name + ", which has shut down");
    p.recvq.push_back(r);
    deliver(p);
}

} // namespace typeflow::dist::detail
