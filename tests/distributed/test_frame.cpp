// Frame header encoding/validation and the handshake's pure steps.
#include <typeflow/distributed/frame.hpp>
#include <typeflow/distributed/handshake.hpp>

#include <catch2/catch.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

using namespace typeflow::dist;
using Catch::Matchers::Contains;

namespace {
frame_header data_header() {
    frame_header h;
    h.type = frame_type::data;
    h.op = op_code::all_reduce;
    h.dtype_code = wire_code(dtype::float32);
    h.reduce_code = static_cast<std::uint8_t>(reduce_op::sum);
    h.epoch = 0xdeadbeef;
    h.seq = 0x0102030405060708ull;
    h.count = 1000;
    h.offset = 996;
    h.length = 16;
    return h;
}
std::string refusal(const std::array<std::byte, frame_header_size>& b, std::size_t max = 1 << 20) {
    auto r = parse_header(b.data(), max);
    return r.ok ? "<accepted>" : r.reason;
}
} // namespace

TEST_CASE("header layout is little-endian and fixed") {
    auto b = encode_header(data_header());
    // Independent reference: bytes written out by hand from the documented layout.
    const unsigned char want[48] = {'T', 'F', 'L', 'W', 1, 0, 5, 1, 1, 1, 0, 0, 0xef, 0xbe, 0xad, 0xde,
                                    8, 7, 6, 5, 4, 3, 2, 1, 0xe8, 3, 0, 0, 0, 0, 0, 0,
                                    0xe4, 3, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0};
    CHECK(std::memcmp(b.data(), want, 48) == 0);
    auto r = parse_header(b.data(), 1 << 20);
    REQUIRE(r.ok);
    CHECK(r.header == data_header());
}

TEST_CASE("bad headers are refused with a reason") {
    auto good = encode_header(data_header());
    auto mut = [&](std::size_t i, unsigned v) {
        auto b = good;
        b[i] = static_cast<std::byte>(v);
        return b;
    };
    CHECK_THAT(refusal(mut(0, 'X')), Contains("bad magic"));
    CHECK_THAT(refusal(mut(4, 2)), Contains("unsupported protocol version 2"));
    CHECK_THAT(refusal(mut(6, 0)), Contains("unknown frame type 0"));
    CHECK_THAT(refusal(mut(6, 10)), Contains("unknown frame type 10"));
    CHECK_THAT(refusal(mut(10, 1)), Contains("reserved"));
    CHECK_THAT(refusal(mut(7, 0)), Contains("unknown op 0"));
    CHECK_THAT(refusal(mut(7, 9)), Contains("unknown op 9"));  // 7 and 8 are pull and push
    CHECK_THAT(refusal(mut(8, 0)), Contains("unknown dtype 0"));
    CHECK_THAT(refusal(mut(8, 6)), Contains("unknown dtype 6"));
    CHECK_THAT(refusal(mut(8, 9)), Contains("unknown dtype 9"));
    CHECK_THAT(refusal(mut(9, 5)), Contains("unknown reduction 5"));
    CHECK_THAT(refusal(mut(9, 0)), Contains("without a reduction"));
    CHECK_THAT(refusal(mut(40, 17)), Contains("not a multiple of the element size 4"));
    CHECK_THAT(refusal(mut(40, 20)), Contains("lies outside the buffer of 1000"));
    CHECK_THAT(refusal(good, 15), Contains("exceeds the limit of 15 bytes"));
    CHECK(refusal(good, 16) == "<accepted>");
    auto huge = data_header();
    huge.length = ~0ull;
    CHECK_THAT(refusal(encode_header(huge)), Contains("exceeds the limit"));
    auto wrap = data_header();
    wrap.offset = ~0ull - 1; // offset + n would overflow
    CHECK_THAT(refusal(encode_header(wrap)), Contains("outside the buffer"));

    frame_header hb;
    CHECK(refusal(encode_header(hb)) == "<accepted>");
    hb.length = 1;
    CHECK_THAT(refusal(encode_header(hb)), Contains("heartbeat frame with payload length 1"));
    frame_header hello;
    hello.type = frame_type::hello;
    hello.length = 33;
    CHECK_THAT(refusal(encode_header(hello)), Contains("hello frame with payload length 33 (allowed 32..32)"));
    frame_header ab;
    ab.type = frame_type::abort;
    ab.length = max_abort_bytes + 1;
    CHECK_THAT(refusal(encode_header(ab)), Contains("abort frame with payload length"));
    frame_header ctl;
    ctl.type = frame_type::control;
    ctl.op = op_code::all_reduce;
    CHECK_THAT(refusal(encode_header(ctl)), Contains("control frame with data fields set"));
}

TEST_CASE("dtypes keep their wire codes") {
    // Part of the wire format: codes 1-4 as ever; 5 (uint8 before the runtime
    // took the library's dtype) is bool, the same one-byte element.
    CHECK(wire_code(dtype::float32) == 1);
    CHECK(wire_code(dtype::float64) == 2);
    CHECK(wire_code(dtype::int32) == 3);
    CHECK(wire_code(dtype::int64) == 4);
    CHECK(wire_code(dtype::boolean) == 5);
    for (dtype t : typeflow::all_dtypes) CHECK(dtype_of_wire(wire_code(t)) == t);
    CHECK_FALSE(dtype_of_wire(0));
    CHECK_FALSE(dtype_of_wire(6));
    auto b = data_header();
    b.dtype_code = wire_code(dtype::boolean);
    b.reduce_code = static_cast<std::uint8_t>(reduce_op::max);
    b.length = 3;
    auto r = parse_header(encode_header(b).data(), 1 << 20);
    REQUIRE(r.ok);
    CHECK(describe(r.header) == "data all_reduce(max) seq 72623859790382856 bool[1000] slice 996+3 epoch 3735928559");
}

TEST_CASE("describe names op, reduction, dtype and slice") {
    CHECK(describe(data_header()) == "data all_reduce(sum) seq 72623859790382856 float32[1000] slice 996+4 epoch 3735928559");
}

TEST_CASE("handshake: matching secrets authenticate both ways") {
    using namespace handshake;
    const std::string k = "secret";
    auto nc = make_nonce(), ns = make_nonce();
    CHECK(nc != ns);
    frame_header hello;
    hello.type = frame_type::hello;
    hello.seq = 3;
    hello.length = 32;
    std::uint32_t rank = 99;
    nonce got_nc{};
    REQUIRE_FALSE(check_hello(hello, nc.data(), 4, rank, got_nc));
    CHECK(rank == 3);
    CHECK(got_nc == nc);
    hello.seq = 4;
    CHECK_THAT(*check_hello(hello, nc.data(), 4, rank, got_nc), Contains("rank 4 outside 0..3"));

    std::array<std::byte, 64> challenge;
    std::memcpy(challenge.data(), ns.data(), 32);
    auto sp = server_proof(k, nc, ns, 3);
    std::memcpy(challenge.data() + 32, sp.data(), 32);
    frame_header ch;
    ch.type = frame_type::challenge;
    ch.length = 64;
    nonce got_ns{};
    REQUIRE_FALSE(check_challenge(ch, challenge.data(), k, nc, 3, got_ns));
    CHECK(got_ns == ns);
    CHECK_THAT(*check_challenge(ch, challenge.data(), "other", nc, 3, got_ns), Contains("wrong shared secret"));
    CHECK(check_challenge(ch, challenge.data(), k, nc, 2, got_ns)); // bound to the rank

    auto cp = client_proof(k, ns, nc, 3);
    frame_header resp;
    resp.type = frame_type::response;
    resp.length = 32;
    CHECK_FALSE(check_response(resp, cp.data(), k, nc, ns, 3));
    CHECK_THAT(*check_response(resp, cp.data(), "other", nc, ns, 3), Contains("client failed authentication"));
    // A server proof replayed as a client proof fails (labels differ).
    CHECK(check_response(resp, sp.data(), k, nc, ns, 3));
    CHECK_THAT(*check_response(ch, cp.data(), k, nc, ns, 3), Contains("expected a response frame, got challenge"));
}

TEST_CASE("HMAC matches RFC 4231 test case 2") {
    // HMAC-SHA256(key "Jefe", "what do ya want for nothing?") from RFC 4231.
    unsigned char out[32];
    unsigned len = 0;
    const char* msg = "what do ya want for nothing?";
    HMAC(EVP_sha256(), "Jefe", 4, reinterpret_cast<const unsigned char*>(msg), std::strlen(msg), out, &len);
    const unsigned char want[32] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
                                    0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
                                    0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    CHECK(std::memcmp(out, want, 32) == 0);
}
