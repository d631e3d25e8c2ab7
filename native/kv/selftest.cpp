// Standalone self-test, built with ASan+UBSan (KV_SANITIZE=ON) and run by
// tests/native/test_sanitizers.py. It drives the parser, the handler and the
// real server loop over loopback, including garbage datagrams, and a short
// closed-loop load run. Exit code 0 and "selftest ok" on success.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "handler.hpp"
#include "loadgen.hpp"
#include "server.hpp"
#include "ycsb.hpp"

using namespace kv;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                         \
        }                                                                         \
    } while (0)

static std::vector<uint8_t> pkt(uint8_t op, int64_t rec, uint32_t seq, const std::string& v, uint64_t id) {
    std::vector<uint8_t> b(kHeaderSize + v.size());
    uint8_t key[16];
    record_key(rec, key);
    write_packet(b.data(), op, 0, seq, id, key, reinterpret_cast<const uint8_t*>(v.data()), uint16_t(v.size()));
    return b;
}

static void test_parser() {
    Packet p;
    auto ok = pkt(OP_PUT, 1, 0, "abc", 7);
    CHECK(parse_request(ok.data(), ok.size(), 128, p) == ParseResult::Ok && p.vlen == 3 && p.req_id == 7);
    CHECK(parse_request(ok.data(), 31, 128, p) == ParseResult::TooShort);
    CHECK(parse_request(ok.data(), ok.size() - 1, 128, p) == ParseResult::LengthMismatch);
    CHECK(parse_request(ok.data(), ok.size(), 2, p) == ParseResult::TooLong);
    ok[0] = 9;
    CHECK(parse_request(ok.data(), ok.size(), 128, p) == ParseResult::BadOp);
}

static void test_handler(const std::string& dir) {
    for (SeqCheck mode : {SeqCheck::DiskGet, SeqCheck::EvictedOnly, SeqCheck::None}) {
        ServerOptions o;
        o.datadir = dir;
        o.seq_check = mode;
        Store store(dir + "/h-" + seq_check_name(mode), o);
        WorkerStats st;
        std::vector<uint8_t> r(kReplyBufSize);
        Packet rp;
        auto run = [&](const std::vector<uint8_t>& b) {
            size_t n = handle_datagram(b.data(), b.size(), o, store, st, r.data());
            CHECK(n >= kHeaderSize && parse_reply(r.data(), n, kAbsoluteMaxValue, rp) == ParseResult::Ok);
            return rp.status;
        };
        CHECK(run(pkt(OP_GET, 1, 0, "", 1)) == ST_NOT_FOUND);
        CHECK(run(pkt(OP_WB_PUT, 1, 5, "five", 2)) == ST_OK);
        CHECK(run(pkt(OP_GET, 1, 0, "", 3)) == ST_OK && rp.vlen == 4);
        uint8_t older = run(pkt(OP_WB_PUT, 1, 4, "four", 4));
        CHECK(older == (mode == SeqCheck::None ? ST_OK : ST_STALE));
        uint8_t put_old = run(pkt(OP_PUT, 1, 3, "three", 5));
        CHECK(put_old == (mode == SeqCheck::DiskGet ? ST_STALE : ST_OK));
        CHECK(run(pkt(OP_DEL, 1, 0, "", 6)) == ST_OK);
        CHECK(run(pkt(OP_LOAD, 1, 0, "", 7)) == ST_NOT_FOUND);
        CHECK(handle_datagram(r.data(), 5, o, store, st, r.data()) == 0 && st.malformed == 1);
    }
}

static void test_server(const std::string& dir) {
    ServerOptions o;
    o.datadir = dir + "/srv";
    o.workers = 2;
    Server srv(o);
    srv.start();
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(srv.ports()[0]));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    Rng rng(3);
    // Garbage: every size 0..300 with random bytes (plus one oversized datagram).
    std::vector<uint8_t> g(70000);
    for (auto& c : g) c = uint8_t(rng.next());
    int garbage = 0;
    for (size_t len = 0; len <= 300; ++len, ++garbage) {
        g[0] = uint8_t(10 + len % 100);  // never a valid op
        sendto(fd, g.data(), len, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    }
    sendto(fd, g.data(), 65000, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ++garbage;
    // The PUT can be dropped too when the burst fills the socket buffer of a
    // slow (sanitized, loaded) server: resend it as a client would, up to 5
    // times, 2 s apart (a lost PUT failed this check once under load).
    auto b = pkt(OP_PUT, 99, 0, std::string(128, 'x'), 77);
    std::vector<uint8_t> r(kReplyBufSize);
    ssize_t n = -1;
    int attempts = 0;
    while (n < 0 && attempts < 5) {
        sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
        ++attempts;
        n = recv(fd, r.data(), r.size(), 0);
    }
    Packet rp;
    CHECK(n == ssize_t(kHeaderSize) && parse_reply(r.data(), size_t(n), 128, rp) == ParseResult::Ok);
    CHECK(rp.req_id == 77 && rp.status == ST_OK);
    close(fd);
    LoadOptions lo;
    for (int p : srv.ports()) lo.targets.push_back({"127.0.0.1", p});
    lo.partition = "hash";
    lo.threads = 3;
    lo.duration_s = 0.5;
    lo.max_requests = 3000;
    lo.records = 1000;
    LoadResult res = run_load(lo);
    CHECK(res.total.completed > 0 && res.total.completed <= 3000);
    auto stats = srv.collect(false);
    srv.stop();
    WorkerStats tot;
    for (auto& w : stats) tot.merge(w);
    // Under a slow (sanitized) server the burst may overflow the socket
    // buffer; the kernel's drop counter accounts for those, and for the PUT
    // attempts before the one answered (exact when the first was answered).
    CHECK(tot.malformed + tot.drops >= uint64_t(garbage));
    CHECK(tot.malformed + tot.drops <= uint64_t(garbage + attempts - 1));
    CHECK(tot.malformed > 0);
    CHECK(tot.tx_packets >= res.total.completed + 1);
    std::printf("server: %llu garbage datagrams dropped as malformed, %llu by the kernel, %llu load requests served\n",
                (unsigned long long)tot.malformed, (unsigned long long)tot.drops, (unsigned long long)res.total.completed);
}

int main(int argc, char** argv) {
    std::string dir = argc > 1 ? argv[1] : "/tmp/kv-selftest";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    test_parser();
    test_handler(dir);
    test_server(dir);
    std::filesystem::remove_all(dir);
    std::printf("selftest ok\n");
    return 0;
}
