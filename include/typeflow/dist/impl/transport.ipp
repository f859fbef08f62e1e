#pragma once
// Non-template implementation of typeflow::dist::transport (inline, Asio style).
//
// Threading: one I/O thread runs the io_context, reads every socket and owns
// all per-peer state. Data frames are written by the calling thread itself
// (scatter-gather `sendmsg` on the socket, polling for room when it is full),
// so sends and receives run on two threads without a hand-off per frame;
// frames of the I/O thread (heartbeat, goodbye, control, abort) and the
// caller's writes are serialized per peer by `peer_state::wmu`, which is held
// for a whole frame so frames never interleave. Receives are posted by the
// caller too (per-peer receive queues and buffered frames under `rq_mu`;
// a buffered frame is copied out on the caller's thread); callers wait on
// `cv` after a brief spin; completion is a flag in the request.

#include <typeflow/dist/handshake.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <cerrno>
#include <unistd.h>

namespace typeflow::dist {
namespace detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock = std::chrono::steady_clock;
using boost::system::error_code;

inline std::string ms_string(clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

/// One send or receive. `state` flips to 1 on completion (release); all other
/// fields belong to the I/O thread once submitted.
struct req_state {
    frame_header h;
    std::array<std::byte, frame_header_size> wire{};
    const void* src = nullptr;
    void* dst = nullptr;
    std::vector<std::byte> owned; // payload owned by the request (control, abort)
    int peer = -1;
    bool is_send = false;
    std::atomic<int> state{0};
};

struct unexpected_frame {
    frame_header h;
    std::unique_ptr<std::byte[]> data; // h.length bytes, not zero-filled (overwritten by the read)
};

struct peer_state {
    int rank = -1;
    std::string name;
    std::shared_ptr<tcp::socket> sock;
    std::deque<std::shared_ptr<req_state>> sendq;
    bool writing = false;
    std::deque<std::shared_ptr<req_state>> recvq;
    std::deque<unexpected_frame> unexpected;
    std::size_t unexpected_bytes = 0;
    std::atomic<bool> parked{false}; // written under rq_mu
    std::unique_ptr<asio::steady_timer> wake;
    clock::time_point last_recv{};
    std::atomic<clock::rep> last_send{0}; // time_since_epoch of the last completed write
    bool joined = false; // chief: JOIN received
    bool goodbye_sent = false;
    std::atomic<bool> goodbye_received{false};
    std::atomic<bool> write_broken{false};
    /// Held by whoever writes a frame to `sock` (a caller's data frame, or the
    /// I/O thread from start_write until its completion handler), for the whole frame.
    std::mutex wmu;
    std::atomic<bool> caller_writing{false}; // a caller holds wmu
    std::atomic<bool> io_write_wanted{false}; // the I/O thread has frames queued behind a caller's write
    bool abort_sent = false; // I/O thread
    std::atomic<bool> eof{false};
};

/// Bootstrap control message (Cereal, portable binary).
struct control_msg {
    std::uint8_t kind = 0; // 1 = join (task -> chief), 2 = welcome (chief -> task)
    std::int32_t rank = -1;
    std::uint32_t epoch = 0;
    std::vector<std::string> addresses;
    template <class Archive> void serialize(Archive& a) { a(kind, rank, epoch, addresses); }
};

struct refusal : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct transport_impl {
    asio::io_context io{1}; // first member: destroyed last
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    cluster_spec spec;
    transport_options opt;
    int rank = 0, size = 1;
    std::string secret;
    std::vector<std::string> addresses;
    std::vector<std::string> names;
    std::vector<std::unique_ptr<peer_state>> peers; // by rank; own slot unused
    std::unique_ptr<tcp::acceptor> acceptor;
    asio::steady_timer ticker{io};
    asio::steady_timer epoch_event{io};
    asio::steady_timer fail_timer{io};
    bool failing = false; // I/O thread: fail() has run; `failed` follows once sockets are quiet
    std::atomic<bool> failing_flag{false}; // the same, readable by callers
    std::vector<std::byte> abort_bytes;
    std::uint32_t epoch = 0;
    bool epoch_known = false;
    bool welcome_sent = false;
    std::atomic<bool> delivery_blocked{false}; // a buffered frame waits for a send to finish
    /// Guards every peer's recvq, unexpected and unexpected_bytes: receives
    /// are posted (and buffered frames delivered) by the calling thread
    /// itself. Lock order: rq_mu, then inflight_mu.
    std::mutex rq_mu;
    std::mutex inflight_mu; // guards `inflight`
    std::vector<std::pair<const std::byte*, std::size_t>> inflight; // payloads callers are writing now
    clock::time_point started = clock::now();
    clock::duration bootstrap_duration{};

    std::mutex mu; // guards failure_msg; waits on cv
    std::condition_variable cv;
    std::atomic<int> waiting{0};
    std::atomic<bool> failed{false};
    std::atomic<bool> ready{false};
    std::atomic<bool> closing{false};
    std::string failure_msg;

    std::atomic<std::uint64_t> n_sent{0}, n_received{0}, n_unexpected{0}, n_heartbeats{0};


    std::thread thread;

    explicit transport_impl(const cluster_spec& s) : spec(s), opt(s.options) {
        rank = spec.rank();
        size = spec.size();
        secret = spec.effective_secret();
        for (int r = 0; r < size; ++r) {
            addresses.push_back(spec.address_of(r));
            names.push_back(spec.task_of(r).name() + " (rank " + std::to_string(r) + ", " + addresses.back() + ")");
            auto p = std::make_unique<peer_state>();
            p->rank = r;
            p->name = names.back();
            p->wake = std::make_unique<asio::steady_timer>(io);
            peers.push_back(std::move(p));
        }
    }

    // ---- completion and failure -------------------------------------------------

    void notify() {
        if (waiting.load() > 0) {
            std::lock_guard lk(mu);
            cv.notify_all();
        }
    }

    void complete(const std::shared_ptr<req_state>& r) {
        r->state.store(1);
        notify();
    }

    static void raw_send(tcp::socket& s, const void* data, std::size_t n) {
        // Best effort, never blocks: used only for abort/refusal frames.
        (void)::send(s.native_handle(), data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }

    static std::vector<std::byte> abort_frame(const std::string& reason) {
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
    void fail(const std::string& reason) {
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
            if (!p->sock || !p->sock->is_open()) continue;
            if (p->writing) wait_for_writes = true;
            else if (!p->wmu.try_lock()) wait_for_writes = true; // a caller is writing a frame
            else {
                send_abort(*p);
                p->wmu.unlock();
            }
        }
        if (!wait_for_writes) return finalize_failure();
        fail_timer.expires_after(std::chrono::milliseconds(200));
        fail_timer.async_wait([this](const error_code&) { finalize_failure(); });
    }

    /// Called when a write completes while failing.
    void write_done_while_failing(peer_state& p, bool ok) {
        if (ok) send_abort(p);
        p.wmu.unlock();
        check_writes_quiet();
    }

    /// I/O thread, while failing, holding p.wmu: the abort frame, once.
    void send_abort(peer_state& p) {
        if (p.abort_sent || p.goodbye_sent || p.write_broken.load() || !p.sock || !p.sock->is_open()) return;
        p.abort_sent = true;
        raw_send(*p.sock, abort_bytes.data(), abort_bytes.size());
    }

    /// I/O thread, while failing: a caller finished (or gave up) writing to `p`.
    void caller_write_done_while_failing(peer_state& p) {
        if (failed.load()) return;
        if (!p.writing && p.wmu.try_lock()) {
            send_abort(p);
            p.wmu.unlock();
        }
        check_writes_quiet();
    }

    void check_writes_quiet() {
        if (failed.load()) return;
        for (auto& q : peers)
            if (q->writing || q->caller_writing.load()) return;
        finalize_failure();
    }

    void finalize_failure() {
        if (failed.load()) return;
        for (auto& p : peers) {
            if (!p->sock || !p->sock->is_open()) continue;
            error_code ec;
            p->sock->cancel(ec);
            p->sock->shutdown(tcp::socket::shutdown_both, ec);
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
            std::lock_guard lk(mu);
            failed.store(true);
        }
        std::lock_guard lk(mu);
        cv.notify_all();
    }

    // ---- bootstrap ----------------------------------------------------------------

    void start() {
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

    void wait_failed() {
        std::unique_lock lk(mu);
        ++waiting;
        cv.wait_for(lk, std::chrono::seconds(5), [&] { return failed.load(); });
        --waiting;
    }

    std::string failure() {
        std::lock_guard lk(mu);
        return failure_msg;
    }

    void open_acceptor() {
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
    struct deadline_guard {
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

    asio::awaitable<void> read_frame(tcp::socket& s, frame_header& h, std::vector<std::byte>& payload,
                                     std::size_t max_payload) {
        std::array<std::byte, frame_header_size> hb;
        co_await asio::async_read(s, asio::buffer(hb), asio::use_awaitable);
        auto r = parse_header(hb.data(), max_payload);
        if (!r.ok) throw refusal(r.reason);
        h = r.header;
        payload.resize(h.length);
        if (h.length) co_await asio::async_read(s, asio::buffer(payload), asio::use_awaitable);
    }

    static std::vector<std::byte> frame_bytes(const frame_header& h, const void* payload) {
        std::vector<std::byte> out(frame_header_size + h.length);
        encode_header(h, out.data());
        if (h.length) std::memcpy(out.data() + frame_header_size, payload, h.length);
        return out;
    }

    asio::awaitable<void> accept_loop() {
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

    static std::string endpoint_string(const tcp::socket& s) {
        error_code ec;
        auto ep = s.remote_endpoint(ec);
        if (ec) return "unknown peer";
        return ep.address().to_string() + ":" + std::to_string(ep.port());
    }

    asio::awaitable<void> serve_handshake(std::shared_ptr<tcp::socket> s) {
        const std::string from = endpoint_string(*s);
        deadline_guard guard(io, s, opt.handshake_timeout);
        bool said_hello = false;
        std::size_t stage = 0;
        try {
            frame_header h;
            std::vector<std::byte> payload;
            co_await read_frame(*s, h, payload, 0);
            std::uint32_t peer_rank = 0;
            handshake::nonce nc{}, ns = handshake::make_nonce();
            if (auto bad = handshake::check_hello(h, payload.data(), size, peer_rank, nc)) throw refusal(*bad);
            said_hello = true;
            stage = 1;
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
            co_await asio::async_write(*s, asio::buffer(out), asio::use_awaitable);
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
            co_await asio::async_write(*s, asio::buffer(accb), asio::use_awaitable);
            if (*guard.fired) throw refusal("handshake timed out");
            guard.timer->cancel();
            attach(pr, s);
        } catch (const refusal& e) {
            log(log_level::warning, spec.task.name() + ": refused connection from " + from + ": " + e.what());
            if (said_hello && s->is_open()) {
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

    asio::awaitable<void> connect_peer(int to) {
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
            if (h.type == frame_type::abort)
                throw refusal("refused by " + who + ": " + std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
            if (h.type != frame_type::accept) throw refusal("expected accept from " + who + ", got " + std::string(name_of(h.type)));
            guard.timer->cancel();
            if (failing) co_return;
            attach(to, s);
            if (to == 0) {
                control_msg m;
                m.kind = 1;
                m.rank = rank;
                send_control(*peers[0], m);
            }
        } catch (const refusal& e) {
            fail(std::string("bootstrap: ") + e.what());
        } catch (const std::exception& e) {
            if (!failing) fail("bootstrap: connection to " + who + " failed: " + e.what());
        }
    }

    void attach(int r, std::shared_ptr<tcp::socket> s) {
        auto& p = *peers[r];
        error_code ec;
        s->set_option(tcp::no_delay(true), ec);
        p.sock = std::move(s);
        p.last_recv = clock::now();
        p.last_send.store(p.last_recv.time_since_epoch().count());
        asio::co_spawn(io, reader(p), asio::detached);
        check_ready();
    }

    void send_control(peer_state& p, const control_msg& m) {
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

    void on_control(peer_state& p, const std::vector<std::byte>& payload) {
        control_msg m;
        try {
            std::istringstream is(std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
            cereal::PortableBinaryInputArchive ar(is);
            ar(m);
        } catch (const std::exception& e) {
            return fail(p.name + " sent a malformed control message: " + e.what());
        }
        if (m.kind == 1 && rank == 0 && !p.joined && m.rank == p.rank) {
            p.joined = true;
            check_ready();
        } else if (m.kind == 2 && rank != 0 && p.rank == 0 && !epoch_known && m.epoch != 0 &&
                   m.addresses.size() == static_cast<std::size_t>(size)) {
            epoch = m.epoch;
            epoch_known = true;
            addresses = m.addresses;
            epoch_event.cancel();
            for (int j = 1; j < rank; ++j) asio::co_spawn(io, connect_peer(j), asio::detached);
            check_ready();
        } else {
            fail(p.name + " sent an unexpected control message (kind " + std::to_string(m.kind) + ")");
        }
    }

    void check_ready() {
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

    // ---- data path (I/O thread) ---------------------------------------------------

    void peer_lost(peer_state& p, const error_code& ec) {
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

    static bool same_op(const frame_header& a, const frame_header& b) {
        return a.type == b.type && a.op == b.op && a.dtype_code == b.dtype_code && a.reduce_code == b.reduce_code &&
               a.epoch == b.epoch && a.seq == b.seq && a.count == b.count && a.offset == b.offset && a.length == b.length;
    }

    void mismatch(peer_state& p, const frame_header& want, const frame_header& got) {
        fail("mismatched collective with " + p.name + ": this task expects " + describe(want) + ", the peer sent " +
             describe(got));
    }

    asio::awaitable<void> reader(peer_state& p) {
        auto sock = p.sock; // keeps the socket alive for this coroutine
        std::array<std::byte, frame_header_size> hb;
        auto progress = [&p](const error_code& ec, std::size_t) -> std::size_t {
            p.last_recv = clock::now();
            return ec ? 0 : 1 << 20;
        };
        try {
            for (;;) {
                co_await asio::async_read(*sock, asio::buffer(hb), asio::use_awaitable);
                if (failing) co_return;
                p.last_recv = clock::now();
                auto r = parse_header(hb.data(), opt.max_frame_bytes);
                if (!r.ok) co_return fail(p.name + " sent a bad frame: " + r.reason);
                const auto& h = r.header;
                switch (h.type) {
                case frame_type::heartbeat: continue;
                case frame_type::goodbye:
                    p.goodbye_received = true;
                    if (!p.goodbye_sent) send_goodbye(p);
                    continue;
                case frame_type::abort:
                case frame_type::control: {
                    std::vector<std::byte> payload(h.length);
                    if (h.length) co_await asio::async_read(*sock, asio::buffer(payload), asio::use_awaitable);
                    if (h.type == frame_type::abort)
                        co_return fail("aborted by " + p.name + ": " +
                                       std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
                    on_control(p, payload);
                    if (failing) co_return;
                    continue;
                }
                case frame_type::data: break;
                default: co_return fail(p.name + " sent an unexpected " + std::string(name_of(h.type)) + " frame");
                }
                if (!epoch_known || h.epoch != epoch)
                    co_return fail(p.name + " sent data of epoch " + std::to_string(h.epoch) + ", current epoch " +
                                   std::to_string(epoch));
                for (;;) {
                    if (failing || closing.load()) co_return;
                    std::unique_lock lk(rq_mu);
                    if (p.unexpected.empty() && !p.recvq.empty() && writable(*p.recvq.front())) {
                        // While this frame is read in place, `unexpected` stays
                        // empty (only this coroutine fills it), so a caller
                        // posting receives meanwhile delivers nothing.
                        auto req = p.recvq.front();
                        if (!same_op(req->h, h)) {
                            lk.unlock();
                            co_return mismatch(p, req->h, h);
                        }
                        lk.unlock();
                        if (h.length)
                            co_await asio::async_read(*sock, asio::buffer(req->dst, h.length), progress, asio::use_awaitable);
                        lk.lock();
                        p.recvq.pop_front();
                        lk.unlock();
                        n_received.fetch_add(1, std::memory_order_relaxed);
                        complete(req);
                        break;
                    }
                    if (p.unexpected_bytes + h.length <= opt.max_unexpected_bytes) {
                        lk.unlock();
                        unexpected_frame u{h, std::make_unique_for_overwrite<std::byte[]>(h.length)};
                        if (h.length)
                            co_await asio::async_read(*sock, asio::buffer(u.data.get(), h.length), progress, asio::use_awaitable);
                        lk.lock();
                        p.unexpected_bytes += h.length;
                        p.unexpected.push_back(std::move(u));
                        n_unexpected.fetch_add(1, std::memory_order_relaxed);
                        n_received.fetch_add(1, std::memory_order_relaxed);
                        deliver(p); // a receive may have been posted meanwhile
                        break;
                    }
                    // Too much buffered: stop reading until a receive is posted
                    // (deliver() then posts a wake-up; parked is set under the lock).
                    p.parked = true;
                    lk.unlock();
                    p.wake->expires_at(clock::time_point::max());
                    error_code ignored;
                    co_await p.wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
                    p.parked = false;
                    p.last_recv = clock::now();
                }
            }
        } catch (const boost::system::system_error& e) {
            peer_lost(p, e.code());
        }
    }

    /// False while a queued send still reads bytes that receive `r` would
    /// overwrite; such a frame waits in the unexpected queue instead.
    bool writable(const req_state& r) {
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

    /// Fails the transport from any thread (the I/O thread does it at once).
    void fail_any(const std::string& reason) {
        if (io.get_executor().running_in_this_thread()) return fail(reason);
        asio::post(io, [this, reason] { fail(reason); });
    }

    /// Hands buffered frames to posted receives, in order, while possible.
    /// Any thread, holding rq_mu.
    void deliver(peer_state& p) {
        while (!p.unexpected.empty() && !p.recvq.empty() && !failing_flag.load()) {
            auto req = p.recvq.front();
            auto& u = p.unexpected.front();
            if (!same_op(req->h, u.h))
                return fail_any("mismatched collective with " + p.name + ": this task expects " + describe(req->h) +
                                ", the peer sent " + describe(u.h));
            if (!writable(*req)) {
                delivery_blocked.store(true);
                return;
            }
            if (u.h.length) std::memcpy(req->dst, u.data.get(), u.h.length);
            p.unexpected_bytes -= u.h.length;
            p.unexpected.pop_front();
            p.recvq.pop_front();
            complete(req);
        }
        if (p.parked.load()) asio::post(io, [&p] { p.wake->cancel(); });
    }

    /// Any thread: queues receive `r` (delivering a buffered frame at once).
    void post_recv(peer_state& p, const std::shared_ptr<req_state>& r) {
        std::lock_guard lk(rq_mu);
        if (p.unexpected.empty() && p.goodbye_received.load())
            return fail_any("waiting for " + describe(r->h) + " from " + p.name + ", which has shut down");
        p.recvq.push_back(r);
        deliver(p);
    }

    void post_send(peer_state& p, const std::shared_ptr<req_state>& r) {
        if (p.goodbye_received && r->h.type == frame_type::data)
            return fail("sending " + describe(r->h) + " to " + p.name + ", which has shut down");
        p.sendq.push_back(r);
        if (!p.writing) start_write(p);
    }

    /// A write failed (the peer reset the connection). The peer may have
    /// said why (an abort frame still unread), so the reader gets a moment
    /// to report that before the write error is reported.
    void write_failed(peer_state& p, const error_code& ec) {
        p.write_broken.store(true);
        auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
        t->async_wait([this, &p, ec, t](const error_code&) {
            if (!failing) peer_lost(p, ec);
        });
    }

    void start_write(peer_state& p) {
        if (failing || !p.sock || p.write_broken.load() || p.writing || p.sendq.empty()) return;
        if (!p.wmu.try_lock()) {
            // A caller is writing a frame; it kicks us when done (flag set
            // before the second try, so one of the two sees the other).
            p.io_write_wanted.store(true);
            if (!p.wmu.try_lock()) return;
            p.io_write_wanted.store(false);
        }
        p.writing = true;
        auto r = p.sendq.front();
        std::array<asio::const_buffer, 2> bufs{asio::buffer(r->wire), asio::buffer(r->src, r->h.length)};
        asio::async_write(*p.sock, bufs, [this, &p, r](const error_code& ec, std::size_t) {
            p.writing = false;
            if (failing) return write_done_while_failing(p, !ec);
            p.wmu.unlock();
            if (ec) return write_failed(p, ec);
            p.last_send.store(clock::now().time_since_epoch().count());
            p.sendq.pop_front();
            if (r->h.type == frame_type::data) {
                n_sent.fetch_add(1, std::memory_order_relaxed);
                redeliver();
            }
            else if (r->h.type == frame_type::heartbeat) n_heartbeats.fetch_add(1, std::memory_order_relaxed);
            if (r->h.type == frame_type::goodbye) {
                error_code ignored;
                p.sock->shutdown(tcp::socket::shutdown_send, ignored);
            }
            complete(r);
            if (!p.sendq.empty()) start_write(p);
        });
    }

    /// I/O thread: retries buffered frames that waited for a send to finish.
    void redeliver() {
        if (!delivery_blocked.exchange(false)) return;
        std::lock_guard lk(rq_mu);
        for (auto& q : peers) deliver(*q);
    }

    /// Caller thread: writes data frame `r` to `p` itself (header and payload
    /// in one scatter-gather write, polling while the socket is full). Returns
    /// true once the whole frame is written; false if the transport failed,
    /// the peer is gone or `deadline` passed (then the failure is, or is being,
    /// recorded and `wait` on the request throws).
    bool caller_write(peer_state& p, req_state& r, clock::time_point deadline) {
        if (p.goodbye_received.load()) {
            const std::string why = "sending " + describe(r.h) + " to " + p.name + ", which has shut down";
            asio::post(io, [this, why] { fail(why); });
            return false;
        }
        for (int i = 0; !p.wmu.try_lock(); ++i) { // the I/O thread is writing a small frame
            if (failed.load() || failing_flag.load()) return false;
            if (i > 64) {
                if (clock::now() >= deadline) {
                    const std::string why = "timed out sending " + describe(r.h) + " to " + p.name;
                    asio::post(io, [this, why] { fail(why); });
                    return false;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            } else {
                std::this_thread::yield();
            }
        }
        p.caller_writing.store(true);
        bool done = false;
        if (!failing_flag.load() && !p.write_broken.load() && p.sock) {
            const auto* payload = static_cast<const std::byte*>(r.src);
            if (r.h.length) {
                std::lock_guard lk(inflight_mu);
                inflight.emplace_back(payload, r.h.length);
            }
            done = write_frame(p, r, deadline);
            if (r.h.length) {
                std::lock_guard lk(inflight_mu);
                for (auto it = inflight.begin(); it != inflight.end(); ++it)
                    if (it->first == payload && it->second == r.h.length) {
                        inflight.erase(it);
                        break;
                    }
            }
            if (done) {
                p.last_send.store(clock::now().time_since_epoch().count());
                n_sent.fetch_add(1, std::memory_order_relaxed);
            }
        }
        p.caller_writing.store(false);
        p.wmu.unlock();
        const bool kick = p.io_write_wanted.exchange(false);
        const bool redo = delivery_blocked.load();
        if (failing_flag.load()) asio::post(io, [this, &p] { caller_write_done_while_failing(p); });
        else if (kick || redo)
            asio::post(io, [this, &p, kick] {
                if (kick) start_write(p);
                redeliver();
            });
        return done;
    }

    bool write_frame(peer_state& p, req_state& r, clock::time_point deadline) {
        const int fd = p.sock->native_handle();
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
            const ssize_t n = ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
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
            // Full: wait for room, watching for failure and the deadline.
            for (;;) {
                if (failed.load()) return give_up();
                if (clock::now() >= deadline) {
                    const std::string why = "timed out sending " + describe(r.h) + " to " + p.name;
                    asio::post(io, [this, why] { fail(why); });
                    return give_up();
                }
                pollfd pf{fd, POLLOUT, 0};
                const int k = ::poll(&pf, 1, 10);
                if (k > 0 || (k < 0 && errno != EINTR)) break;
            }
        }
        return true;
    }

    void send_small(peer_state& p, frame_type t) {
        auto r = std::make_shared<req_state>();
        r->h.type = t;
        r->is_send = true;
        r->peer = p.rank;
        encode_header(r->h, r->wire.data());
        post_send(p, r);
    }

    void send_goodbye(peer_state& p) {
        if (p.goodbye_sent || !p.sock) return;
        p.goodbye_sent = true;
        send_small(p, frame_type::goodbye);
    }

    asio::awaitable<void> tick_loop() {
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
                if (!p.sock || p.rank == rank) continue;
                if (we_stalled) p.last_recv = now;
                if (!p.goodbye_sent && !p.writing && p.sendq.empty() && now - clock::time_point(clock::duration(p.last_send.load())) >= timeout / 4)
                    send_small(p, frame_type::heartbeat);
                if (!p.parked && !p.goodbye_received && now - p.last_recv > timeout) {
                    fail(p.name + " is not responding: nothing received for " + ms_string(now - p.last_recv) +
                         " (heartbeat timeout " + ms_string(timeout) + ")");
                    co_return;
                }
            }
        }
    }

    // ---- caller side --------------------------------------------------------------

    void wait(const std::shared_ptr<req_state>& r, clock::time_point deadline) {
        // Spin briefly (small messages complete within microseconds), then sleep.
        const auto spin_until = clock::now() + opt.spin_wait;
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
            const std::string what = describe(r->h) + (r->is_send ? " to " : " from ") + names[r->peer];
            abort_from_caller("timed out waiting for " + what);
        }
        throw error(failure());
    }

    void abort_from_caller(const std::string& reason) {
        asio::post(io, [this, reason] { fail(reason); });
        wait_failed();
    }

    void shutdown() {
        if (thread.joinable()) {
            if (ready.load() && !failed.load() && size > 1) {
                asio::post(io, [this] {
                    for (auto& p : peers)
                        if (p->rank != rank) send_goodbye(*p);
                });
                const auto linger = std::min<clock::duration>(opt.heartbeat_timeout, std::chrono::seconds(5));
                std::unique_lock lk(mu);
                ++waiting;
                cv.wait_for(lk, linger, [&] {
                    if (failed.load()) return true;
                    for (auto& p : peers) // benign race: flags only ever go false -> true
                        if (p->rank != rank && p->sock && !p->eof) return false;
                    return true;
                });
                --waiting;
            }
            closing.store(true);
            asio::post(io, [this] {
                error_code ec;
                for (auto& p : peers)
                    if (p->sock) {
                        p->sock->cancel(ec);
                        p->sock->close(ec);
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
    }
};

} // namespace detail

inline transport::transport(const cluster_spec& spec) : impl_(std::make_unique<detail::transport_impl>(spec)) {
    try {
        impl_->start();
    } catch (...) {
        impl_->closing.store(true);
        impl_->shutdown();
        throw;
    }
}

inline transport::~transport() {
    if (impl_) impl_->shutdown();
}

inline int transport::rank() const noexcept { return impl_->rank; }
inline int transport::size() const noexcept { return impl_->size; }
inline std::uint32_t transport::epoch() const noexcept { return impl_->epoch; }
inline const transport_options& transport::options() const noexcept { return impl_->opt; }
inline const std::string& transport::peer_name(int r) const { return impl_->names.at(static_cast<std::size_t>(r)); }
inline std::chrono::steady_clock::duration transport::bootstrap_time() const noexcept { return impl_->bootstrap_duration; }

inline request transport::send(int peer, const frame_header& h, const void* payload) {
    return send(peer, h, payload, std::chrono::steady_clock::now() + impl_->opt.op_timeout);
}

inline request transport::send(int peer, const frame_header& h, const void* payload,
                               std::chrono::steady_clock::time_point deadline) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("send: bad peer rank " + std::to_string(peer));
    if (failed()) throw error(failure());
    auto r = std::make_shared<detail::req_state>();
    r->h = h;
    r->h.type = frame_type::data;
    encode_header(r->h, r->wire.data());
    r->src = payload;
    r->peer = peer;
    r->is_send = true;
    // Written here, by the calling thread; on failure the request stays
    // pending and `wait` reports the transport's failure.
    if (impl_->caller_write(*impl_->peers[static_cast<std::size_t>(peer)], *r, deadline))
        r->state.store(1, std::memory_order_release);
    return r;
}

inline request transport::recv(int peer, const frame_header& expected, void* payload) {
    if (peer < 0 || peer >= size() || peer == rank()) throw error("recv: bad peer rank " + std::to_string(peer));
    if (failed()) throw error(failure());
    auto r = std::make_shared<detail::req_state>();
    r->h = expected;
    r->h.type = frame_type::data;
    r->dst = payload;
    r->peer = peer;
    // Posted by the calling thread itself (no hand-off to the I/O thread).
    impl_->post_recv(*impl_->peers[static_cast<std::size_t>(peer)], r);
    return r;
}

inline void transport::wait(const request& r, std::chrono::steady_clock::time_point deadline) { impl_->wait(r, deadline); }

inline transport_stats transport::stats() const noexcept {
    transport_stats s;
    s.data_frames_sent = impl_->n_sent.load();
    s.data_frames_received = impl_->n_received.load();
    s.unexpected_frames = impl_->n_unexpected.load();
    s.heartbeats_sent = impl_->n_heartbeats.load();
    return s;
}

inline bool transport::done(const request& r) const noexcept { return r->state.load(std::memory_order_acquire) != 0; }

inline void transport::abort(const std::string& reason) {
    if (!impl_->failed.load()) impl_->abort_from_caller(reason);
}

inline bool transport::failed() const noexcept { return impl_->failed.load(); }
inline std::string transport::failure() const { return impl_->failure(); }

} // namespace typeflow::dist
