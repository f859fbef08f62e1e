#pragma once
// typeflow::dist::transport's state: requests, peers and detail::transport_impl,
// whose code transport.ipp lists by concern.
//
// Threading: one I/O thread runs the io_context (bootstrap, heartbeats,
// control frames) and reads the sockets no caller has taken over. Data frames
// are written by the calling thread itself (scatter-gather `sendmsg`, polling
// for room when the socket is full, reading its own sockets meanwhile), long
// ones by a sender thread (see transport_send.ipp);
// frames of the I/O thread (heartbeat, goodbye, control, abort) and the
// caller's writes are serialized per peer by `peer_state::wmu`, held for a
// whole frame so frames never interleave. Receives are posted by the caller
// (per-peer receive queues and buffered frames under `rq_mu`), which then
// reads the peer's socket itself while it waits (`pump` under the per-peer
// read lock `rmu`; see transport_recv.ipp). Completion is a flag in the request.

#include <typeflow/distributed/handshake.hpp>
#include <typeflow/distributed/transport.hpp>

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

TYPEFLOW_DIST_DECL std::string ms_string(clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

/// One send or receive. `state` flips to 1 on completion, or to 2 when its
/// peer was dropped (release); all other fields belong to the I/O thread once
/// submitted.
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
    /// transport::tolerate_loss: a failure of this peer drops it alone.
    std::atomic<bool> expendable{false};
    /// Dropped (set by lose_peer on the I/O thread): nothing is read from or
    /// written to it again, and its requests complete with state 2.
    std::atomic<bool> lost{false};
    std::string lost_why; // guarded by transport_impl::mu
    /// Caller-written sends to this peer that failed (their peer may be being
    /// dropped): completed with state 2 when it is. Guarded by rq_mu.
    std::vector<std::shared_ptr<req_state>> unsent;

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
    /// A connection serve_handshake has taken a hello from and not yet
    /// attached or refused: fail() tells it why too, so a task still joining
    /// learns what stopped the chief (I/O thread only).
    struct handshake_conn {
        std::weak_ptr<tcp::socket> s;
        bool writing = false; // a handshake frame is being written: no abort now
        bool done = false;    // attached, refused or gone
    };
    // Marks a handshake_conn done on every way out of serve_handshake,
    // including the coroutine frame's destruction (a class of its own: a
    // local class in a coroutine's frame has no linkage, and GCC warns of it
    // in -Wsubobject-linkage when the coroutine is compiled separately).
    struct mark_done {
        std::shared_ptr<handshake_conn> c;
        ~mark_done() { c->done = true; }
    };
    std::vector<std::shared_ptr<handshake_conn>> handshaking;
    std::unique_ptr<tcp::acceptor> acceptor;
    /// This task's address is "*": the port it listens on, reported at join.
    unsigned short reported_port = 0;
    /// Sets rank r's address (and the names that show it) once known.
    void learn_address(int r, const std::string& address) {
        addresses[static_cast<std::size_t>(r)] = address;
        names[static_cast<std::size_t>(r)] =
            spec.task_of(r).name() + " (rank " + std::to_string(r) + ", " + address + ")";
        peers[static_cast<std::size_t>(r)]->name = names[static_cast<std::size_t>(r)];
    }
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

    // Sender thread (see transport_send.ipp): writes the long data frames
    // callers queue, so a caller's receives and reductions overlap its writes.
    std::thread sender;
    std::mutex sq_mu;                            // guards sq, sq_stop
    std::condition_variable sq_cv;
    std::deque<std::shared_ptr<req_state>> sq;   // queued data frames, all peers, in order
    bool sq_stop = false;
    std::atomic<int> send_waiters{0};            // callers waiting for a queued send
    /// eventfd: a queued send completed (or the transport failed). Created
    /// by the first queue_send (under sq_mu, before the sender thread
    /// starts); written by the sender thread and by the I/O thread
    /// (finalize_failure), read by callers waiting for a queued send.
    /// Atomic because the I/O thread may load it while a caller creates it;
    /// closed only by shutdown once the sender thread and the I/O thread
    /// have both been joined (close_send_efd), so neither can write to it
    /// after it is closed, nor to another descriptor given its number.
    std::atomic<int> send_efd{-1};
    /// Held by the sender thread around each write syscall (after checking
    /// `failed`) and by finalize_failure while it sets `failed`: once a
    /// caller sees the failure, the sender reads no user buffer again.
    std::mutex sender_io_mu;

    std::thread thread;

    explicit transport_impl(const cluster_spec& s) : spec(s), opt(s.options) {
        // Options set in code are held to the ranges a parsed spec is
        // (a deadline `now + op_timeout`, the spin budget in ns: no overflow).
        check_options(opt, spec.task.name());
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

    enum class rx { again, parked, stop }; // what a read of a socket (pump) left behind
    static constexpr std::size_t stage_bytes = 64 * 1024; // peer_state::stage
    static constexpr int max_poll = 64; // sockets one poll() watches

    // completion and failure (transport_failure.ipp)
    void notify();
    void complete(const std::shared_ptr<req_state>& r);
    static void raw_send(int fd, const void* data, std::size_t n);
    static void raw_send(tcp::socket& s, const void* data, std::size_t n);
    static std::vector<std::byte> abort_frame(const std::string& reason);
    void fail(const std::string& reason);
    void write_done_while_failing(peer_state& p, bool ok);
    void send_abort(peer_state& p);
    void caller_write_done_while_failing(peer_state& p);
    void check_writes_quiet();
    void finalize_failure();
    void wait_failed();
    std::string failure();
    void peer_lost(peer_state& p, const error_code& ec);
    void fail_peer(peer_state& p, const std::string& why, bool tell);
    void lose_peer(peer_state& p, const std::string& why, bool tell);
    void fail_peer_requests(peer_state& p);
    void note_unsent(peer_state& p, const std::shared_ptr<req_state>& r);
    [[noreturn]] void throw_lost(int peer);
    void fail_any(const std::string& reason);
    void abort_from_caller(const std::string& reason);
    void wait_timed_out(const req_state& r);

    // bootstrap and handshake (transport_bootstrap.ipp)
    void start();
    void open_acceptor();
    struct deadline_guard;
    asio::awaitable<void> read_frame(tcp::socket& s, frame_header& h, std::vector<std::byte>& payload,
                                     std::size_t max_payload);
    static std::vector<std::byte> frame_bytes(const frame_header& h, const void* payload);
    asio::awaitable<void> accept_loop();
    static std::string endpoint_string(const tcp::socket& s);
    asio::awaitable<void> serve_handshake(std::shared_ptr<tcp::socket> s);
    asio::awaitable<void> connect_peer(int to);
    static std::string aborted_by(const std::string& who, const std::vector<std::byte>& payload);
    void attach(int r, std::shared_ptr<tcp::socket> s);
    void send_control(peer_state& p, const control_msg& m);
    void on_control(peer_state& p, const std::vector<std::byte>& payload);
    void check_ready();

    // reading and delivery (transport_recv.ipp)
    void touch(peer_state& p);
    void watch(peer_state& p);
    void unwatch(peer_state& p);
    rx rx_lost(peer_state& p, const error_code& ec, bool on_io);
    rx rx_fail(peer_state& p, const std::string& why, bool tell = true);
    static bool same_op(const frame_header& a, const frame_header& b);
    static std::string mismatch(const peer_state& p, const frame_header& want, const frame_header& got);
    rx begin_frame(peer_state& p, bool on_io);
    rx end_frame(peer_state& p, bool on_io);
    rx pump(peer_state& p, bool on_io, const req_state* r = nullptr);
    void unlock_rx(peer_state& p);
    void take_back(peer_state& p);
    static asio::awaitable<void> park(peer_state& p);
    asio::awaitable<void> reader(peer_state& p);
    bool writable(const req_state& r);
    void deliver(peer_state& p);
    void redeliver();
    bool caller_reads(const req_state& r) const;
    void post_recv(peer_state& p, const std::shared_ptr<req_state>& r);

    // writing and the sender thread (transport_send.ipp)
    void post_send(peer_state& p, const std::shared_ptr<req_state>& r);
    void start_write(peer_state& p);
    void write_failed(peer_state& p, const error_code& ec);
    void read_before_loss(peer_state& p);
    bool caller_write(peer_state& p, req_state& r, clock::time_point deadline, bool queued = false);
    void unregister_inflight(const std::byte* payload, std::size_t n);
    bool write_frame(peer_state& p, req_state& r, clock::time_point deadline, bool read_meanwhile = true);
    bool use_sender(const peer_state& p, const req_state& r) const;
    void signal_send_done();
    void queue_send(peer_state& p, const std::shared_ptr<req_state>& r);
    void sender_loop();
    void stop_sender();
    void close_send_efd();
    void send_small(peer_state& p, frame_type t);

    // a caller's wait (transport_wait.ipp)
    std::chrono::microseconds short_spin() const;
    std::int64_t spin_budget();
    void spin_feedback(std::int64_t budget, bool hit);
    bool read_until(peer_state& p, const req_state& r, clock::time_point deadline);
    int read_owned(pollfd* pf, int nf);
    void wait_send(const req_state& r, clock::time_point deadline);
    void wait(const std::shared_ptr<req_state>& r, clock::time_point deadline);
    bool test(const std::shared_ptr<req_state>& r);

    // heartbeats and shutdown (transport_heartbeat.ipp)
    asio::awaitable<void> tick_loop();
    void send_goodbye(peer_state& p);
    void shutdown();
};

} // namespace detail
} // namespace typeflow::dist
