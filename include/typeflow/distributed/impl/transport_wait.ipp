#pragma once
// transport_impl: how a caller waits for a request. A receive is read by
// the waiting thread itself (`read_until`: non-blocking reads for an
// adaptive spin budget, then poll); a queued send is waited for while the
// caller reads the sockets it owns (`wait_send`); anything else spins
// briefly, then sleeps on the condition variable.

#include <typeflow/distributed/impl/transport_impl.ipp>

namespace typeflow::dist::detail {

/// Spin of the waits that another thread completes (a queued long send,
/// a frame the I/O thread reads): short, they rarely end that soon.
TYPEFLOW_DIST_DECL std::chrono::microseconds transport_impl::short_spin() const {
    return std::min(opt.spin_wait, std::chrono::microseconds(20));
}

/// Caller: how long this wait may poll before it sleeps.
TYPEFLOW_DIST_DECL std::int64_t transport_impl::spin_budget() {
    const std::int64_t max_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.spin_wait).count();
    if (!opt.adaptive_spin || max_ns <= 0) return std::max<std::int64_t>(max_ns, 0);
    const std::int64_t b = spin_budget_ns.load(std::memory_order_relaxed);
    if (b == 0 && (spin_probe.fetch_add(1, std::memory_order_relaxed) & 63) == 63) return std::min(max_ns, spin_probe_ns);
    return b;
}

/// Caller: adapts the budget to how a wait that spun `budget` ended:
/// `hit` (the frame came while spinning), else it outlasted the spin.
TYPEFLOW_DIST_DECL void transport_impl::spin_feedback(std::int64_t budget, bool hit) {
    (hit ? n_spin_hits : n_spin_misses).fetch_add(1, std::memory_order_relaxed);
    if (!opt.adaptive_spin) return;
    const std::int64_t max_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.spin_wait).count();
    std::int64_t b = hit ? std::min(max_ns, std::max(budget * 2, 2 * spin_floor_ns)) : budget / 2;
    if (b < spin_floor_ns) b = 0;
    spin_budget_ns.store(b, std::memory_order_relaxed);
}

/// Caller: completes receive `r` by reading its peer's socket itself
/// (blocking in poll while nothing is there). Returns false to fall back
/// to waiting for the I/O thread (failure in progress, peer gone, or a
/// frame parked for lack of buffer space).
TYPEFLOW_DIST_DECL bool transport_impl::read_until(peer_state& p, const req_state& r, clock::time_point deadline) {
    p.caller_owned.store(true);
    for (int i = 0;; ++i) {
        if (r.state.load(std::memory_order_acquire)) return true;
        if (failed.load()) throw error(failure());
        if (failing_flag.load() || p.rx_closed.load() || !p.sock) return false;
        if (p.goodbye_received.load()) {
            // Frames arrive in order: a receive still open after the
            // peer's goodbye and not served by a buffered frame never is.
            std::unique_lock lk(rq_mu);
            if (r.state.load()) return true;
            if (p.unexpected.empty()) {
                lk.unlock();
                fail_any("waiting for " + describe(r.h) + " from " + p.name + ", which has shut down");
            }
            return false;
        }
        if (!p.rmu.try_lock()) { // the I/O thread is reading this peer for a moment
            if (clock::now() >= deadline) wait_timed_out(r);
            if (i < 64) std::this_thread::yield();
            else std::this_thread::sleep_for(std::chrono::microseconds(20));
            continue;
        }
        p.caller_owned.store(true);
        rx k = pump(p, false, &r);
        const int fd = p.fd;
        // Poll the socket (non-blocking recv, yielding in between, so a
        // task that shares this core, perhaps the peer, gets to run)
        // for the spin budget, then sleep in poll().
        std::int64_t budget = -1; // not yet spinning
        clock::time_point spin_start;
        bool slept = false;
        while (k == rx::again && !r.state.load(std::memory_order_acquire) && !failing_flag.load() &&
               !p.goodbye_received.load()) {
            const auto now = clock::now();
            if (now >= deadline) {
                unlock_rx(p);
                wait_timed_out(r); // returns only with r complete (its peer dropped)
                return true;
            }
            if (budget < 0) {
                budget = spin_budget();
                spin_start = now;
            }
            if (!slept && std::chrono::duration_cast<std::chrono::nanoseconds>(now - spin_start).count() < budget) {
                std::this_thread::yield();
                k = pump(p, false, &r);
                continue;
            }
            slept = true;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
            pollfd pf{fd, POLLIN, 0};
            (void)::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 10)));
            k = pump(p, false, &r);
        }
        if (budget > 0) spin_feedback(budget, r.state.load(std::memory_order_acquire) && !slept);
        unlock_rx(p);
        if (r.state.load(std::memory_order_acquire)) return true;
        if (k == rx::parked) { // hand the socket back to the I/O thread, which resumes once room is made
            p.caller_owned.store(false);
            asio::post(io, [&p] { p.wake->cancel(); });
            return false;
        }
    }
}

/// Caller: progress on `r` without blocking: a receive from a peer whose
/// socket this caller owns reads what has arrived (as a wait would).
TYPEFLOW_DIST_DECL bool transport_impl::test(const std::shared_ptr<req_state>& r) {
    if (r->state.load(std::memory_order_acquire)) return true;
    if (failed.load()) throw error(failure());
    if (!r->is_send && r->peer >= 0 && r->peer < size && r->peer != rank) {
        peer_state& p = *peers[static_cast<std::size_t>(r->peer)];
        if (p.caller_owned.load() && p.sock && !p.rx_closed.load() && !failing_flag.load() && p.rmu.try_lock()) {
            const rx k = pump(p, false, r.get());
            unlock_rx(p);
            if (k == rx::parked) {  // hand the socket back to the I/O thread, as wait does
                p.caller_owned.store(false);
                asio::post(io, [&p] { p.wake->cancel(); });
            }
        }
    }
    return r->state.load(std::memory_order_acquire) != 0;
}

/// Caller: reads every socket it has taken over that nobody else is reading
/// now, and adds those that are drained to `pf[nf..max_poll)` to poll for
/// input. Returns the new count.
TYPEFLOW_DIST_DECL int transport_impl::read_owned(pollfd* pf, int nf) {
    for (auto& q : peers) {
        if (nf == max_poll) break;
        if (q->rank == rank || !q->sock || !q->caller_owned.load() || q->rx_closed.load()) continue;
        if (!q->rmu.try_lock()) continue;
        const rx k = pump(*q, false);
        unlock_rx(*q);
        if (k != rx::again) continue;
        pf[nf++] = pollfd{q->fd, POLLIN, 0};
    }
    return nf;
}

/// Caller: waits for queued send `r`, reading the sockets it owns meanwhile.
TYPEFLOW_DIST_DECL void transport_impl::wait_send(const req_state& r, clock::time_point deadline) {
    const auto spin_until = clock::now() + short_spin();
    while (!r.state.load(std::memory_order_acquire) && clock::now() < spin_until) {
        if (failed.load()) throw error(failure());
        std::this_thread::yield();
    }
    if (r.state.load(std::memory_order_acquire)) return;
    struct waiter {
        std::atomic<int>& n;
        explicit waiter(std::atomic<int>& c) : n(c) { ++n; }
        ~waiter() { --n; }
    } w(send_waiters);
    for (;;) {
        if (r.state.load(std::memory_order_acquire)) return;
        if (failed.load()) throw error(failure());
        const auto now = clock::now();
        if (now >= deadline) wait_timed_out(r);
        pollfd pf[max_poll];
        int nf = 0;
        const int efd = send_efd.load(std::memory_order_acquire); // open until shutdown
        if (efd >= 0) pf[nf++] = pollfd{efd, POLLIN, 0};
        nf = read_owned(pf, nf);
        if (r.state.load(std::memory_order_acquire)) return;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
        (void)::poll(pf, static_cast<nfds_t>(nf), static_cast<int>(std::min<long long>(left, 10)));
        if (efd >= 0 && pf[0].revents) {
            std::uint64_t v;
            (void)!::read(efd, &v, sizeof v);
        }
    }
}

TYPEFLOW_DIST_DECL void transport_impl::wait(const std::shared_ptr<req_state>& r, clock::time_point deadline) {
    if (r->queued) return wait_send(*r, deadline);
    if (!r->is_send && caller_reads(*r) && !r->state.load(std::memory_order_acquire) && r->peer >= 0 &&
        read_until(*peers[static_cast<std::size_t>(r->peer)], *r, deadline))
        return;
    // Spin briefly (small messages complete within microseconds), then sleep.
    const auto spin_until = clock::now() + short_spin();
    for (int i = 0;; ++i) {
        if (r->state.load(std::memory_order_acquire)) return;
        if (failed.load()) throw error(failure());
        if ((i & 63) == 63) {
            if (clock::now() >= spin_until) break;
            std::this_thread::yield();
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    bool ok;
    {
        std::unique_lock lk(mu);
        ++waiting;
        ok = cv.wait_until(lk, deadline, [&] { return r->state.load() != 0 || failed.load(); });
        --waiting;
    }
    if (r->state.load()) return;
    if (!ok) {
        wait_timed_out(*r);
        return;
    }
    throw error(failure());
}

} // namespace typeflow::dist::detail
