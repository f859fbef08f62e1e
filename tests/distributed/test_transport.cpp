// Transport: bootstrap, data exchange, refusal of bad input, mismatches,
// deadlines, clean shutdown. In-process: each task runs on its own thread.
#include <typeflow/distributed/ring_collective.hpp>
#include <typeflow/distributed/transport.hpp>

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/asio.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <numeric>
#include <thread>

using namespace typeflow::dist;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using clock_type = std::chrono::steady_clock;

namespace {

frame_header slice(std::uint32_t epoch, std::uint64_t seq, std::uint64_t count, std::uint64_t offset, std::uint64_t n) {
    frame_header h;
    h.type = frame_type::data;
    h.op = op_code::broadcast;
    h.dtype_code = wire_code(dtype::int32);
    h.epoch = epoch;
    h.seq = seq;
    h.count = count;
    h.offset = offset;
    h.length = n * 4;
    return h;
}

/// Starts all transports concurrently (construction blocks until connected).
std::vector<std::unique_ptr<transport>> start_all(const std::vector<cluster_spec>& specs) {
    std::vector<std::future<std::unique_ptr<transport>>> fs;
    for (auto& s : specs) fs.push_back(std::async(std::launch::async, [&s] { return std::make_unique<transport>(s); }));
    std::vector<std::unique_ptr<transport>> out;
    for (auto& f : fs) out.push_back(f.get());
    return out;
}

auto soon(std::chrono::milliseconds d = 10s) { return clock_type::now() + d; }

} // namespace

TEST_CASE("two tasks bootstrap and exchange data both ways") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(2));
    REQUIRE(ts[0]->epoch() == ts[1]->epoch());
    REQUIRE(ts[0]->epoch() != 0);
    CHECK(ts[1]->peer_name(0) == "worker:0 (rank 0, " + std::string(ts[1]->peer_name(0)).substr(18));
    std::vector<int> a(1000), b(1000, -1), c(1000, -1);
    std::iota(a.begin(), a.end(), 7);
    auto e = ts[0]->epoch();
    auto r1 = ts[1]->recv(0, slice(e, 1, 1000, 0, 1000), b.data());
    auto s0 = ts[0]->send(1, slice(e, 1, 1000, 0, 1000), a.data());
    auto r0 = ts[0]->recv(1, slice(e, 2, 1000, 0, 1000), c.data());
    auto s1 = ts[1]->send(0, slice(e, 2, 1000, 0, 1000), a.data());
    for (auto* r : {&r1, &s0}) ts[0]->wait(*r, soon());
    for (auto* r : {&r0, &s1}) ts[1]->wait(*r, soon());
    CHECK(b == a);
    CHECK(c == a);
    ts.clear(); // clean shutdown: goodbye, no errors
    CHECK_FALSE(logs.contains("error"));
    CHECK(logs.all().find("closed the connection") == std::string::npos);
}

TEST_CASE("data that arrives before its receive is posted is buffered") {
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    std::vector<int> a(100), b(100, 0);
    std::iota(a.begin(), a.end(), 1);
    ts[0]->wait(ts[0]->send(1, slice(e, 1, 200, 0, 100), a.data()), soon());
    ts[0]->wait(ts[0]->send(1, slice(e, 1, 200, 100, 100), a.data()), soon());
    std::this_thread::sleep_for(50ms);
    ts[1]->wait(ts[1]->recv(0, slice(e, 1, 200, 0, 100), b.data()), soon());
    CHECK(b == a);
    std::fill(b.begin(), b.end(), 0);
    ts[1]->wait(ts[1]->recv(0, slice(e, 1, 200, 100, 100), b.data()), soon());
    CHECK(b == a);
}

TEST_CASE("a payload whose receive is posted first lands in place; an early one is copied once") {
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    std::vector<int> a(4096), b(4096, 0);
    std::iota(a.begin(), a.end(), 3);
    auto r = ts[1]->recv(0, slice(e, 1, 4096, 0, 4096), b.data());
    std::this_thread::sleep_for(20ms); // the receive is surely posted
    ts[0]->wait(ts[0]->send(1, slice(e, 1, 4096, 0, 4096), a.data()), soon());
    ts[1]->wait(r, soon());
    CHECK(b == a);
    CHECK(ts[1]->stats().data_frames_received == 1);
    CHECK(ts[1]->stats().unexpected_frames == 0);
    std::fill(b.begin(), b.end(), 0);
    ts[0]->wait(ts[0]->send(1, slice(e, 2, 4096, 0, 4096), a.data()), soon());
    std::this_thread::sleep_for(20ms);
    ts[1]->wait(ts[1]->recv(0, slice(e, 2, 4096, 0, 4096), b.data()), soon());
    CHECK(b == a);
    // The caller that waited last still reads this socket itself, so the
    // early frame usually stays in the socket until its receive is posted
    // and lands in place; if the I/O thread read it first it is copied once.
    CHECK(ts[1]->stats().unexpected_frames <= 1);
    CHECK(ts[0]->stats().data_frames_sent == 2);
}

TEST_CASE("a consumed receive gets its payload in order, in whole elements at aligned addresses") {
    // Read by the thread that waits (the default), or by the I/O thread
    // (frames over caller_read_bytes), which then runs the consumer.
    const bool io_reads = GENERATE(false, true);
    // The heartbeat tick (every twentieth of the timeout) takes back a socket
    // its caller is not reading at that moment, so with the default 10 s it
    // could fall inside the sleep below and hand the frame to the I/O thread:
    // a timeout of 10 minutes keeps the tick out of this test.
    auto ts = start_all(tfd_test::local_specs(
        2, io_reads ? R"({"caller_read_bytes": 1024, "heartbeat_timeout_ms": 600000})" : R"({"heartbeat_timeout_ms": 600000})"));
    auto e = ts[0]->epoch();
    // A 3-byte frame first, so the next payload starts at an odd offset of
    // the staging buffer; then 1.2 MB of int32 (many socket reads, whose
    // lengths need not divide by 4).
    frame_header odd = slice(e, 1, 3, 0, 0);
    odd.dtype_code = wire_code(dtype::boolean);
    odd.length = 3;
    const unsigned char three[3] = {1, 2, 3};
    unsigned char got3[3] = {};
    const std::size_t n = 300001;
    std::vector<std::int32_t> a(n), b(n, 0);
    std::iota(a.begin(), a.end(), -5);
    std::atomic<std::size_t> next{0}, pieces{0}, bad{0};
    std::atomic<bool> off_thread{false};
    const auto caller = std::this_thread::get_id();
    auto consume = [&](std::size_t off, const std::byte* p, std::size_t bytes) {
        if (off != next.load() || bytes % 4 || reinterpret_cast<std::uintptr_t>(p) % alignof(std::int32_t) || !bytes) ++bad;
        if (std::this_thread::get_id() != caller) off_thread = true;
        std::memcpy(reinterpret_cast<std::byte*>(b.data()) + off, p, bytes);
        next += bytes;
        ++pieces;
    };
    SECTION("posted before the frame comes") {
        auto r3 = ts[1]->recv(0, odd, got3);
        auto r = ts[1]->recv(0, slice(e, 1, n, 0, n), b.data(), consume);
        ts[0]->wait(ts[0]->send(1, odd, three), soon());
        auto s = ts[0]->send(1, slice(e, 1, n, 0, n), a.data());
        // Both frames wait in the socket, which the caller reads (it posted
        // the receives; by default): one read takes both headers and the
        // start of the payload, which then lies at an odd offset.
        std::this_thread::sleep_for(20ms);
        ts[1]->wait(r3, soon());
        ts[1]->wait(r, soon());
        ts[0]->wait(s, soon());
        CHECK(pieces.load() > 1);
        CHECK(off_thread.load() == io_reads);
    }
    SECTION("posted after the frame came (buffered, handed over whole)") {
        ts[0]->wait(ts[0]->send(1, odd, three), soon());
        ts[0]->wait(ts[0]->send(1, slice(e, 1, n, 0, n), a.data()), soon());
        std::this_thread::sleep_for(50ms); // the I/O thread reads both
        auto r3 = ts[1]->recv(0, odd, got3);
        ts[1]->wait(ts[1]->recv(0, slice(e, 1, n, 0, n), b.data(), consume), soon());
        ts[1]->wait(r3, soon());
        CHECK(ts[1]->stats().unexpected_frames == 2);
        CHECK(pieces.load() == 1);
    }
    CHECK(got3[0] == 1);
    CHECK(got3[2] == 3);
    CHECK(bad.load() == 0);
    CHECK(next.load() == n * 4);
    CHECK(b == a);
}

TEST_CASE("four tasks form a full mesh") {
    auto ts = start_all(tfd_test::local_specs(4));
    std::vector<std::vector<int>> got(16, std::vector<int>(3, -1));
    std::vector<int> src[4];
    std::vector<request> reqs;
    for (int i = 0; i < 4; ++i) src[i] = {i, i * 10, i * 100};
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (i != j) {
                reqs.push_back(ts[j]->recv(i, slice(ts[0]->epoch(), 5, 3, 0, 3), got[i * 4 + j].data()));
                reqs.push_back(ts[i]->send(j, slice(ts[0]->epoch(), 5, 3, 0, 3), src[i].data()));
            }
    for (auto& r : reqs) ts[0]->wait(r, soon()); // waiting works on any transport's requests in-process
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (i != j) CHECK(got[i * 4 + j] == src[i]);
}

namespace {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// A raw client of `address`: sends `bytes`, then reads until the server closes.
std::string raw_client(unsigned short port, const std::vector<std::byte>& bytes, bool close_after = true,
                       std::chrono::milliseconds hold = 0ms) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    boost::system::error_code ec; // the server may refuse (close) before we are done
    asio::write(s, asio::buffer(bytes), ec);
    if (hold.count()) std::this_thread::sleep_for(hold);
    if (close_after) s.shutdown(tcp::socket::shutdown_send, ec);
    std::string got;
    char buf[4096];
    for (;;) {
        auto n = s.read_some(asio::buffer(buf), ec);
        if (ec) break;
        got.append(buf, n);
    }
    return got;
}

std::vector<std::byte> header_bytes(const frame_header& h) {
    auto a = encode_header(h);
    return {a.begin(), a.end()};
}

/// Connects `s` to the task at `port` as `rank`: sends a hello with a fresh
/// nonce and reads the challenge (header, server nonce, server proof).
handshake::nonce hello_and_challenge(tcp::socket& s, unsigned short port, std::uint32_t rank,
                                     std::array<std::byte, 48 + 64>& challenge) {
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    auto nc = handshake::make_nonce();
    frame_header hh;
    hh.type = frame_type::hello;
    hh.seq = rank;
    hh.length = 32;
    auto hb = encode_header(hh);
    asio::write(s, std::array{asio::buffer(hb), asio::buffer(nc)});
    asio::read(s, asio::buffer(challenge));
    return nc;
}

std::vector<std::byte> hello(std::uint32_t rank) {
    frame_header h;
    h.type = frame_type::hello;
    h.seq = rank;
    h.length = 32;
    auto b = header_bytes(h);
    b.resize(b.size() + 32, std::byte{0x42});
    return b;
}
} // namespace

TEST_CASE("bad input is refused with a logged reason while good peers are served") {
    tfd_test::log_capture logs;
    auto specs = tfd_test::local_specs(2, R"({"handshake_timeout_ms": 300})");
    const auto port = split_address(specs[0].address_of(0), "").second;
    auto chief = std::async(std::launch::async, [&] { return std::make_unique<transport>(specs[0]); });
    std::this_thread::sleep_for(100ms); // the chief is listening

    std::vector<std::byte> garbage(100);
    for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::byte>(i * 37 + 11);
    raw_client(port, garbage);

    auto h = hello(1);
    auto bad_magic = h;
    bad_magic[0] = std::byte{'X'};
    raw_client(port, bad_magic);
    auto bad_version = h;
    bad_version[4] = std::byte{9};
    raw_client(port, bad_version);
    frame_header big;
    big.type = frame_type::hello;
    big.length = std::uint64_t{1} << 40;
    raw_client(port, header_bytes(big));
    raw_client(port, std::vector<std::byte>(h.begin(), h.begin() + 20)); // truncated header, then EOF
    raw_client(port, std::vector<std::byte>(h.begin(), h.begin() + 60)); // truncated payload, then EOF
    raw_client(port, std::vector<std::byte>(h.begin(), h.begin() + 20), false, 600ms); // stalls: handshake deadline
    auto wrong_rank = hello(7);
    raw_client(port, wrong_rank);
    auto self_rank = hello(0);
    raw_client(port, self_rank);

    { // A client that completes the protocol with the wrong secret.
        asio::io_context io;
        tcp::socket s(io);
        std::array<std::byte, 48 + 64> ch;
        const auto nc = hello_and_challenge(s, port, 1, ch);
        handshake::nonce ns;
        std::memcpy(ns.data(), ch.data() + 48, 32);
        auto proof = handshake::client_proof("not-the-secret", ns, nc, 1);
        frame_header rh;
        rh.type = frame_type::response;
        rh.length = 32;
        auto rb = encode_header(rh);
        asio::write(s, std::array{asio::buffer(rb), asio::buffer(proof)});
        std::array<std::byte, 48> reply;
        asio::read(s, asio::buffer(reply));
        auto parsed = parse_header(reply.data(), 0);
        REQUIRE(parsed.ok);
        CHECK(parsed.header.type == frame_type::abort); // told why, then closed
    }

    // The good peer still gets in.
    auto worker = std::make_unique<transport>(specs[1]);
    auto c = chief.get();
    int x = 42, y = 0;
    auto e = c->epoch();
    auto r = worker->recv(0, slice(e, 1, 1, 0, 1), &y);
    c->wait(c->send(1, slice(e, 1, 1, 0, 1), &x), soon());
    worker->wait(r, soon());
    CHECK(y == 42);

    INFO(logs.all());
    CHECK(logs.contains("refused connection from 127.0.0.1"));
    CHECK(logs.contains("bad magic 0x"));
    CHECK(logs.contains("unsupported protocol version 9"));
    CHECK(logs.contains("hello frame with payload length 1099511627776"));
    CHECK(logs.contains("connection closed during the handshake (truncated frame?)"));
    CHECK(logs.contains("handshake timed out"));
    CHECK(logs.contains("hello claims rank 7 outside 0..1"));
    CHECK(logs.contains("hello claims this task's own rank 0"));
    CHECK(logs.contains("client failed authentication (wrong shared secret?)"));
}

TEST_CASE("a task still in its handshake is told why the chief failed, and names it") {
    tfd_test::log_capture logs;
    { // The chief fails (its bootstrap times out) while a task waits in the handshake.
        auto specs = tfd_test::local_specs(3, R"({"connect_timeout_ms": 800, "handshake_timeout_ms": 5000})");
        const auto port = split_address(specs[0].address_of(0), "").second;
        auto chief = std::async(std::launch::async, [&] { return std::make_unique<transport>(specs[0]); });
        std::this_thread::sleep_for(100ms); // the chief is listening
        asio::io_context io;
        tcp::socket s(io);
        std::array<std::byte, 48 + 64> ch;
        hello_and_challenge(s, port, 2, ch); // no response: the chief waits
        std::array<std::byte, 48> next;
        asio::read(s, asio::buffer(next));
        auto parsed = parse_header(next.data(), 0);
        REQUIRE(parsed.ok);
        REQUIRE(parsed.header.type == frame_type::abort);
        std::string reason(parsed.header.length, '\0');
        asio::read(s, asio::buffer(reason));
        CHECK_THAT(reason, Contains("bootstrap timed out after 800 ms") && Contains("worker:1"));
        CHECK_THROWS_WITH(chief.get(), Contains("bootstrap timed out after 800 ms"));
    }
    { // A joining task that gets an abort in place of the challenge names the
      // chief and the chief's reason (not "connection reset").
        auto specs = tfd_test::local_specs(2, R"({"connect_timeout_ms": 3000})");
        const auto port = split_address(specs[0].address_of(0), "").second;
        asio::io_context io;
        tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), port});
        auto server = std::async(std::launch::async, [&] {
            tcp::socket s = acc.accept();
            std::array<std::byte, 48 + 32> h;
            asio::read(s, asio::buffer(h));
            const std::string why = "worker:2 (rank 2) closed the connection unexpectedly (process died?)";
            frame_header ab;
            ab.type = frame_type::abort;
            ab.length = why.size();
            auto abb = encode_header(ab);
            asio::write(s, std::array{asio::const_buffer(abb.data(), abb.size()), asio::buffer(why)});
            boost::system::error_code ec;
            char c;
            s.read_some(asio::buffer(&c, 1), ec); // until the task closes
        });
        CHECK_THROWS_WITH(transport(specs[1]), Contains("bootstrap: worker:0 (rank 0") &&
                                                   Contains("failed during the handshake: worker:2 (rank 2) closed the connection"));
        server.get();
    }
    { // A joining task refused in place of the accept (after a valid challenge
      // and its response) reads it as a refusal by the chief, with the reason.
        auto specs = tfd_test::local_specs(2, R"({"connect_timeout_ms": 3000})");
        const auto port = split_address(specs[0].address_of(0), "").second;
        const std::string secret = specs[0].effective_secret();
        asio::io_context io;
        tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), port});
        auto server = std::async(std::launch::async, [&] {
            tcp::socket s = acc.accept();
            std::array<std::byte, 48 + 32> h;
            asio::read(s, asio::buffer(h));
            handshake::nonce nc, ns = handshake::make_nonce();
            std::memcpy(nc.data(), h.data() + 48, 32);
            frame_header ch;
            ch.type = frame_type::challenge;
            ch.length = 64;
            const auto proof = handshake::server_proof(secret, nc, ns, 1);
            auto chb = encode_header(ch);
            asio::write(s, std::array{asio::const_buffer(chb.data(), chb.size()), asio::const_buffer(ns.data(), ns.size()),
                                      asio::const_buffer(proof.data(), proof.size())});
            std::array<std::byte, 48 + 32> response;
            asio::read(s, asio::buffer(response));
            const std::string why = "refused: worker:1 (rank 1) is already connected";
            frame_header ab;
            ab.type = frame_type::abort;
            ab.length = why.size();
            auto abb = encode_header(ab);
            asio::write(s, std::array{asio::const_buffer(abb.data(), abb.size()), asio::buffer(why)});
            boost::system::error_code ec;
            char c;
            s.read_some(asio::buffer(&c, 1), ec); // until the task closes
        });
        CHECK_THROWS_WITH(transport(specs[1]), Contains("bootstrap: refused by worker:0 (rank 0") &&
                                                   Contains("worker:1 (rank 1) is already connected") &&
                                                   !Contains("failed during the handshake"));
        server.get();
    }
}

TEST_CASE("a peer with the wrong secret cannot join") {
    tfd_test::log_capture logs;
    auto specs = tfd_test::local_specs(2, R"({"connect_timeout_ms": 1500})");
    specs[1].secret = "wrong";
    auto chief = std::async(std::launch::async, [&] { return std::make_unique<transport>(specs[0]); });
    CHECK_THROWS_WITH(transport(specs[1]), Contains("server failed authentication (wrong shared secret?)"));
    CHECK_THROWS_WITH(chief.get(), Contains("bootstrap timed out") && Contains("not connected to worker:1"));
}

TEST_CASE("a mismatched frame fails both sides with both headers named") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    std::vector<int> a(10), b(10);
    auto r = ts[1]->recv(0, slice(e, 3, 10, 0, 10), b.data());
    auto s = ts[0]->send(1, slice(e, 3, 11, 0, 10), a.data());
    const auto t0 = clock_type::now();
    CHECK_THROWS_WITH(ts[1]->wait(r, soon()), Contains("mismatched collective with worker:0") &&
                                                  Contains("expects data broadcast seq 3 int32[10]") &&
                                                  Contains("peer sent data broadcast seq 3 int32[11]"));
    // The other side learns through the abort frame.
    CHECK_THROWS_WITH(ts[0]->wait(ts[0]->recv(1, slice(e, 4, 1, 0, 1), b.data()), soon()),
                      Contains("aborted by worker:1") && Contains("mismatched"));
    CHECK(clock_type::now() - t0 < 1s);
    CHECK_THROWS_WITH(ts[0]->send(1, slice(e, 5, 1, 0, 1), a.data()), Contains("mismatched"));
}

TEST_CASE("a consumed receive facing a mismatched frame fails with both headers and consumes nothing") {
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    std::vector<int> a(10, 5), b(10, -1);
    int calls = 0;
    auto r = ts[1]->recv(0, slice(e, 3, 10, 0, 10), b.data(),
                         [&](std::size_t, const std::byte*, std::size_t) { ++calls; });
    ts[0]->send(1, slice(e, 3, 11, 0, 10), a.data());
    CHECK_THROWS_WITH(ts[1]->wait(r, soon()), Contains("mismatched collective with worker:0") &&
                                                  Contains("expects data broadcast seq 3 int32[10]") &&
                                                  Contains("peer sent data broadcast seq 3 int32[11]"));
    CHECK(calls == 0);
    CHECK(b == std::vector<int>(10, -1));
}

TEST_CASE("a receive that passes its deadline fails the transport and tells the peer") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    int v = 0;
    auto r = ts[0]->recv(1, slice(e, 1, 1, 0, 1), &v);
    const auto t0 = clock_type::now();
    CHECK_THROWS_WITH(ts[0]->wait(r, clock_type::now() + 200ms),
                      Contains("timed out waiting for data broadcast seq 1 int32[1] slice 0+1") && Contains("from worker:1"));
    CHECK(clock_type::now() - t0 < 1s);
    CHECK_THROWS_WITH(ts[1]->wait(ts[1]->recv(0, slice(e, 1, 1, 0, 1), &v), soon()),
                      Contains("aborted by worker:0") && Contains("timed out"));
}

TEST_CASE("a send to a peer that stops reading passes its deadline and fails the transport") {
    tfd_test::log_capture logs;
    // worker:1 buffers at most 64 KiB of unposted data, then stops reading.
    // send_thread_bytes above the frame: the caller writes it (and blocks).
    auto ts = start_all(tfd_test::local_specs(
        2, R"({"max_unexpected_bytes": 65536, "heartbeat_timeout_ms": 1000, "send_thread_bytes": 1073741824})"));
    auto e = ts[0]->epoch();
    std::vector<int> a(std::size_t{8} << 20, 7); // 32 MiB: more than the socket buffers hold
    const auto t0 = clock_type::now();
    auto r = ts[0]->send(1, slice(e, 1, a.size(), 0, a.size()), a.data(), clock_type::now() + 300ms);
    CHECK(clock_type::now() - t0 >= 250ms);
    CHECK(clock_type::now() - t0 < 2s);
    CHECK_FALSE(ts[0]->done(r));
    CHECK_THROWS_WITH(ts[0]->wait(r, soon()), Contains("timed out sending data broadcast seq 1") && Contains("to worker:1"));
    CHECK(ts[0]->failed());
}

TEST_CASE("a long send is queued to the sender thread: it returns at once and passes its deadline the same way") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(2, R"({"max_unexpected_bytes": 65536, "heartbeat_timeout_ms": 1000})"));
    auto e = ts[0]->epoch();
    std::vector<int> a(std::size_t{8} << 20, 7); // 32 MiB, above send_thread_bytes
    const auto t0 = clock_type::now();
    auto r = ts[0]->send(1, slice(e, 1, a.size(), 0, a.size()), a.data(), clock_type::now() + 300ms);
    CHECK(clock_type::now() - t0 < 200ms); // a caller's write would block until the deadline (300 ms)
    CHECK_FALSE(ts[0]->done(r));
    CHECK_THROWS_WITH(ts[0]->wait(r, soon()), Contains("timed out sending data broadcast seq 1") && Contains("to worker:1"));
    CHECK(clock_type::now() - t0 >= 250ms);
    CHECK(clock_type::now() - t0 < 2s);
    CHECK(ts[0]->failed());
}

TEST_CASE("frames to one peer keep their order across the sender thread and the caller") {
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    const std::size_t n = std::size_t{1} << 20; // 4 MiB: queued
    std::vector<int> a(n), b(n, 0), c(1000, 0), d(1000, 0);
    std::iota(a.begin(), a.end(), 11);
    std::vector<int> small(1000);
    std::iota(small.begin(), small.end(), -500);
    auto s1 = ts[0]->send(1, slice(e, 1, n, 0, n), a.data());
    auto s2 = ts[0]->send(1, slice(e, 2, 1000, 0, 1000), small.data()); // short, but behind a queued frame
    auto s3 = ts[0]->send(1, slice(e, 3, 1000, 0, 1000), small.data());
    auto r1 = ts[1]->recv(0, slice(e, 1, n, 0, n), b.data());
    auto r2 = ts[1]->recv(0, slice(e, 2, 1000, 0, 1000), c.data());
    auto r3 = ts[1]->recv(0, slice(e, 3, 1000, 0, 1000), d.data());
    auto waiter = std::async(std::launch::async, [&] {
        for (auto* r : {&r1, &r2, &r3}) ts[1]->wait(*r, soon());
    });
    for (auto* r : {&s1, &s2, &s3}) ts[0]->wait(*r, soon());
    waiter.get();
    CHECK(b == a);
    CHECK(c == small);
    CHECK(d == small);
    CHECK(ts[0]->stats().data_frames_sent == 3);
}

TEST_CASE("a receive never overwrites a payload still queued for sending") {
    // worker:1 stops reading after 64 KiB of unposted data, so the 8 MiB
    // frame stays in flight while worker:1's reply arrives into its bytes.
    auto ts = start_all(tfd_test::local_specs(2, R"({"max_unexpected_bytes": 65536})"));
    auto e = ts[0]->epoch();
    const std::size_t n = std::size_t{2} << 20;
    std::vector<int> a(n, 7), b(n, 0), reply(1000, 9);
    auto s = ts[0]->send(1, slice(e, 1, n, 0, n), a.data());
    auto r = ts[0]->recv(1, slice(e, 2, 1000, 0, 1000), a.data() + n - 1000); // the queued payload's unsent tail
    auto waiter = std::async(std::launch::async, [&] { ts[0]->wait(r, soon()); });
    ts[1]->wait(ts[1]->send(0, slice(e, 2, 1000, 0, 1000), reply.data()), soon());
    std::this_thread::sleep_for(100ms); // the reply reaches worker:0 while the send is stuck
    CHECK_FALSE(ts[0]->done(s));
    ts[1]->wait(ts[1]->recv(0, slice(e, 1, n, 0, n), b.data()), soon());
    waiter.get();
    ts[0]->wait(s, soon());
    CHECK(std::all_of(b.begin(), b.end(), [](int v) { return v == 7; })); // sent before it was overwritten
    CHECK(std::equal(reply.begin(), reply.end(), a.end() - 1000));          // then the reply landed
    CHECK(std::all_of(a.begin(), a.end() - 1000, [](int v) { return v == 7; }));
    CHECK(ts[0]->stats().unexpected_frames == 1); // held back once
}

TEST_CASE("two tasks waiting for their queued sends to each other keep reading") {
    // The heartbeat tick (which would take idle sockets back) is 3 s apart
    // here, so only the waiting callers' own reads let this finish in time.
    auto ts = start_all(tfd_test::local_specs(2, R"({"heartbeat_timeout_ms": 60000})"));
    auto e = ts[0]->epoch();
    const std::size_t n = std::size_t{8} << 20; // 32 MiB each way: more than the sockets hold
    std::vector<int> a0(n, 1), a1(n, 2), b0(n, 0), b1(n, 0);
    const auto t0 = clock_type::now();
    auto side = [&](int me, std::vector<int>& out, std::vector<int>& in) {
        auto s = ts[me]->send(1 - me, slice(e, 1, n, 0, n), out.data());
        ts[me]->wait(s, soon()); // before the receive is posted
        ts[me]->wait(ts[me]->recv(1 - me, slice(e, 1, n, 0, n), in.data()), soon());
    };
    auto other = std::async(std::launch::async, [&] { side(1, a1, b1); });
    side(0, a0, b0);
    other.get();
    CHECK(clock_type::now() - t0 < 2s);
    CHECK(b0 == a1);
    CHECK(b1 == a0);
}

TEST_CASE("sockets a caller took over and left idle still carry heartbeats and aborts") {
    // After an exchange both callers own their sockets (the I/O thread has
    // stopped watching them); idle for 4 heartbeat timeouts, the transports
    // must stay healthy (heartbeats are read once the tick takes the
    // sockets back), and an abort must still reach the peer.
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(2, R"({"heartbeat_timeout_ms": 300})"));
    auto e = ts[0]->epoch();
    std::vector<int> a(100, 3), b(100, 0);
    for (std::uint64_t seq = 1; seq <= 2; ++seq) {
        auto r = ts[1]->recv(0, slice(e, seq, 100, 0, 100), b.data());
        ts[0]->wait(ts[0]->send(1, slice(e, seq, 100, 0, 100), a.data()), soon());
        ts[1]->wait(r, soon());
        CHECK(b == a);
        std::this_thread::sleep_for(1200ms);
        CHECK_FALSE(ts[0]->failed());
        CHECK_FALSE(ts[1]->failed());
    }
    CHECK(ts[0]->stats().heartbeats_sent > 0);
    auto r = ts[1]->recv(0, slice(e, 3, 100, 0, 100), b.data());
    ts[0]->abort("test abort");
    CHECK_THROWS_WITH(ts[1]->wait(r, soon(2s)), Contains("aborted by worker:0") && Contains("test abort"));
}

TEST_CASE("sends are written by the caller: complete on return when the socket has room") {
    auto ts = start_all(tfd_test::local_specs(2));
    auto e = ts[0]->epoch();
    std::vector<int> a(1000, 5), b(1000, 0);
    auto s = ts[0]->send(1, slice(e, 1, 1000, 0, 1000), a.data());
    CHECK(ts[0]->done(s));
    ts[1]->wait(ts[1]->recv(0, slice(e, 1, 1000, 0, 1000), b.data()), soon());
    CHECK(b == a);
    CHECK(ts[0]->stats().data_frames_sent == 1);
}

namespace {
/// worker:1 sends `rounds` frames to worker:0, each `delay` after worker:0
/// has posted its receive and started waiting; returns worker:0's stats.
transport_stats slow_sends(std::vector<std::unique_ptr<transport>>& ts, int rounds, std::chrono::microseconds delay,
                           std::uint64_t seq0 = 1) {
    auto e = ts[0]->epoch();
    for (int i = 0; i < rounds; ++i) {
        const auto seq = seq0 + static_cast<std::uint64_t>(i);
        int v = -1, w = i;
        auto r = ts[0]->recv(1, slice(e, seq, 1, 0, 1), &v);
        std::thread peer([&] {
            std::this_thread::sleep_for(delay);
            ts[1]->wait(ts[1]->send(0, slice(e, seq, 1, 0, 1), &w), soon());
        });
        ts[0]->wait(r, soon());
        peer.join();
        CHECK(v == i);
    }
    return ts[0]->stats();
}
} // namespace

TEST_CASE("the spin budget falls while the peer is slower than it and stays put without adaptive_spin") {
    // spin_wait 1 ms; the peer answers 20 ms after each receive is posted,
    // so every wait outlasts the spin (a miss) and the budget halves.
    auto ts = start_all(tfd_test::local_specs(2, R"({"spin_wait_us": 1000})"));
    CHECK(ts[0]->stats().spin_budget == 1000us);
    auto st = slow_sends(ts, 10, 20ms);
    // 1000 us halved 9 times is below the 2 us floor: 0, and a wait that
    // does not spin is neither hit nor miss. On a loaded machine the waiting
    // thread may not run for the whole 20 ms and find the frame there when it
    // starts to spin (a hit, which doubles the budget once): allow one.
    CHECK(st.spin_hits <= 1);
    CHECK(st.spin_misses >= 8);
    CHECK(st.spin_misses + st.spin_hits <= 10);
    if (st.spin_hits == 0) CHECK(st.spin_budget == 0us);
    else CHECK(st.spin_budget <= 8us);
    // At zero, waits sleep at once (only every 64th probes); frames still arrive.
    st = slow_sends(ts, 3, 1ms, 11);
    CHECK(st.spin_budget <= 10us);

    auto fixed = start_all(tfd_test::local_specs(2, R"({"spin_wait_us": 1000, "adaptive_spin": false})"));
    st = slow_sends(fixed, 4, 20ms);
    CHECK(st.spin_misses >= 4);
    CHECK(st.spin_budget == 1000us);
}

TEST_CASE("a frame that comes while the caller spins is a hit and keeps the budget") {
    // spin_wait 2 s: the frame, sent 50 ms after the receive is posted, comes
    // while the caller spins. (With 1 ms, under ThreadSanitizer on a loaded
    // machine, the caller once started its wait after the frame had landed:
    // no spin, so no hit.)
    auto ts = start_all(tfd_test::local_specs(2, R"({"spin_wait_us": 2000000})"));
    auto st = slow_sends(ts, 3, 50ms);
    CHECK(st.spin_hits >= 3);
    CHECK(st.spin_budget == 2000000us);
}

TEST_CASE("a peer that shuts down is reported when waited on") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(3));
    auto e = ts[0]->epoch();
    ts[2].reset(); // clean goodbye
    int v = 0;
    auto r = ts[0]->recv(2, slice(e, 1, 1, 0, 1), &v);
    CHECK_THROWS_WITH(ts[0]->wait(r, soon()), Contains("worker:2") && Contains("has shut down"));
}

TEST_CASE("a tolerated peer that aborts is dropped alone: its requests throw peer_lost, the others go on") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(3));
    auto e = ts[0]->epoch();
    ts[0]->tolerate_loss(2);
    ts[1]->tolerate_loss(2);
    int v = 0, w = 0;
    auto pending = ts[0]->recv(2, slice(e, 1, 1, 0, 1), &v); // posted before the loss
    ts[2]->abort("worker 2 gives up");
    try {
        ts[0]->wait(pending, soon());
        FAIL("a receive from a dropped peer completed");
    } catch (const peer_lost& x) {
        CHECK(x.peer() == 2);
        CHECK_THAT(x.what(), Contains("lost worker:2") && Contains("aborted by worker:2") && Contains("worker 2 gives up"));
    }
    CHECK(ts[0]->lost(2));
    CHECK_FALSE(ts[0]->lost(1));
    CHECK_THAT(ts[0]->loss(2), Contains("worker 2 gives up"));
    CHECK(ts[0]->loss(1).empty());
    CHECK_FALSE(ts[0]->failed());
    // requests made after the loss complete at once and throw the same way
    CHECK_THROWS_AS(ts[0]->wait(ts[0]->send(2, slice(e, 2, 1, 0, 1), &v), soon()), peer_lost);
    auto later = ts[0]->recv(2, slice(e, 2, 1, 0, 1), &v);
    CHECK(ts[0]->done(later));
    CHECK_THROWS_AS(ts[0]->test(later), peer_lost);
    // the two healthy tasks still exchange data, both ways
    for (int k = 0; k < 3; ++k) {
        int x = 40 + k, y = 0;
        auto r = ts[1]->recv(0, slice(e, 10 + k, 1, 0, 1), &y);
        ts[0]->wait(ts[0]->send(1, slice(e, 10 + k, 1, 0, 1), &x), soon());
        ts[1]->wait(r, soon());
        CHECK(y == 40 + k);
        auto r2 = ts[0]->recv(1, slice(e, 20 + k, 1, 0, 1), &w);
        ts[1]->wait(ts[1]->send(0, slice(e, 20 + k, 1, 0, 1), &y), soon());
        ts[0]->wait(r2, soon());
        CHECK(w == 40 + k);
    }
    // worker:1 has nothing pending from worker:2: it learns of the abort when its I/O thread reads it
    for (auto until = clock_type::now() + 10s; !ts[1]->lost(2) && clock_type::now() < until;)
        std::this_thread::sleep_for(5ms);
    CHECK(ts[1]->lost(2));
    INFO(logs.all());
    CHECK(logs.contains("worker:0: dropped worker:2"));
    CHECK(logs.contains("worker:1: dropped worker:2"));
    CHECK_FALSE(ts[0]->failed());
    CHECK_FALSE(ts[1]->failed());
    // shutting down does not wait for the dropped peer's goodbye
    const auto t0 = clock_type::now();
    ts[0].reset();
    ts[1].reset();
    CHECK(clock_type::now() - t0 < 2s);
}

TEST_CASE("a tolerated peer that sends a bad frame is refused and told why; the transport stays healthy") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(3));
    auto e = ts[0]->epoch();
    for (int r : {1, 2}) ts[0]->tolerate_loss(r);
    ts[1]->tolerate_loss(2);
    std::vector<int> a(10, 1), b(10, -1);
    auto r = ts[0]->recv(2, slice(e, 3, 10, 0, 10), b.data());
    ts[2]->send(0, slice(e, 3, 11, 0, 10), a.data()); // one element more than expected
    CHECK_THROWS_WITH(ts[0]->wait(r, soon()), Contains("lost worker:2") && Contains("mismatched collective with worker:2"));
    CHECK(b == std::vector<int>(10, -1));
    // worker 2 learns why it was refused
    CHECK_THROWS_WITH(ts[2]->wait(ts[2]->recv(0, slice(e, 4, 1, 0, 1), b.data()), soon()),
                      Contains("aborted by worker:0") && Contains("mismatched collective with worker:2"));
    CHECK_FALSE(ts[0]->failed());
    int x = 5, y = 0;
    auto rr = ts[1]->recv(0, slice(e, 5, 1, 0, 1), &y);
    ts[0]->wait(ts[0]->send(1, slice(e, 5, 1, 0, 1), &x), soon());
    ts[1]->wait(rr, soon());
    CHECK(y == 5);
}

TEST_CASE("drop refuses a peer with a reason it is told; a deadline passed with a tolerated peer drops it") {
    tfd_test::log_capture logs;
    auto ts = start_all(tfd_test::local_specs(3, R"({"max_unexpected_bytes": 65536, "send_thread_bytes": 1073741824})"));
    auto e = ts[0]->epoch();
    ts[0]->tolerate_loss(1);
    ts[2]->tolerate_loss(1);
    SECTION("drop") {
        int v = 0;
        auto theirs = ts[1]->recv(0, slice(e, 1, 1, 0, 1), &v);
        auto mine = ts[0]->recv(1, slice(e, 1, 1, 0, 1), &v);
        ts[0]->drop(1, "pushed -1 examples");
        CHECK(ts[0]->lost(1));
        CHECK_THROWS_AS(ts[0]->wait(mine, soon()), peer_lost);
        CHECK_THROWS_WITH(ts[1]->wait(theirs, soon()), Contains("aborted by worker:0") && Contains("pushed -1 examples"));
        CHECK(logs.contains("worker:0: dropped worker:1 (rank 1"));
        CHECK(logs.contains("going on without it: pushed -1 examples"));
    }
    SECTION("a receive's deadline") {
        int v = 0;
        auto r = ts[0]->recv(1, slice(e, 1, 1, 0, 1), &v);
        CHECK_THROWS_WITH(ts[0]->wait(r, clock_type::now() + 200ms),
                          Contains("lost worker:1") && Contains("timed out waiting for data broadcast seq 1"));
        CHECK(ts[0]->lost(1));
    }
    SECTION("a send's deadline, worker:1 not reading") {
        std::vector<int> a(std::size_t{8} << 20, 7); // 32 MiB: more than the socket buffers hold
        auto r = ts[0]->send(1, slice(e, 1, a.size(), 0, a.size()), a.data(), clock_type::now() + 300ms);
        CHECK_THROWS_WITH(ts[0]->wait(r, soon()), Contains("lost worker:1") && Contains("timed out sending data broadcast seq 1"));
        CHECK(ts[0]->lost(1));
    }
    CHECK_FALSE(ts[0]->failed());
    int x = 9, y = 0;
    auto rr = ts[2]->recv(0, slice(e, 7, 1, 0, 1), &y);
    ts[0]->wait(ts[0]->send(2, slice(e, 7, 1, 0, 1), &x), soon());
    ts[2]->wait(rr, soon());
    CHECK(y == 9);
    CHECK_THROWS_WITH(ts[0]->tolerate_loss(0), Contains("bad peer rank 0"));
}

namespace {
std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}
} // namespace

TEST_CASE("shutdown while queued sends complete, fail or are cut off: many create/send/destroy rounds") {
    // Every frame goes through the sender thread (send_thread_bytes 1), so
    // each transport has the eventfd that signals send completions, which
    // its I/O thread also signals when it finalizes a failure. Each round
    // ends one of three ways, so that a failure is finalized on worker:0's
    // I/O thread before, during or after its destructor stops the sender:
    //   0: both sides shut down at once right after their sends complete;
    //   1: worker:1 aborts; worker:0 is destroyed once it has seen the
    //      failure (every third such round: then ThreadSanitizer reports a
    //      shutdown that closes a descriptor the I/O thread used without
    //      synchronising with it, every time), or at once, concurrently;
    //   2: worker:0 is destroyed while a long send to a peer that does not
    //      read is still being written, under a deadline of a few ms.
    // Under ThreadSanitizer (build with -fsanitize=thread) this is where a
    // descriptor closed on one thread while another still uses it shows up;
    // without it the test still checks that nothing hangs, fails
    // unexpectedly or leaks a descriptor.
    tfd_test::log_capture logs; // the aborts' error lines
    const std::size_t fds_before = open_fds();
    const std::string opts = R"({"send_thread_bytes": 1, "max_unexpected_bytes": 65536, "heartbeat_timeout_ms": 3000})";
    for (int round = 0; round < 24; ++round) {
        INFO("round " << round);
        auto ts = start_all(tfd_test::local_specs(2, opts));
        const auto e = ts[0]->epoch();
        std::vector<int> a(256, round), b(256, -1), c(256, -1);
        switch (round % 3) {
        case 0: {
            auto r1 = ts[1]->recv(0, slice(e, 1, 256, 0, 256), b.data());
            auto r0 = ts[0]->recv(1, slice(e, 2, 256, 0, 256), c.data());
            auto s0 = ts[0]->send(1, slice(e, 1, 256, 0, 256), a.data());
            auto s1 = ts[1]->send(0, slice(e, 2, 256, 0, 256), a.data());
            auto other = std::async(std::launch::async, [&] {
                ts[1]->wait(s1, soon());
                ts[1]->wait(r1, soon());
                ts[1].reset();
            });
            ts[0]->wait(s0, soon());
            ts[0]->wait(r0, soon());
            ts[0].reset();
            other.get();
            CHECK(b == a);
            CHECK(c == a);
            break;
        }
        case 1: {
            auto s0 = ts[0]->send(1, slice(e, 1, 256, 0, 256), a.data());
            ts[0]->wait(s0, soon());
            auto aborter = std::async(std::launch::async, [&] { ts[1]->abort("stress abort"); });
            if (round % 9 == 1) {
                const auto until = soon(5s);
                while (!ts[0]->failed() && clock_type::now() < until) std::this_thread::sleep_for(1ms);
                CHECK(ts[0]->failed());
                std::this_thread::sleep_for(2ms); // the I/O thread finishes finalizing the failure
            }
            ts[0].reset();
            aborter.get();
            ts[1].reset();
            break;
        }
        default: {
            // 64 MiB: more than the kernel buffers on both ends can hold
            // (a peer that does not read keeps its window small, and Linux
            // caps a send buffer at tcp_wmem's 4 MiB by default; 4 MiB here
            // once completed into the buffers under CI's load).
            std::vector<int> big(std::size_t{1} << 24, round);
            auto s0 = ts[0]->send(1, slice(e, 1, big.size(), 0, big.size()), big.data(),
                                  clock_type::now() + std::chrono::milliseconds(1 + round % 5));
            CHECK_FALSE(ts[0]->done(s0));
            if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(round % 7));
            ts[0].reset();
            ts[1].reset();
            break;
        }
        }
    }
    CHECK(open_fds() == fds_before);
}

TEST_CASE("a single-task cluster needs no network") {
    auto spec = cluster_spec::parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}})");
    transport t(spec);
    CHECK(t.size() == 1);
    CHECK(t.rank() == 0);
}

TEST_CASE("options set in code are range-checked when a transport is built, and by set_timeout") {
    auto spec = cluster_spec::parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}})");
    spec.options.op_timeout = std::chrono::milliseconds::max(); // used to overflow now() + op_timeout
    CHECK_THROWS_WITH(transport(spec), EndsWith("worker:0: transport_options.op_timeout is 9223372036854775807, outside "
                                                "the allowed range 1..2147483647 ms"));
    spec.options.op_timeout = 1s;
    spec.options.spin_wait = std::chrono::microseconds(std::int64_t{1} << 62); // used to overflow the spin budget in ns
    CHECK_THROWS_WITH(ring_collective(spec), Contains("transport_options.spin_wait is 4611686018427387904, outside the "
                                                      "allowed range 0..2147483647 us"));
    spec.options.spin_wait = 0us;
    ring_collective c(spec);
    CHECK_THROWS_WITH(c.set_timeout(0ms), EndsWith("set_timeout: 0 ms is outside the allowed range 1..2147483647 ms"));
    CHECK_THROWS_WITH(c.set_timeout(std::chrono::milliseconds::max()),
                      EndsWith("set_timeout: 9223372036854775807 ms is outside the allowed range 1..2147483647 ms"));
    CHECK_THROWS_WITH(c.set_timeout(std::chrono::milliseconds(2147483648)), Contains("outside the allowed range"));
    CHECK_NOTHROW(c.set_timeout(1ms));
    CHECK_NOTHROW(c.set_timeout(std::chrono::milliseconds(2147483647)));
    int v = 5;
    c.all_reduce(&v, &v, 1, dtype::int32, reduce_op::sum); // one task: its own value, deadline far away
    CHECK(v == 5);
}

TEST_CASE("the largest timeouts allowed work end to end (no overflow in deadlines, ticks or waits)") {
    auto ts = start_all(tfd_test::local_specs(2, R"({"op_timeout_ms": 2147483647, "heartbeat_timeout_ms": 2147483647,
                                                     "connect_timeout_ms": 2147483647, "handshake_timeout_ms": 2147483647})"));
    auto e = ts[0]->epoch();
    std::vector<int> a(1000), b(1000, 0);
    std::iota(a.begin(), a.end(), 3);
    auto r = ts[1]->recv(0, slice(e, 1, 1000, 0, 1000), b.data());
    ts[0]->wait(ts[0]->send(1, slice(e, 1, 1000, 0, 1000), a.data()), soon()); // default deadline: now + op_timeout
    ts[1]->wait(r, clock_type::now() + ts[1]->options().op_timeout);
    CHECK(b == a);
    CHECK_FALSE(ts[0]->failed());
    CHECK_FALSE(ts[1]->failed());
    auto other = std::async(std::launch::async, [&] { ts[1].reset(); }); // both say goodbye at once
    ts[0].reset();
    other.get();
}

TEST_CASE("a multi-task cluster without a secret is refused") {
    auto specs = tfd_test::local_specs(2);
    specs[0].secret.clear();
    ::unsetenv("TYPEFLOW_SECRET");
    CHECK_THROWS_WITH(transport(specs[0]), Contains("no shared secret"));
}

namespace {
/// memcmp(a, b, n) == 0, but never calls memcmp with an empty vector's null
/// data() (undefined even for n == 0; UBSan stops on it).
bool same_bytes(const void* a, const void* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }
} // namespace

TEMPLATE_TEST_CASE("the vectorised sum/mean kernel gives the scalar loop's bits, in place too", "", float, double,
                   std::int32_t, std::int64_t) {
    using T = TestType;
    std::uint32_t x = 12345;
    auto next = [&] { return x = x * 1664525u + 1013904223u; };
    for (std::size_t n : {0, 1, 7, 15, 16, 17, 63, 64, 65, 1000, 4099})
        for (bool mean : {false, true}) {
            std::vector<T> a(n), b(n), out(n), ref(n);
            for (auto& v : a) v = static_cast<T>(static_cast<T>(next() % 1000) / static_cast<T>(3));
            for (auto& v : b) v = static_cast<T>(static_cast<T>(next() % 1000) / static_cast<T>(7));
            for (std::size_t i = 0; i < n; ++i) {
                const T s = static_cast<T>(a[i] + b[i]);
                ref[i] = mean ? static_cast<T>(s / static_cast<T>(3)) : s;
            }
            detail::reduce_typed<T>(reduce_op::sum, out.data(), a.data(), b.data(), n, mean, 3);
            CHECK(same_bytes(out.data(), ref.data(), n * sizeof(T)));
            detail::reduce_typed<T>(reduce_op::sum, a.data(), a.data(), b.data(), n, mean, 3);
            CHECK(same_bytes(a.data(), ref.data(), n * sizeof(T)));
        }
}

TEST_CASE("tasks whose address is \"*\" report their ports at join and meet through the chief") {
    // how tasks started by mpirun meet: only rank 0's address is known
    const int port = tfd_test::free_ports(1)[0];
    std::vector<cluster_spec> specs;
    for (int i = 0; i < 3; ++i)
        specs.push_back(cluster_spec::parse(R"({"cluster": {"worker": ["127.0.0.1:)" + std::to_string(port) +
                                            R"(", "*", "*"]}, "task": {"type": "worker", "index": )" + std::to_string(i) +
                                            R"(}, "secret": "test-secret"})"));
    auto ts = start_all(specs);
    const std::string prefix = "worker:2 (rank 2, 127.0.0.1:";
    for (int i : {0, 1}) CHECK(ts[i]->peer_name(2).substr(0, prefix.size()) == prefix);
    CHECK(ts[2]->peer_name(1).find("*") == std::string::npos);
    auto e = ts[0]->epoch();
    std::vector<int> a(1000, 4), b(1000, 0);
    auto r = ts[2]->recv(1, slice(e, 1, 1000, 0, 1000), b.data());  // ranks 1 and 2 connected to each other
    ts[1]->wait(ts[1]->send(2, slice(e, 1, 1000, 0, 1000), a.data()), soon());
    ts[2]->wait(r, soon());
    CHECK(b == a);
}

TEST_CASE("test() completes a receive from a socket the caller owns without waiting, done() alone does not") {
    // the heartbeat tick (which hands idle sockets back to the I/O thread) is 3 s apart here
    auto ts = start_all(tfd_test::local_specs(2, R"({"heartbeat_timeout_ms": 60000})"));
    auto e = ts[0]->epoch();
    std::vector<int> a(100, 6), b(100, 0);
    // a first exchange waited for: worker:1 now reads worker:0's socket itself
    auto r1 = ts[1]->recv(0, slice(e, 1, 100, 0, 100), b.data());
    ts[0]->wait(ts[0]->send(1, slice(e, 1, 100, 0, 100), a.data()), soon());
    ts[1]->wait(r1, soon());
    auto r2 = ts[1]->recv(0, slice(e, 2, 100, 0, 100), b.data());
    ts[0]->wait(ts[0]->send(1, slice(e, 2, 100, 0, 100), a.data()), soon());
    std::this_thread::sleep_for(100ms);
    CHECK_FALSE(ts[1]->done(r2));  // nobody has read it yet
    const auto t0 = clock_type::now();
    while (!ts[1]->test(r2) && clock_type::now() - t0 < 2s) std::this_thread::sleep_for(1ms);
    CHECK(ts[1]->done(r2));
    CHECK(clock_type::now() - t0 < 1s);
    CHECK(b == a);
    // after a failure, test throws the failure
    auto r3 = ts[1]->recv(0, slice(e, 3, 100, 0, 100), b.data());
    ts[0]->abort("test abort");
    const auto t1 = clock_type::now();
    bool threw = false;
    while (clock_type::now() - t1 < 5s && !threw) {
        try {
            ts[1]->test(r3);
        } catch (const error& err) {
            threw = std::string(err.what()).find("test abort") != std::string::npos;
            break;
        }
        std::this_thread::sleep_for(1ms);
    }
    CHECK(threw);
}
