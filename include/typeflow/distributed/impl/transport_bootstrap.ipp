#pragma once
// transport_impl: connection setup. Rendezvous at the chief (join, welcome
// with the epoch and addresses), the authentication handshake of every
// connection (typeflow/distributed/handshake.hpp) as server and client, and
// the bootstrap's control messages.

#include <typeflow/distributed/impl/transport_impl.ipp>

#include <charconv>

namespace typeflow::dist::detail {

TYPEFLOW_DIST_DECL void transport_impl::start() {
    if (size > 1 && secret.empty())
        throw error(spec.task.name() + ": no shared secret; set TYPEFLOW_SECRET or \"secret\" in the cluster spec");
    if (size > 1) open_acceptor();
    epoch_event.expires_at(clock::time_point::max());
    thread = std::thread([this] {
        try {
            io.run();
        } catch (const std::exception& e) {
            fail(std::string("internal error in I/O thread: ") + e.what());
        }
    });
    if (size == 1) {
        epoch = 1;
        ready.store(true);
        return;
    }
    asio::post(io, [this] {
        asio::co_spawn(io, accept_loop(), asio::detached);
        if (rank != 0) asio::co_spawn(io, connect_peer(0), asio::detached);
        else {
            std::random_device rd;
            do epoch = static_cast<std::uint32_t>(rd()); while (epoch == 0);
            epoch_known = true;
        }
        asio::co_spawn(io, tick_loop(), asio::detached);
    });
    const auto deadline = started + opt.connect_timeout;
    std::unique_lock lk(mu);
    ++waiting;
    bool ok = cv.wait_until(lk, deadline, [&] { return ready.load() || failed.load(); });
    --waiting;
    lk.unlock();
    if (!ok) {
        asio::post(io, [this] {
            std::string missing;
            for (auto& p : peers)
                if (p->rank != rank && !p->sock) missing += (missing.empty() ? "" : ", ") + p->name;
            fail("bootstrap timed out after " + ms_string(opt.connect_timeout) +
                 (missing.empty() ? std::string(" waiting for the chief's welcome") : "; not connected to " + missing));
        });
        wait_failed();
    }
    if (failed.load()) throw error(failure());
    bootstrap_duration = clock::now() - started;
}

TYPEFLOW_DIST_DECL void transport_impl::open_acceptor() {
    const char* fd_env = std::getenv("TYPEFLOW_LISTEN_FD");
    if (fd_env && *fd_env) {
        // Listening socket handed down by typeflow-launch (no port race).
        int fd = ::dup(std::atoi(fd_env));
        if (fd < 0) throw error(spec.task.name() + ": TYPEFLOW_LISTEN_FD=" + fd_env + " is not an open socket");
        acceptor = std::make_unique<tcp::acceptor>(io);
        error_code ec;
        acceptor->assign(tcp::v4(), fd, ec);
        if (ec) throw error(spec.task.name() + ": cannot use TYPEFLOW_LISTEN_FD: " + ec.message());
        return;
    }
    if (addresses[static_cast<std::size_t>(rank)] == unknown_address) {
        // any free port on every interface of the chief's address family;
        // the chief learns the host from the connection and the port at join
        auto [chost, cport] = split_address(addresses[0], names[0]);
        tcp::resolver res(io);
        error_code ec;
        auto eps = res.resolve(chost, std::to_string(cport), ec);
        if (ec || eps.empty())
            throw error(spec.task.name() + ": cannot resolve the chief's address " + addresses[0] + ": " + ec.message());
        const tcp::endpoint any(eps.begin()->endpoint().protocol(), 0);
        acceptor = std::make_unique<tcp::acceptor>(io);
        acceptor->open(any.protocol());
        acceptor->bind(any, ec);
        if (ec) throw error(spec.task.name() + ": cannot listen on a free port: " + ec.message());
        acceptor->listen(asio::socket_base::max_listen_connections);
        reported_port = acceptor->local_endpoint().port();
        return;
    }
    auto [host, port] = split_address(addresses[static_cast<std::size_t>(rank)], "own address");
    tcp::resolver res(io);
    error_code ec;
    auto eps = res.resolve(host, std::to_string(port), ec);
    if (ec || eps.empty()) throw error(spec.task.name() + ": cannot resolve own address " + addresses[rank] + ": " + ec.message());
    auto ep = eps.begin()->endpoint();
    acceptor = std::make_unique<tcp::acceptor>(io);
    acceptor->open(ep.protocol());
    acceptor->set_option(tcp::acceptor::reuse_address(true));
    acceptor->bind(ep, ec);
    if (ec) throw error(spec.task.name() + ": cannot listen on " + addresses[rank] + ": " + ec.message());
    acceptor->listen(asio::socket_base::max_listen_connections);
}

/// Closes `s` after `ms` unless cancelled; the shared flag records a timeout.
struct transport_impl::deadline_guard {
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<bool> fired = std::make_shared<bool>(false);
    deadline_guard(asio::io_context& io, std::shared_ptr<tcp::socket> s, std::chrono::milliseconds ms)
        : timer(std::make_shared<asio::steady_timer>(io, ms)) {
        timer->async_wait([s, f = fired](const error_code& ec) {
            if (ec) return;
            *f = true;
            error_code ignored;
            s->close(ignored);
        });
    }
    ~deadline_guard() { timer->cancel(); }
};

TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::read_frame(tcp::socket& s, frame_header& h,
                                                                  std::vector<std::byte>& payload, std::size_t max_payload) {
    std::array<std::byte, frame_header_size> hb;
    co_await asio::async_read(s, asio::buffer(hb), asio::use_awaitable);
    auto r = parse_header(hb.data(), max_payload);
    if (!r.ok) throw refusal(r.reason);
    h = r.header;
    payload.resize(h.length);
    if (h.length) co_await asio::async_read(s, asio::buffer(payload), asio::use_awaitable);
}

TYPEFLOW_DIST_DECL std::vector<std::byte> transport_impl::frame_bytes(const frame_header& h, const void* payload) {
    std::vector<std::byte> out(frame_header_size + h.length);
    encode_header(h, out.data());
    if (h.length) std::memcpy(out.data() + frame_header_size, payload, h.length);
    return out;
}

TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::accept_loop() {
    for (;;) {
        error_code ec;
        tcp::socket s = co_await acceptor->async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (!acceptor->is_open() || failing) co_return;
        if (ec) {
            log(log_level::warning, spec.task.name() + ": accept failed: " + ec.message());
            continue;
        }
        asio::co_spawn(io, serve_handshake(std::make_shared<tcp::socket>(std::move(s))), asio::detached);
    }
}

TYPEFLOW_DIST_DECL std::string transport_impl::endpoint_string(const tcp::socket& s) {
    error_code ec;
    auto ep = s.remote_endpoint(ec);
    if (ec) return "unknown peer";
    return ep.address().to_string() + ":" + std::to_string(ep.port());
}

TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::serve_handshake(std::shared_ptr<tcp::socket> s) {
    const std::string from = endpoint_string(*s);
    deadline_guard guard(io, s, opt.handshake_timeout);
    bool said_hello = false;
    std::size_t stage = 0;
    auto conn = std::make_shared<handshake_conn>();
    conn->s = s;
    mark_done done_on_exit{conn};  // on every way out, including the frame's destruction
    try {
        frame_header h;
        std::vector<std::byte> payload;
        co_await read_frame(*s, h, payload, 0);
        std::uint32_t peer_rank = 0;
        handshake::nonce nc{}, ns = handshake::make_nonce();
        if (auto bad = handshake::check_hello(h, payload.data(), size, peer_rank, nc)) throw refusal(*bad);
        said_hello = true;
        stage = 1;
        std::erase_if(handshaking, [](const auto& c) { return c->done || c->s.expired(); });
        handshaking.push_back(conn);
        const int pr = static_cast<int>(peer_rank);
        if (pr == rank) throw refusal("hello claims this task's own rank " + std::to_string(pr));
        if (rank != 0 && pr < rank)
            throw refusal("rank " + std::to_string(pr) + " must be connected to by this task, not connect to it");
        if (peers[pr]->sock) throw refusal(names[pr] + " is already connected");
        const std::uint32_t hello_epoch = h.epoch;

        frame_header ch;
        ch.type = frame_type::challenge;
        ch.length = 64;
        std::array<std::byte, 64> chp;
        std::memcpy(chp.data(), ns.data(), 32);
        auto proof = handshake::server_proof(secret, nc, ns, peer_rank);
        std::memcpy(chp.data() + 32, proof.data(), 32);
        auto out = frame_bytes(ch, chp.data());
        conn->writing = true;
        co_await asio::async_write(*s, asio::buffer(out), asio::use_awaitable);
        conn->writing = false;
        stage = 2;
        co_await read_frame(*s, h, payload, 0);
        if (auto bad = handshake::check_response(h, payload.data(), secret, nc, ns, peer_rank)) throw refusal(*bad);
        stage = 3;
        if (rank != 0) {
            while (!epoch_known && !failing && !closing.load()) {
                error_code ignored;
                co_await epoch_event.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
            }
            if (hello_epoch != epoch)
                throw refusal("stale epoch " + std::to_string(hello_epoch) + " (current " + std::to_string(epoch) + ")");
        } else if (hello_epoch != 0) {
            throw refusal("joining with epoch " + std::to_string(hello_epoch) + " from another run");
        }
        if (failing || closing.load()) co_return;
        if (peers[pr]->sock) throw refusal(names[pr] + " is already connected");
        frame_header acc;
        acc.type = frame_type::accept;
        auto accb = encode_header(acc);
        conn->writing = true;
        co_await asio::async_write(*s, asio::buffer(accb), asio::use_awaitable);
        conn->writing = false;
        if (*guard.fired) throw refusal("handshake timed out");
        guard.timer->cancel();
        conn->done = true;
        attach(pr, s);
    } catch (const refusal& e) {
        log(log_level::warning, spec.task.name() + ": refused connection from " + from + ": " + e.what());
        if (said_hello && s->is_open() && !failing) {
            auto f = abort_frame(std::string("refused: ") + e.what());
            raw_send(*s, f.data(), f.size());
        }
        error_code ec;
        s->close(ec);
    } catch (const boost::system::system_error& e) {
        std::string why = *guard.fired ? "handshake timed out after " + ms_string(opt.handshake_timeout)
                          : e.code() == asio::error::eof
                              ? std::string("connection closed during the handshake (truncated frame?)")
                              : std::string(e.what());
        if (!failing && !closing.load())
            log(log_level::warning, spec.task.name() + ": refused connection from " + from + " (handshake stage " +
                                        std::to_string(stage) + "): " + why);
        error_code ec;
        s->close(ec);
    }
}

/// The error for an abort frame in place of a handshake reply: a refusal
/// ("refused: ...") or the failure that stopped the other task.
TYPEFLOW_DIST_DECL std::string transport_impl::aborted_by(const std::string& who, const std::vector<std::byte>& payload) {
    const std::string reason(reinterpret_cast<const char*>(payload.data()), payload.size());
    return reason.starts_with("refused: ") ? "refused by " + who + ": " + reason.substr(9)
                                           : who + " failed during the handshake: " + reason;
}

TYPEFLOW_DIST_DECL asio::awaitable<void> transport_impl::connect_peer(int to) {
    const std::string& who = names[to];
    try {
        auto [host, port] = split_address(addresses[to], who);
        const auto deadline = started + opt.connect_timeout;
        tcp::resolver res(io);
        auto eps = co_await res.async_resolve(host, std::to_string(port), asio::use_awaitable);
        std::shared_ptr<tcp::socket> s;
        for (int attempt = 0;; ++attempt) {
            s = std::make_shared<tcp::socket>(io);
            error_code ec;
            co_await asio::async_connect(*s, eps, asio::redirect_error(asio::use_awaitable, ec));
            if (failing) co_return;
            if (!ec) break;
            if (clock::now() >= deadline) throw refusal("cannot connect to " + who + ": " + ec.message());
            asio::steady_timer t(io, std::chrono::milliseconds(std::min(5 * (attempt + 1), 50)));
            co_await t.async_wait(asio::use_awaitable);
        }
        deadline_guard guard(io, s, opt.handshake_timeout);
        auto nc = handshake::make_nonce();
        frame_header h;
        h.type = frame_type::hello;
        h.seq = static_cast<std::uint64_t>(rank);
        h.epoch = epoch_known ? epoch : 0;
        h.length = 32;
        auto out = frame_bytes(h, nc.data());
        co_await asio::async_write(*s, asio::buffer(out), asio::use_awaitable);
        std::vector<std::byte> payload;
        co_await read_frame(*s, h, payload, 0);
        if (h.type == frame_type::abort) throw refusal(aborted_by(who, payload));
        handshake::nonce ns{};
        if (auto bad = handshake::check_challenge(h, payload.data(), secret, nc, static_cast<std::uint32_t>(rank), ns))
            throw refusal(*bad);
        auto proof = handshake::client_proof(secret, ns, nc, static_cast<std::uint32_t>(rank));
        frame_header rh;
        rh.type = frame_type::response;
        rh.length = 32;
        out = frame_bytes(rh, proof.data());
        co_await asio::async_write(*s, asio::buffer(out), asio::use_awaitable);
        co_await read_frame(*s, h, payload, 0);
        if (h.type == frame_type::abort) throw refusal(aborted_by(who, payload));
        if (h.type != frame_type::accept) throw refusal("expected accept from " + who + ", got " + std::string(name_of(h.type)));
        guard.timer->cancel();
        if (failing) co_return;
        attach(to, s);
        if (to == 0) {
            control_msg m;
            m.kind = 1;
            m.rank = rank;
            if (reported_port) m.addresses.push_back(std::to_string(reported_port));
            send_control(*peers[0], m);
        }
    } catch (const refusal& e) {
        fail(std::string("bootstrap: ") + e.what());
    } catch (const std::exception& e) {
        if (!failing) fail("bootstrap: connection to " + who + " failed: " + e.what());
    }
}

TYPEFLOW_DIST_DECL void transport_impl::attach(int r, std::shared_ptr<tcp::socket> s) {
    auto& p = *peers[r];
    error_code ec;
    s->set_option(tcp::no_delay(true), ec);
    p.protocol = s->local_endpoint(ec).protocol();
    p.fd = s->native_handle();
    p.watched = true;
    p.sock = std::move(s);
    p.stage = std::make_unique_for_overwrite<std::byte[]>(stage_bytes);
    touch(p);
    p.last_send.store(p.last_recv.load());
    asio::co_spawn(io, reader(p), asio::detached);
    check_ready();
}

TYPEFLOW_DIST_DECL void transport_impl::send_control(peer_state& p, const control_msg& m) {
    std::ostringstream os;
    {
        cereal::PortableBinaryOutputArchive ar(os);
        ar(m);
    }
    auto bytes = os.str();
    auto r = std::make_shared<req_state>();
    r->h.type = frame_type::control;
    r->h.length = bytes.size();
    r->owned.resize(bytes.size());
    std::memcpy(r->owned.data(), bytes.data(), bytes.size());
    r->src = r->owned.data();
    r->is_send = true;
    r->peer = p.rank;
    encode_header(r->h, r->wire.data());
    post_send(p, r);
}

TYPEFLOW_DIST_DECL void transport_impl::on_control(peer_state& p, const std::vector<std::byte>& payload) {
    control_msg m;
    try {
        std::istringstream is(std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
        cereal::PortableBinaryInputArchive ar(is);
        ar(m);
    } catch (const std::exception& e) {
        return fail_peer(p, p.name + " sent a malformed control message: " + e.what(), true);
    }
    if (m.kind == 1 && rank == 0 && !p.joined && m.rank == p.rank) {
        if (addresses[static_cast<std::size_t>(p.rank)] == unknown_address) {
            // its host as this connection sees it, the port it reports
            unsigned port = 0;
            if (m.addresses.size() == 1) {
                const std::string& t = m.addresses[0];
                auto [end, bad] = std::from_chars(t.data(), t.data() + t.size(), port);
                if (bad != std::errc{} || end != t.data() + t.size() || port > 65535) port = 0;
            }
            error_code ec;
            const auto ep = p.sock ? p.sock->remote_endpoint(ec) : tcp::endpoint{};
            if (port < 1 || ec)
                return fail(p.name + " joined without a port to listen on (its address is \"*\")" +
                            (ec ? ": " + ec.message() : std::string()));
            auto a = ep.address();
            if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
            learn_address(p.rank, (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(port));
        }
        p.joined = true;
        check_ready();
    } else if (m.kind == 2 && rank != 0 && p.rank == 0 && !epoch_known && m.epoch != 0 &&
               m.addresses.size() == static_cast<std::size_t>(size)) {
        epoch = m.epoch;
        epoch_known = true;
        for (int r = 0; r < size; ++r) {
            const std::string& a = m.addresses[static_cast<std::size_t>(r)];
            if (a == unknown_address) return fail(p.name + " welcomed this task without the address of " + names[r]);
            if (a != addresses[static_cast<std::size_t>(r)]) learn_address(r, a);
        }
        epoch_event.cancel();
        for (int j = 1; j < rank; ++j) asio::co_spawn(io, connect_peer(j), asio::detached);
        check_ready();
    } else {
        fail_peer(p, p.name + " sent an unexpected control message (kind " + std::to_string(m.kind) + ")", true);
    }
}

TYPEFLOW_DIST_DECL void transport_impl::check_ready() {
    if (ready.load() || failing) return;
    for (auto& p : peers)
        if (p->rank != rank && !p->sock) return;
    if (rank == 0) {
        for (auto& p : peers)
            if (p->rank != 0 && !p->joined) return;
        control_msg w;
        w.kind = 2;
        w.epoch = epoch;
        w.addresses = addresses;
        for (auto& p : peers)
            if (p->rank != 0) send_control(*p, w);
    } else if (!epoch_known) {
        return;
    }
    error_code ec;
    acceptor->close(ec);
    {
        std::lock_guard lk(mu);
        ready.store(true);
    }
    std::lock_guard lk(mu);
    cv.notify_all();
}

} // namespace typeflow::dist::detail
