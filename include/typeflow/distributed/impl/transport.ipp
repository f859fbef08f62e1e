#pragma once
// Non-template implementation of typeflow::dist::transport (inline, Asio style).
//
// Threading: one I/O thread runs the io_context (bootstrap, heartbeats,
// control frames) and reads the sockets no caller has taken over. Data frames
// are written by the calling thread itself (scatter-gather `sendmsg`, polling
// for room when the socket is full, reading its own sockets meanwhile), long
// ones by a sender thread (see "sending through the sender thread");
// frames of the I/O thread (heartbeat, goodbye, control, abort) and the
// caller's writes are serialized per peer by `peer_state::wmu`, held for a
// whole frame so frames never interleave. Receives are posted by the caller
// (per-peer receive queues and buffered frames under `rq_mu`), which then
// reads the peer's socket itself while it waits (`pump` under the per-peer
// read lock `rmu`; see "reading" below). Completion is a flag in the request.

#include <typeflow/distributed/handshake.hpp>

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
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/eventfd.h>
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
    clock::time_point deadline{}; // queued: the write's deadline
    int peer = -1;
    bool is_send = false;
    bool queued = false; // a data frame written by the sender thread
    std::function<void()> prepare; // queued: fills the payload first, on the sender thread
    std::function<void(std::size_t, const std::byte*, std::size_t)> consume; // receive: takes the payload piecewise
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
    /// The socket's descriptor, fixed at attach: callers read and write it
    /// directly. The I/O thread's asio socket `sock` holds it only while the
    /// I/O thread watches it (`watched`); while a caller owns the socket it
    /// is released from asio's reactor, so the stream of data the caller
    /// reads does not wake the I/O thread for every packet.
    int fd = -1;
    tcp protocol = tcp::v4();
    bool watched = false;      // I/O thread: `sock` holds `fd` (registered with the reactor)
    bool parked_owned = false; // I/O thread: the reader stands back for a caller
    std::atomic<bool> fd_closed{false};
    std::deque<std::shared_ptr<req_state>> sendq;
    bool writing = false;
    std::deque<std::shared_ptr<req_state>> recvq;
    std::deque<unexpected_frame> unexpected;
    std::size_t unexpected_bytes = 0;
    std::atomic<bool> parked{false}; // written under rq_mu
    std::unique_ptr<asio::steady_timer> wake;
    std::atomic<clock::rep> last_recv{0}; // time_since_epoch of the last bytes read
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
    std::atomic<int> queued{0}; // data frames to this peer queued for the sender thread, not yet written
    bool abort_sent = false; // I/O thread
    std::atomic<bool> eof{false};

    // Reading (see transport_impl::pump). The parser state below belongs to
    // whoever holds rmu: a caller waiting for a frame from this peer, or the
    // I/O thread.
    std::mutex rmu;
    std::atomic<bool> caller_owned{false};   // a caller reads this socket; the I/O thread stands back
    std::atomic<bool> io_read_wanted{false}; // the I/O thread found rmu taken and waits to be woken
    std::atomic<bool> rx_closed{false};      // end of stream or failure seen: nobody reads again
    std::unique_ptr<std::byte[]> stage;      // bytes read ahead of the current frame
    std::size_t st_beg = 0, st_end = 0;
    int rx_mode = 0;                         // rx_mode_*
    frame_header rx_h;                       // current frame
    std::byte* rx_dst = nullptr;             // where its payload goes
    std::size_t rx_got = 0;                  // payload bytes read so far
    std::shared_ptr<req_state> rx_req;       // rx_mode_deliver: the receive being filled
    unexpected_frame rx_u;                   // rx_mode_unexpected: the buffer being filled
    std::vector<std::byte> rx_ctl;           // rx_mode_ctl: control or abort payload
};

inline constexpr int rx_mode_header = 0, rx_mode_deliver = 1, rx_mode_unexpected = 2, rx_mode_ctl = 3,
                     rx_mode_pending = 4; // header parsed, frame waits for room (parked)

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
    std::atomic<std::uint64_t> n_spin_hits{0}, n_spin_misses{0};

    // Adaptive spin (see read_until and transport_options::adaptive_spin):
    // how long a caller polls its socket before it sleeps, in ns.
    std::atomic<std::int64_t> spin_budget_ns{0};
    std::atomic<std::uint32_t> spin_probe{0};
    static constexpr std::int64_t spin_floor_ns = 2000;  // below it: 0
    static constexpr std::int64_t spin_probe_ns = 10000; // probe at budget 0

    // Sender thread (see "sending" below): writes the long data frames
    // callers queue, so a caller's receives and reductions overlap its writes.
    std::thread sender;
    std::mutex sq_mu;                            // guards sq, sq_stop
    std::condition_variable sq_cv;
    std::deque<std::shared_ptr<req_state>> sq;   // queued data frames, all peers, in order
    bool sq_stop = false;
    std::atomic<int> send_waiters{0};            // callers waiting for a queued send
    int send_efd = -1;                           // eventfd: a queued send completed (or failure)
    /// Held by the sender thread around each write syscall (after checking
    /// `failed`) and by finalize_failure while it sets `failed`: once a
    /// caller sees the failure, the sender reads no user buffer again.
    std::mutex sender_io_mu;


    std::thread thread;

    explicit transport_impl(const cluster_spec& s) : spec(s), opt(s.options) {
        spin_budget_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(opt.spin_wait).count());
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

    static void raw_send(int fd, const void* data, std::size_t n) {
        // Best effort, never blocks: used only for abort/refusal frames.
        (void)::send(fd, data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    static void raw_send(tcp::socket& s, const void* data, std::size_t n) { raw_send(s.native_handle(), data, n); }

    /// I/O thread: hands p's descriptor to the reactor (before any asio
    /// operation on `p.sock`).
    void watch(peer_state& p) {
        if (p.watched || p.fd_closed.load()) return;
        error_code ec;
        p.sock->assign(p.protocol, p.fd, ec);
        if (ec) return fail(p.name + ": cannot watch the connection: " + ec.message());
        p.watched = true;
    }

    /// I/O thread: takes p's descriptor out of the reactor while a caller
    /// owns it and no asio write is in progress.
    void unwatch(peer_state& p) {
        if (!p.watched || p.writing || !p.sendq.empty()) return;
        error_code ec;
        (void)p.sock->release(ec);
        if (!ec) p.watched = false;
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
            if (!p->sock || p->fd_closed.load()) continue;
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
        if (p.abort_sent || p.goodbye_sent || p.write_broken.load() || !p.sock || p.fd_closed.load()) return;
        p.abort_sent = true;
        raw_send(p.fd, abort_bytes.data(), abort_bytes.size());
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

    // ---- reading (whoever holds peer_state::rmu) ---------------------------------
    //
    // Every connection is read by one incremental parser per peer (`pump`),
    // run by whichever thread holds the peer's read lock `rmu`: the calling
    // thread while it waits for a receive from that peer (or waits for room
    // to write while it owns the peer), else the I/O thread. A caller that
    // posts a receive takes the peer over (`caller_owned`); the I/O thread
    // then stops watching that socket (after at most one wake-up) until the
    // heartbeat tick, a shutdown or a failure hands it back. So in steady
    // state a collective's frames are read by the thread that needs them,
    // with no hand-off between threads.

    enum class rx { again, parked, stop };

    static constexpr std::size_t stage_bytes = 64 * 1024;

    void touch(peer_state& p) { p.last_recv.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed); }

    /// The reader saw end of stream or an error (any thread).
    rx rx_lost(peer_state& p, const error_code& ec, bool on_io) {
        p.rx_closed.store(true);
        if (on_io) peer_lost(p, ec);
        else asio::post(io, [this, &p, ec] { peer_lost(p, ec); });
        return rx::stop;
    }

    rx rx_fail(peer_state& p, const std::string& why, bool on_io) {
        p.rx_closed.store(true);
        if (on_io) fail(why);
        else asio::post(io, [this, why] { fail(why); });
        return rx::stop;
    }

    /// Holding p.rmu: a header was parsed; decides where its payload goes.
    rx begin_frame(peer_state& p, bool on_io) {
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
        default: return rx_fail(p, p.name + " sent an unexpected " + std::string(name_of(h.type)) + " frame", on_io);
        }
        if (!epoch_known || h.epoch != epoch)
            return rx_fail(p, p.name + " sent data of epoch " + std::to_string(h.epoch) + ", current epoch " + std::to_string(epoch),
                           on_io);
        std::unique_lock lk(rq_mu);
        if (p.unexpected.empty() && !p.recvq.empty() && writable(*p.recvq.front())) {
            // While this frame is read in place, `unexpected` stays empty
            // (only the holder of rmu fills it), so a caller posting
            // receives meanwhile delivers nothing and the front stays put.
            auto& req = p.recvq.front();
            if (!same_op(req->h, h)) {
                const std::string why = "mismatched collective with " + p.name + ": this task expects " + describe(req->h) +
                                        ", the peer sent " + describe(h);
                lk.unlock();
                return rx_fail(p, why, on_io);
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
    rx end_frame(peer_state& p, bool on_io) {
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
                               on_io);
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
    rx pump(peer_state& p, bool on_io, const req_state* r = nullptr) {
        if (p.rx_closed.load() || !p.sock) return rx::stop;
        const int fd = p.fd;
        std::byte* st = p.stage.get();
        for (;;) {
            if (failing_flag.load()) return rx::stop;
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
                    if (!res.ok) return rx_fail(p, p.name + " sent a bad frame: " + res.reason, on_io);
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
    void unlock_rx(peer_state& p) {
        p.rmu.unlock();
        if (p.io_read_wanted.exchange(false)) asio::post(io, [&p] { p.wake->cancel(); });
    }

    /// I/O thread: takes p back from the caller if no caller is reading it now.
    void take_back(peer_state& p) {
        if (!p.caller_owned.load() || !p.rmu.try_lock()) return;
        p.caller_owned.store(false);
        p.rmu.unlock();
        p.wake->cancel();
    }

    /// I/O thread: watches p's socket while no caller owns it.
    asio::awaitable<void> reader(peer_state& p) {
        auto sock = p.sock; // keeps the socket alive for this coroutine
        bool need_wait = true;
        auto park = [&]() -> asio::awaitable<void> {
            p.wake->expires_at(clock::time_point::max());
            error_code ignored;
            co_await p.wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        };
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
                co_await park();
                p.parked_owned = false;
                need_wait = false;
                continue;
            }
            if (!p.rmu.try_lock()) {
                // A caller is reading; it wakes us when it lets go (flag set
                // before the second try, so one of the two sees the other).
                p.io_read_wanted.store(true);
                if (!p.rmu.try_lock()) {
                    co_await park();
                    need_wait = false;
                    continue;
                }
                p.io_read_wanted.store(false);
            }
            const rx k = pump(p, true);
            p.rmu.unlock();
            if (k == rx::stop) co_return;
            if (k == rx::parked) {
                co_await park();
                touch(p);
                need_wait = false;
            }
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

    /// Any thread: queues receive `r` (delivering a buffered frame at once).
    bool caller_reads(const req_state& r) const { return r.h.length <= opt.caller_read_bytes; }

    void post_recv(peer_state& p, const std::shared_ptr<req_state>& r) {
        if (caller_reads(*r)) p.caller_owned.store(true); // the caller reads this socket from now on (see pump)
        else if (p.caller_owned.load()) { // a long frame: the I/O thread reads it
            p.caller_owned.store(false);
            asio::post(io, [&p] { p.wake->cancel(); });
        }
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
        watch(p);
        if (failing) return p.wmu.unlock();
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
            if (r->h.type == frame_type::goodbye) ::shutdown(p.fd, SHUT_WR);
            complete(r);
            if (!p.sendq.empty()) start_write(p);
            else if (p.parked_owned) unwatch(p);
        });
    }

    /// Any thread: retries buffered frames that waited for a send to finish.
    void redeliver() {
        if (!delivery_blocked.exchange(false)) return;
        std::lock_guard lk(rq_mu);
        for (auto& q : peers) deliver(*q);
    }

    void unregister_inflight(const std::byte* payload, std::size_t n) {
        std::lock_guard lk(inflight_mu);
        for (auto it = inflight.begin(); it != inflight.end(); ++it)
            if (it->first == payload && it->second == n) {
                inflight.erase(it);
                return;
            }
    }

    /// Caller thread (or the sender thread, `queued`): writes data frame `r`
    /// to `p` (header and payload in one scatter-gather write, polling while
    /// the socket is full). Returns true once the whole frame is written;
    /// false if the transport failed, the peer is gone or `deadline` passed
    /// (then the failure is, or is being, recorded and `wait` on the request
    /// throws). A queued frame's payload was registered in `inflight` when it
    /// was queued and leaves it here, whatever the outcome.
    bool caller_write(peer_state& p, req_state& r, clock::time_point deadline, bool queued = false) {
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
            if (failed.load() || failing_flag.load()) {
                release();
                return false;
            }
            if (i > 64) {
                if (clock::now() >= deadline) {
                    release();
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

    // ---- sending through the sender thread ------------------------------------
    //
    // `send` hands a data frame of at least send_thread_bytes (or any frame to
    // a peer that still has queued frames, so frames to a peer keep their
    // order) to one sender thread per transport, which writes the queue in
    // order with caller_write (same write lock, deadline and failure rules as
    // a caller's write; it never reads). The payload counts as in flight from
    // the moment it is queued, so no receive overwrites it before it is sent.
    // A caller waiting for a queued send keeps reading the sockets it owns
    // (two tasks waiting for their sends to each other never stall).

    bool use_sender(const peer_state& p, const req_state& r) const {
        return r.h.length >= opt.send_thread_bytes || p.queued.load() > 0;
    }

    void signal_send_done() {
        if (send_efd >= 0 && send_waiters.load() > 0) {
            const std::uint64_t one = 1;
            (void)!::write(send_efd, &one, sizeof one);
        }
    }

    /// Caller: queues data frame `r` for the sender thread.
    void queue_send(peer_state& p, const std::shared_ptr<req_state>& r) {
        if (r->h.length) {
            std::lock_guard lk(inflight_mu);
            inflight.emplace_back(static_cast<const std::byte*>(r->src), r->h.length);
        }
        p.queued.fetch_add(1);
        {
            std::lock_guard lk(sq_mu);
            if (!sender.joinable()) {
                send_efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
                sender = std::thread([this] { sender_loop(); });
            }
            sq.push_back(r);
        }
        sq_cv.notify_one();
    }

    void sender_loop() {
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
            signal_send_done();
            notify();
        }
    }

    /// Stops the sender thread; frames still queued are dropped unwritten.
    void stop_sender() {
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
        if (send_efd >= 0) ::close(send_efd);
        send_efd = -1;
    }

    /// Caller: waits for queued send `r`, reading the sockets it owns meanwhile.
    void wait_send(const req_state& r, clock::time_point deadline) {
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
            if (send_efd >= 0) pf[nf++] = pollfd{send_efd, POLLIN, 0};
            for (auto& q : peers) {
                if (nf == max_poll) break;
                if (q->rank == rank || !q->sock || !q->caller_owned.load() || q->rx_closed.load()) continue;
                if (!q->rmu.try_lock()) continue;
                const rx k = pump(*q, false);
                unlock_rx(*q);
                if (k != rx::again) continue;
                pf[nf++] = pollfd{q->fd, POLLIN, 0};
            }
            if (r.state.load(std::memory_order_acquire)) return;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
            (void)::poll(pf, static_cast<nfds_t>(nf), static_cast<int>(std::min<long long>(left, 10)));
            if (send_efd >= 0 && nf > 0 && pf[0].revents) {
                std::uint64_t v;
                (void)!::read(send_efd, &v, sizeof v);
            }
        }
    }

    static constexpr int max_poll = 64;

    /// Spin of the waits that another thread completes (a queued long send,
    /// a frame the I/O thread reads): short, they rarely end that soon.
    std::chrono::microseconds short_spin() const { return std::min(opt.spin_wait, std::chrono::microseconds(20)); }

    bool write_frame(peer_state& p, req_state& r, clock::time_point deadline, bool read_meanwhile = true) {
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
                if (failed.load()) return give_up();
                if (clock::now() >= deadline) {
                    const std::string why = "timed out sending " + describe(r.h) + " to " + p.name;
                    asio::post(io, [this, why] { fail(why); });
                    return give_up();
                }
                pollfd pf[max_poll];
                int nf = 1;
                pf[0] = pollfd{fd, POLLOUT, 0};
                for (auto& q : peers) {
                    if (nf == max_poll || !read_meanwhile) break;
                    if (q->rank == rank || !q->sock || !q->caller_owned.load() || q->rx_closed.load()) continue;
                    if (!q->rmu.try_lock()) continue;
                    const rx k = pump(*q, false);
                    unlock_rx(*q);
                    if (k != rx::again) continue;
                    pf[nf++] = pollfd{q->fd, POLLIN, 0};
                }
                const int k = ::poll(pf, static_cast<nfds_t>(nf), 10);
                if (k < 0 && errno != EINTR) break;
                if (k > 0 && pf[0].revents) break;
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
                if (we_stalled) p.last_recv.store(now.time_since_epoch().count());
                // A socket a caller took over but is not reading now goes back
                // to this thread (heartbeats, aborts and goodbyes keep flowing
                // while the caller computes).
                take_back(p);
                if (!p.goodbye_sent && !p.writing && p.sendq.empty() && now - clock::time_point(clock::duration(p.last_send.load())) >= timeout / 4)
                    send_small(p, frame_type::heartbeat);
                const auto last_recv = clock::time_point(clock::duration(p.last_recv.load()));
                if (!p.parked && !p.goodbye_received && now - last_recv > timeout) {
                    fail(p.name + " is not responding: nothing received for " + ms_string(now - last_recv) +
                         " (heartbeat timeout " + ms_string(timeout) + ")");
                    co_return;
                }
            }
        }
    }

    // ---- caller side --------------------------------------------------------------

    [[noreturn]] void wait_timed_out(const req_state& r) {
        const std::string what = describe(r.h) + (r.is_send ? " to " : " from ") + names[r.peer];
        abort_from_caller("timed out waiting for " + what);
        throw error(failure());
    }

    /// Caller: how long this wait may poll before it sleeps.
    std::int64_t spin_budget() {
        const std::int64_t max_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.spin_wait).count();
        if (!opt.adaptive_spin || max_ns <= 0) return std::max<std::int64_t>(max_ns, 0);
        const std::int64_t b = spin_budget_ns.load(std::memory_order_relaxed);
        if (b == 0 && (spin_probe.fetch_add(1, std::memory_order_relaxed) & 63) == 63) return std::min(max_ns, spin_probe_ns);
        return b;
    }

    /// Caller: adapts the budget to how a wait that spun `budget` ended:
    /// `hit` (the frame came while spinning), else it outlasted the spin.
    void spin_feedback(std::int64_t budget, bool hit) {
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
    bool read_until(peer_state& p, const req_state& r, clock::time_point deadline) {
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
                    wait_timed_out(r);
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

    void wait(const std::shared_ptr<req_state>& r, clock::time_point deadline) {
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
        stop_sender(); // before the goodbyes: nothing is written after them
        if (thread.joinable()) {
            if (ready.load() && !failed.load() && size > 1) {
                asio::post(io, [this] {
                    for (auto& p : peers)
                        if (p->rank != rank) {
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
    return send(peer, h, payload, deadline, {});
}

inline request transport::send(int peer, const frame_header& h, const void* payload,
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
    return r;
}

inline request transport::recv(int peer, const frame_header& expected, void* payload) { return recv(peer, expected, payload, {}); }

inline request transport::recv(int peer, const frame_header& expected, void* payload,
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

inline void transport::wait(const request& r, std::chrono::steady_clock::time_point deadline) { impl_->wait(r, deadline); }

inline transport_stats transport::stats() const noexcept {
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

inline bool transport::done(const request& r) const noexcept { return r->state.load(std::memory_order_acquire) != 0; }

inline void transport::abort(const std::string& reason) {
    if (!impl_->failed.load()) impl_->abort_from_caller(reason);
}

inline bool transport::failed() const noexcept { return impl_->failed.load(); }
inline std::string transport::failure() const { return impl_->failure(); }

} // namespace typeflow::dist
