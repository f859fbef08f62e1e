#pragma once
// transport_impl: liveness and shutdown. The I/O thread's tick sends
// heartbeats, declares silent peers dead and takes back sockets a caller is
// not reading; shutdown says goodbye to every peer, waits briefly for
// theirs and stops the I/O thread.

#include <typeflow/distributed/impl/transport_impl.ipp>

namespace typeflow::dist::detail {

TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::tick_loop() {
    const auto timeout = opt.heartbeat_timeout;
    const auto interval = std::max<clock::duration>(std::chrono::milliseconds(1), timeout / 20);
    auto last = clock::now();
    for (;;) {
        ticker.expires_after(interval);
        error_code ec;
        co_await ticker.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (failing || closing.load()) co_return;
        for (auto& pp : peers) // retry a write that lost a race with a caller's write
            if (pp->io_write_wanted.load() && !pp->caller_writing.load()) {
                pp->io_write_wanted.store(false);
                start_write(*pp);
            }
        const auto now = clock::now();
        const bool we_stalled = now - last > timeout / 2; // this process was not running
        last = now;
        for (auto& pp : peers) {
            auto& p = *pp;
            if (!p.sock || p.rank == rank || p.lost.load()) continue;
            if (we_stalled) p.last_recv.store(now.time_since_epoch().count());
            // A socket a caller took over but is not reading now goes back
            // to this thread (heartbeats, aborts and goodbyes keep flowing
            // while the caller computes).
            take_back(p);
            if (!p.goodbye_sent && !p.writing && p.sendq.empty() && now - clock::time_point(clock::duration(p.last_send.load())) >= timeout / 4)
                send_small(p, frame_type::heartbeat);
            const auto last_recv = clock::time_point(clock::duration(p.last_recv.load()));
            if (!p.parked && !p.goodbye_received && now - last_recv > timeout && !p.rx_closed.load()) {
                fail_peer(p, p.name + " is not responding: nothing received for " + ms_string(now - last_recv) +
                                 " (heartbeat timeout " + ms_string(timeout) + ")",
                          false);
                if (failing) co_return;
                p.rx_closed.store(true); // reported once; the drop follows
            }
        }
    }
}

TYPEFLOW_DIST_DECL void transport_impl::send_goodbye(peer_state& p) {
    if (p.goodbye_sent || !p.sock) return;
    p.goodbye_sent = true;
    send_small(p, frame_type::goodbye);
}

/// Caller (the destructor, or the constructor that failed). Descriptors are
/// closed only where no other thread can still use them: the peers' sockets
/// on the I/O thread, after the sender thread has been joined (other threads
/// only ever shut a socket down, never close it); the eventfd of queued sends
/// after both the sender thread and the I/O thread have been joined.
TYPEFLOW_DIST_DECL void transport_impl::shutdown() {
    stop_sender(); // before the goodbyes: nothing is written after them
    if (thread.joinable()) {
        if (ready.load() && !failed.load() && size > 1) {
            asio::post(io, [this] {
                for (auto& p : peers)
                    if (p->rank != rank && !p->lost.load()) {
                        take_back(*p); // the goodbyes are read here
                        send_goodbye(*p);
                    }
            });
            const auto linger = std::min<clock::duration>(opt.heartbeat_timeout, std::chrono::seconds(5));
            std::unique_lock lk(mu);
            ++waiting;
            cv.wait_for(lk, linger, [&] {
                if (failed.load()) return true;
                for (auto& p : peers) // benign race: flags only ever go false -> true
                    if (p->rank != rank && p->sock && !p->eof && !p->lost.load()) return false;
                return true;
            });
            --waiting;
        }
        closing.store(true);
        asio::post(io, [this] {
            error_code ec;
            for (auto& p : peers)
                if (p->sock) {
                    if (p->watched) {
                        p->sock->cancel(ec);
                        p->sock->close(ec);
                    } else if (!p->fd_closed.load()) {
                        ::close(p->fd);
                    }
                    p->fd_closed.store(true);
                    p->watched = false;
                    p->wake->cancel();
                }
            if (acceptor) acceptor->close(ec);
            ticker.cancel();
            epoch_event.cancel();
            work.reset();
            io.stop();
        });
        thread.join();
    }
    close_send_efd(); // the sender and I/O threads are gone: nobody signals it now
}

} // namespace typeflow::dist::detail
