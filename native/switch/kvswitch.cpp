// kvswitch: a software version of the FarReach switch (p4/farreach.p4) for
// end-to-end runs on one machine.
//
// It listens on one UDP port (the switch's service address), partitions keys
// over the KV server's workers, answers cache hits itself (GET, and PUT/DEL
// as a write-back cache) and forwards misses, relaying the servers' replies.
// The per-packet rules, entry states, sequence stamping, count-min sketch and
// sizes are those of the P4 program and of its behavioural reference model
// model/switch.py (which explains why each rule exists); the control plane
// (population with LOAD, eviction with seq-checked WB_PUT/WB_DEL) runs in the
// same process over a separate socket, asynchronously like the real one.
//
// Differences forced by running as a process rather than a switch:
//  * all server traffic shares one upstream socket, so forwarded requests get
//    a switch-unique req_id (restored in the reply) and a pending map keeps
//    req_id -> client address, op, key and stamped seq; the reply guard uses
//    the stamped seq from that map;
//  * extra ops on the client port: STATS (0x7F) replies with the counters as
//    JSON in the value, FLUSH (0x7E) evicts everything (writing dirty values
//    back) and replies when done. SIGTERM/SIGINT also flush, print the
//    counters as one JSON line on stdout, and exit.
//
// Single-threaded poll() loop: the switch is one pipeline; every loop is
// bounded by the time budget given on the command line.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// ---- constants: p4/include/constants.p4 / model/switch.py CONSTANTS -------
constexpr uint32_t CACHE_SIZE = 16384;
constexpr uint32_t VALUE_WORDS = 32;
constexpr uint32_t VALUE_BYTES = 128;
constexpr uint32_t HASH_BUCKETS = 32768;
constexpr uint32_t MAX_SERVERS = 128;
constexpr uint32_t CMS_ROWS = 4;
constexpr uint32_t CMS_WIDTH = 65536;
constexpr uint32_t HOT_THRESHOLD_DEFAULT = 64;
constexpr uint32_t REPORT_BLOOM_BITS = 262144;
constexpr uint32_t REPORT_BLOOM_INDEX_BITS = 18;
constexpr uint16_t VALLEN_ABSENT = 0xFFFF;
static_assert(VALUE_BYTES == 4 * VALUE_WORDS, "value words");

constexpr size_t HDR = 32;
enum : uint8_t { GET = 1, PUT = 2, DEL = 3, WB_PUT = 4, WB_DEL = 5, LOAD = 6, FLUSH = 0x7E, STATS = 0x7F };
constexpr uint8_t REPLY = 0x80;
enum : uint8_t { ST_OK = 0, ST_NOT_FOUND = 1, ST_STALE = 2, ST_ERROR = 3 };
enum : uint8_t { INVALID = 0, VALID = 1, EVICTING = 2, POPULATING = 3 };
constexpr uint32_t CMS_POLYS[CMS_ROWS] = {0x04C11DB7u, 0x1EDC6F41u, 0x741B8CD7u, 0x814141ABu};

using Clock = std::chrono::steady_clock;
using Key = std::array<uint8_t, 16>;

struct KeyHash {
    size_t operator()(const Key& k) const {
        uint64_t a, b;
        std::memcpy(&a, k.data(), 8);
        std::memcpy(&b, k.data() + 8, 8);
        return size_t(a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull));
    }
};

// ---- CRC-32 family (reflected, init/xor 0xFFFFFFFF), as the P4 Hash units.
struct Crc {
    uint32_t table[256];
    explicit Crc(uint32_t poly) {
        uint32_t r = 0;
        for (int i = 0; i < 32; ++i) r |= ((poly >> i) & 1u) << (31 - i);
        for (uint32_t b = 0; b < 256; ++b) {
            uint32_t c = b;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ r : c >> 1;
            table[b] = c;
        }
    }
    uint32_t operator()(const uint8_t* p, size_t n) const {
        uint32_t c = 0xFFFFFFFFu;
        for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
        return c ^ 0xFFFFFFFFu;
    }
};

inline uint16_t ld16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t ld32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
inline uint64_t ld64(const uint8_t* p) { return uint64_t(ld32(p)) | uint64_t(ld32(p + 4)) << 32; }
inline void st16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
inline void st32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i)); }
inline void st64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i)); }

size_t build(uint8_t* out, uint8_t op, uint8_t status, uint32_t seq, uint64_t rid, const uint8_t* key,
             const uint8_t* val, size_t vlen) {
    out[0] = op;
    out[1] = status;
    st16(out + 2, uint16_t(vlen));
    st32(out + 4, seq);
    st64(out + 8, rid);
    std::memcpy(out + 16, key, 16);
    if (vlen) std::memcpy(out + HDR, val, vlen);
    return HDR + vlen;
}

struct Options {
    std::string listen_host = "127.0.0.1";
    int listen_port = 0;
    std::string server_host = "127.0.0.1";
    std::vector<int> server_ports;     // worker i at server_ports[i]
    std::string partition = "range";
    uint32_t cache_size = 10000;       // entries used (<= CACHE_SIZE)
    std::string preload_file;          // hex keys, one per line, hottest first
    bool cms = true;                   // populate from hot-key reports
    uint32_t hot_threshold = HOT_THRESHOLD_DEFAULT;
    uint32_t epoch_ms = 1000;
    uint32_t max_value = VALUE_BYTES;  // server's max value (larger = malformed)
    uint32_t cp_timeout_ms = 50;       // LOAD / write-back resend
    uint32_t pending_timeout_ms = 2000;
    uint32_t drain_ms = 5000;          // flush budget on exit
    uint32_t ready_timeout_ms = 5000;  // wait for preloads before "ready"
    int rcvbuf = 4 << 20;
};

[[noreturn]] void usage(const std::string& why) {
    std::cerr << "kvswitch: " << why << "\n"
              << "usage: kvswitch --server-ports P0,P1,... | --server-base-port B --servers N\n"
                 "  [--listen-port P] [--listen-host H] [--server-host H] [--partition range|hash]\n"
                 "  [--cache-size K] [--preload FILE] [--no-cms] [--hot-threshold T] [--epoch-ms MS]\n"
                 "  [--max-value B] [--cp-timeout-ms MS] [--drain-ms MS]\n";
    std::exit(2);
}

long to_long(const std::string& name, const std::string& v, long lo, long hi) {
    char* end = nullptr;
    errno = 0;
    long x = std::strtol(v.c_str(), &end, 10);
    if (errno || end == v.c_str() || *end || x < lo || x > hi)
        usage(name + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
    return x;
}

Options parse(int argc, char** argv) {
    Options o;
    int base = -1, n = -1;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + ": missing value");
            return argv[++i];
        };
        if (a == "--listen-port") o.listen_port = int(to_long(a, val(), 0, 65535));
        else if (a == "--listen-host") o.listen_host = val();
        else if (a == "--server-host") o.server_host = val();
        else if (a == "--server-ports") {
            std::stringstream ss(val());
            std::string p;
            while (std::getline(ss, p, ',')) o.server_ports.push_back(int(to_long(a, p, 1, 65535)));
        } else if (a == "--server-base-port") base = int(to_long(a, val(), 1, 65535));
        else if (a == "--servers") n = int(to_long(a, val(), 1, MAX_SERVERS));
        else if (a == "--partition") {
            o.partition = val();
            if (o.partition != "range" && o.partition != "hash") usage("--partition: range or hash");
        } else if (a == "--cache-size") o.cache_size = uint32_t(to_long(a, val(), 0, CACHE_SIZE));
        else if (a == "--preload") o.preload_file = val();
        else if (a == "--no-cms") o.cms = false;
        else if (a == "--hot-threshold") o.hot_threshold = uint32_t(to_long(a, val(), 1, 65535));
        else if (a == "--epoch-ms") o.epoch_ms = uint32_t(to_long(a, val(), 1, 3600000));
        else if (a == "--max-value") o.max_value = uint32_t(to_long(a, val(), 0, 65000));
        else if (a == "--cp-timeout-ms") o.cp_timeout_ms = uint32_t(to_long(a, val(), 1, 60000));
        else if (a == "--drain-ms") o.drain_ms = uint32_t(to_long(a, val(), 0, 600000));
        else if (a == "--ready-timeout-ms") o.ready_timeout_ms = uint32_t(to_long(a, val(), 0, 600000));
        else if (a == "-h" || a == "--help") usage("help");
        else usage("unknown option " + a);
    }
    if (base > 0) {
        if (n < 1) usage("--server-base-port needs --servers");
        if (!o.server_ports.empty()) usage("give --server-ports or --server-base-port, not both");
        for (int i = 0; i < n; ++i) o.server_ports.push_back(base + i);
    }
    if (o.server_ports.empty()) usage("no servers given");
    if (o.server_ports.size() > MAX_SERVERS) usage("at most 128 servers");
    return o;
}

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int udp_socket(const std::string& host, int port, int rcvbuf) {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) throw std::runtime_error("bad address " + host);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
        throw std::runtime_error("bind " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

struct Pending {            // a request forwarded to a server
    sockaddr_in client;
    uint64_t client_rid;
    Key key;
    uint8_t op;
    uint32_t seq;
    Clock::time_point sent;
};

struct CpOp {               // an outstanding LOAD or write-back
    bool load;
    uint64_t rid;
    std::vector<uint8_t> pkt;
    int server;
    Clock::time_point sent;
};

#define KVSW_COUNTERS(X) \
    X(client_rx) X(client_tx) X(server_rx) X(server_tx) X(malformed) X(hits) X(misses) \
    X(forwarded) X(replies_relayed) X(blocked_writes) X(dropped_replies) X(hot_reports) \
    X(uncacheable_reports) X(populations) X(population_failures) X(evictions) X(writebacks) \
    X(stale_writebacks) X(cp_retries) X(pending_expired) X(unmatched_replies) X(send_errors)

struct Counters {
#define KVSW_DECL(n) uint64_t n = 0;
    KVSW_COUNTERS(KVSW_DECL)
#undef KVSW_DECL
};

class Switch {
public:
    explicit Switch(const Options& o)
        : o_(o), crc0_(CMS_POLYS[0]), crc1_(CMS_POLYS[1]), crc2_(CMS_POLYS[2]), crc3_(CMS_POLYS[3]),
          state_(CACHE_SIZE, INVALID), dirty_(CACHE_SIZE, 0), seq_(CACHE_SIZE, 0),
          vallen_(CACHE_SIZE, 0), vals_(size_t(CACHE_SIZE) * VALUE_BYTES, 0), bucket_seq_(HASH_BUCKETS, 0),
          cms_(size_t(CMS_ROWS) * CMS_WIDTH, 0), bloom_(REPORT_BLOOM_BITS / 8, 0) {
        client_fd_ = udp_socket(o.listen_host, o.listen_port, o.rcvbuf);
        up_fd_ = udp_socket(o.listen_host, 0, o.rcvbuf);
        cp_fd_ = udp_socket(o.listen_host, 0, 1 << 20);
        for (int p : o.server_ports) {
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(uint16_t(p));
            if (::inet_pton(AF_INET, o.server_host.c_str(), &a.sin_addr) != 1) throw std::runtime_error("bad --server-host");
            servers_.push_back(a);
        }
        for (uint32_t i = o.cache_size; i > 0; --i) free_.push_back(i - 1);
        sockaddr_in a{};
        socklen_t l = sizeof a;
        ::getsockname(client_fd_, reinterpret_cast<sockaddr*>(&a), &l);
        port_ = ntohs(a.sin_port);
        epoch_start_ = Clock::now();
    }
    ~Switch() { ::close(client_fd_); ::close(up_fd_); ::close(cp_fd_); }

    int port() const { return port_; }
    size_t cached() const { return table_.size(); }
    bool cp_busy() const { return !cp_.empty(); }

    void populate(const Key& k) {
        if (table_.count(k) || o_.cache_size == 0) return;
        if (free_.empty()) {                    // FIFO replacement, as the bfrt script
            while (!order_.empty() && !table_.count(order_.front())) order_.pop_front();
            if (order_.empty()) return;
            Key victim = order_.front();
            uint32_t vidx = table_.at(victim);
            if (state_[vidx] != VALID) return;  // victim still busy: try on a later report
            order_.pop_front();
            evict(victim);
            if (free_.empty()) return;          // dirty victim: slot frees after its write-back
        }
        uint32_t idx = free_.back();
        free_.pop_back();
        state_[idx] = POPULATING;
        dirty_[idx] = 0;
        table_[k] = idx;
        order_.push_back(k);
        std::vector<uint8_t> pkt(HDR);
        uint64_t rid = next_rid_++;
        build(pkt.data(), LOAD, 0, 0, rid, k.data(), nullptr, 0);
        start_cp(k, CpOp{true, rid, std::move(pkt), server_of(k.data()), Clock::now()});
    }

    void evict(const Key& k) {
        auto it = table_.find(k);
        if (it == table_.end()) return;
        uint32_t idx = it->second;
        if (state_[idx] != VALID) return;
        state_[idx] = EVICTING;
        ++c_.evictions;
        if (!dirty_[idx]) { remove(k, idx); return; }
        std::vector<uint8_t> pkt(HDR + VALUE_BYTES);
        uint64_t rid = next_rid_++;
        size_t n = vallen_[idx] == VALLEN_ABSENT
                       ? build(pkt.data(), WB_DEL, 0, seq_[idx], rid, k.data(), nullptr, 0)
                       : build(pkt.data(), WB_PUT, 0, seq_[idx], rid, k.data(), &vals_[size_t(idx) * VALUE_BYTES], vallen_[idx]);
        pkt.resize(n);
        ++c_.writebacks;
        start_cp(k, CpOp{false, rid, std::move(pkt), server_of(k.data()), Clock::now()});
    }

    void evict_all() {
        std::vector<Key> keys;
        for (auto& kv : table_) keys.push_back(kv.first);
        for (auto& k : keys) evict(k);
    }

    // One poll round; returns after at most `wait_ms`.
    void run_once(int wait_ms) {
        pollfd fds[3] = {{client_fd_, POLLIN, 0}, {up_fd_, POLLIN, 0}, {cp_fd_, POLLIN, 0}};
        int r = ::poll(fds, 3, wait_ms);
        if (r > 0) {
            // bounded batches keep each source from starving the others
            if (fds[0].revents & POLLIN) drain(client_fd_, 256, [this](auto* b, size_t n, auto& from) { on_client(b, n, from); });
            if (fds[1].revents & POLLIN) drain(up_fd_, 256, [this](auto* b, size_t n, auto&) { on_server(b, n); });
            if (fds[2].revents & POLLIN) drain(cp_fd_, 64, [this](auto* b, size_t n, auto&) { on_cp(b, n); });
        }
        timers();
        handle_reports();
    }

    std::string stats_json() const {
        std::ostringstream s;
        s << "{";
#define KVSW_OUT(n) s << "\"" #n "\": " << c_.n << ", ";
        KVSW_COUNTERS(KVSW_OUT)
#undef KVSW_OUT
        uint64_t served = c_.hits + c_.misses;
        s << "\"cached\": " << table_.size() << ", \"cache_size\": " << o_.cache_size
          << ", \"servers\": " << servers_.size() << ", \"partition\": \"" << o_.partition << "\""
          << ", \"hit_ratio\": " << (served ? double(c_.hits) / double(served) : 0.0) << "}";
        return s.str();
    }

private:
    template <class F>
    void drain(int fd, int max, F&& f) {
        for (int i = 0; i < max; ++i) {
            sockaddr_in from{};
            socklen_t fl = sizeof from;
            ssize_t n = ::recvfrom(fd, buf_, sizeof buf_, 0, reinterpret_cast<sockaddr*>(&from), &fl);
            if (n < 0) return;
            f(buf_, size_t(n), from);
        }
    }

    void send(int fd, const uint8_t* p, size_t n, const sockaddr_in& to) {
        if (::sendto(fd, p, n, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0) ++c_.send_errors;
    }

    int server_of(const uint8_t* key) const {
        uint64_t n = servers_.size();
        if (o_.partition == "range") {
            uint64_t top = uint64_t(key[0]) << 24 | uint64_t(key[1]) << 16 | uint64_t(key[2]) << 8 | key[3];
            uint64_t s = (top * n) >> 31;  // YCSB keys fill [0, 2^31)
            return int(s < n ? s : n - 1);
        }
        return int(uint64_t(crc0_(key, 16) % HASH_BUCKETS) * n / HASH_BUCKETS);
    }

    // docs/protocol.md malformed rules; returns vlen or -1.
    long valid_len(const uint8_t* b, size_t n) const {
        if (n < HDR) return -1;
        uint16_t vlen = ld16(b + 2);
        if (vlen > o_.max_value || n != HDR + vlen) return -1;
        return vlen;
    }

    void reply(uint8_t* b, size_t n, const sockaddr_in& to) {
        send(client_fd_, b, n, to);
        ++c_.client_tx;
    }

    void on_client(uint8_t* b, size_t n, const sockaddr_in& from) {
        ++c_.client_rx;
        if (n >= HDR && (b[0] == STATS || b[0] == FLUSH)) {
            if (b[0] == FLUSH) { flush_waiters_.push_back({from, ld64(b + 8)}); evict_all(); return; }
            std::string js = stats_json();
            std::vector<uint8_t> out(HDR + js.size());
            build(out.data(), STATS | REPLY, ST_OK, 0, ld64(b + 8), b + 16,
                  reinterpret_cast<const uint8_t*>(js.data()), js.size());
            reply(out.data(), out.size(), from);
            return;
        }
        long vlen = valid_len(b, n);
        uint8_t op = b[0];
        if (vlen < 0 || op < GET || op > LOAD) { ++c_.malformed; return; }
        Key k;
        std::memcpy(k.data(), b + 16, 16);
        const uint8_t* key = b + 16;
        uint32_t bucket = crc0_(key, 16) % HASH_BUCKETS;
        bool write = op == PUT || op == DEL;
        if (write) st32(b + 4, ++bucket_seq_[bucket]);       // stamp every client write
        auto it = table_.find(k);
        bool cached = it != table_.end();
        if (cached && (op == GET || write)) {
            uint32_t idx = it->second;
            uint8_t st = state_[idx];
            if (op == GET && (st == VALID || st == EVICTING)) {
                ++c_.hits;
                uint8_t out[HDR + VALUE_BYTES];
                size_t m = vallen_[idx] == VALLEN_ABSENT
                               ? build(out, GET | REPLY, ST_NOT_FOUND, seq_[idx], ld64(b + 8), key, nullptr, 0)
                               : build(out, GET | REPLY, ST_OK, seq_[idx], ld64(b + 8), key, &vals_[size_t(idx) * VALUE_BYTES], vallen_[idx]);
                reply(out, m, from);
                return;
            }
            if (write && st == VALID) {
                if (op == PUT && (vlen % 4 != 0 || vlen > long(VALUE_BYTES))) {
                    ++c_.blocked_writes;          // not whole words: evict, client retries
                    ++c_.uncacheable_reports;
                    reports_.push_back({k, false});
                    return;
                }
                ++c_.hits;
                uint32_t seq = ld32(b + 4);
                if (op == PUT) {
                    std::memcpy(&vals_[size_t(idx) * VALUE_BYTES], b + HDR, size_t(vlen));
                    vallen_[idx] = uint16_t(vlen);
                } else {
                    vallen_[idx] = VALLEN_ABSENT;
                }
                seq_[idx] = seq;
                dirty_[idx] = 1;
                uint8_t out[HDR];
                build(out, uint8_t(op | REPLY), ST_OK, seq, ld64(b + 8), key, nullptr, 0);
                reply(out, HDR, from);
                return;
            }
            if (write) { ++c_.blocked_writes; return; }     // POPULATING / EVICTING
        }
        if (op == GET || write) {
            ++c_.misses;
            if (!cached && o_.cms) count_hot(k);
        }
        // forward with a switch-unique req_id
        uint64_t rid = next_rid_++;
        pending_[rid] = Pending{from, ld64(b + 8), k, op, ld32(b + 4), Clock::now()};
        st64(b + 8, rid);
        send(up_fd_, b, n, servers_[size_t(server_of(key))]);
        ++c_.forwarded;
        ++c_.server_tx;
    }

    void count_hot(const Key& k) {
        const uint8_t* key = k.data();
        uint32_t h[CMS_ROWS] = {crc0_(key, 16), crc1_(key, 16), crc2_(key, 16), crc3_(key, 16)};
        bool hot = true;
        for (uint32_t r = 0; r < CMS_ROWS; ++r) {
            uint16_t& c = cms_[size_t(r) * CMS_WIDTH + (h[r] & (CMS_WIDTH - 1))];
            if (c != 0xFFFF) ++c;
            hot = hot && c >= o_.hot_threshold;
        }
        if (!hot) return;
        uint32_t bi = h[0] >> (32 - REPORT_BLOOM_INDEX_BITS);
        if (bloom_[bi >> 3] & (1u << (bi & 7))) return;
        bloom_[bi >> 3] |= uint8_t(1u << (bi & 7));
        ++c_.hot_reports;
        reports_.push_back({k, true});
    }

    void on_server(uint8_t* b, size_t n) {
        ++c_.server_rx;
        if (valid_len(b, n) < 0 || !(b[0] & REPLY)) { ++c_.malformed; return; }
        auto it = pending_.find(ld64(b + 8));
        if (it == pending_.end()) { ++c_.unmatched_replies; return; }   // duplicate or expired
        Pending p = it->second;
        pending_.erase(it);
        uint8_t base = b[0] & 0x7F;
        if (base == PUT || base == DEL) {
            auto t = table_.find(p.key);
            if (t != table_.end()) {
                uint8_t st = state_[t->second];
                if (st == POPULATING || (st != INVALID && p.seq > seq_[t->second])) {
                    ++c_.dropped_replies;         // the LOAD may have missed this write
                    return;
                }
            }
        }
        st64(b + 8, p.client_rid);
        reply(b, n, p.client);
        ++c_.replies_relayed;
    }

    void on_cp(uint8_t* b, size_t n) {
        long vlen = valid_len(b, n);
        if (vlen < 0 || !(b[0] & REPLY)) { ++c_.malformed; return; }
        Key k;
        std::memcpy(k.data(), b + 16, 16);
        auto it = cp_.find(k);
        if (it == cp_.end() || it->second.rid != ld64(b + 8)) return;   // late / duplicate
        CpOp op = std::move(it->second);
        cp_.erase(it);
        auto t = table_.find(k);
        if (t == table_.end()) return;
        uint32_t idx = t->second;
        uint8_t status = b[1];
        if (op.load) {
            bool ok = status == ST_OK || status == ST_NOT_FOUND;
            if (!ok || (status == ST_OK && (vlen % 4 != 0 || vlen > long(VALUE_BYTES)))) {
                ++c_.population_failures;
                remove(k, idx);
                return;
            }
            if (status == ST_OK) {
                std::memcpy(&vals_[size_t(idx) * VALUE_BYTES], b + HDR, size_t(vlen));
                vallen_[idx] = uint16_t(vlen);
            } else {
                vallen_[idx] = VALLEN_ABSENT;
            }
            uint32_t seq = ld32(b + 4);
            seq_[idx] = seq;
            uint32_t bucket = crc0_(k.data(), 16) % HASH_BUCKETS;
            if (bucket_seq_[bucket] < seq) bucket_seq_[bucket] = seq;
            dirty_[idx] = 0;
            state_[idx] = VALID;
            ++c_.populations;
        } else {
            if (status == ST_ERROR) { op.sent = Clock::now() - std::chrono::hours(1); cp_[k] = std::move(op); return; }
            if (status == ST_STALE) ++c_.stale_writebacks;
            remove(k, idx);
        }
    }

    void start_cp(const Key& k, CpOp op) {
        send(cp_fd_, op.pkt.data(), op.pkt.size(), servers_[size_t(op.server)]);
        cp_[k] = std::move(op);
    }

    void remove(const Key& k, uint32_t idx) {
        table_.erase(k);
        state_[idx] = INVALID;
        dirty_[idx] = 0;
        free_.push_back(idx);
    }

    void timers() {
        auto now = Clock::now();
        auto cp_to = std::chrono::milliseconds(o_.cp_timeout_ms);
        for (auto& kv : cp_) {
            if (now - kv.second.sent >= cp_to) {
                send(cp_fd_, kv.second.pkt.data(), kv.second.pkt.size(), servers_[size_t(kv.second.server)]);
                kv.second.sent = now;
                ++c_.cp_retries;
            }
        }
        if (now - last_sweep_ > std::chrono::milliseconds(100)) {
            last_sweep_ = now;
            auto to = std::chrono::milliseconds(o_.pending_timeout_ms);
            for (auto it = pending_.begin(); it != pending_.end();) {
                if (now - it->second.sent > to) { it = pending_.erase(it); ++c_.pending_expired; }
                else ++it;
            }
        }
        if (o_.cms && now - epoch_start_ >= std::chrono::milliseconds(o_.epoch_ms)) {
            std::fill(cms_.begin(), cms_.end(), 0);
            std::fill(bloom_.begin(), bloom_.end(), 0);
            epoch_start_ = now;
        }
        if (!flush_waiters_.empty() && cp_.empty()) {
            evict_all();                        // entries that were busy before
            if (table_.empty() && cp_.empty()) {
                for (auto& w : flush_waiters_) {
                    uint8_t out[HDR];
                    Key z{};
                    build(out, FLUSH | REPLY, ST_OK, 0, w.second, z.data(), nullptr, 0);
                    reply(out, HDR, w.first);
                }
                flush_waiters_.clear();
            }
        }
    }

    void handle_reports() {
        while (!reports_.empty()) {
            auto r = reports_.front();
            reports_.pop_front();
            if (r.second) populate(r.first);
            else evict(r.first);
        }
    }

    Options o_;
    Crc crc0_, crc1_, crc2_, crc3_;
    int client_fd_ = -1, up_fd_ = -1, cp_fd_ = -1, port_ = 0;
    std::vector<sockaddr_in> servers_;
    // data-plane state: the P4 table and register arrays
    std::unordered_map<Key, uint32_t, KeyHash> table_;
    std::vector<uint8_t> state_, dirty_;
    std::vector<uint32_t> seq_;
    std::vector<uint16_t> vallen_;
    std::vector<uint8_t> vals_;
    std::vector<uint32_t> bucket_seq_;
    std::vector<uint16_t> cms_;
    std::vector<uint8_t> bloom_;
    // control-plane and process state
    std::vector<uint32_t> free_;
    std::deque<Key> order_;
    std::unordered_map<Key, CpOp, KeyHash> cp_;
    std::unordered_map<uint64_t, Pending> pending_;
    std::deque<std::pair<Key, bool>> reports_;   // (key, hot?) hot=false: uncacheable
    std::vector<std::pair<sockaddr_in, uint64_t>> flush_waiters_;
    uint64_t next_rid_ = 1;
    Counters c_;
    Clock::time_point epoch_start_, last_sweep_{};
    alignas(8) uint8_t buf_[65536];
};

std::vector<Key> read_keys(const std::string& path) {
    std::vector<Key> out;
    std::ifstream f(path);
    if (!f) usage("--preload: cannot read " + path);
    std::string line;
    int ln = 0;
    while (std::getline(f, line)) {
        ++ln;
        if (line.empty() || line[0] == '#') continue;
        if (line.size() != 32) usage(path + " line " + std::to_string(ln) + ": expected 32 hex digits");
        Key k;
        for (int i = 0; i < 16; ++i) {
            char* end = nullptr;
            std::string byte = line.substr(size_t(2 * i), 2);
            long v = std::strtol(byte.c_str(), &end, 16);
            if (*end) usage(path + " line " + std::to_string(ln) + ": not hex");
            k[size_t(i)] = uint8_t(v);
        }
        out.push_back(k);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    try {
        auto sw = std::make_unique<Switch>(o);
        if (!o.preload_file.empty()) {
            auto keys = read_keys(o.preload_file);
            size_t n = std::min<size_t>(keys.size(), o.cache_size);
            for (size_t i = 0; i < n; ++i) {
                sw->populate(keys[i]);
                if (i % 64 == 63) sw->run_once(0);   // keep LOAD replies flowing
            }
            auto until = Clock::now() + std::chrono::milliseconds(o.ready_timeout_ms);
            while (sw->cp_busy() && Clock::now() < until && !g_stop) sw->run_once(5);
        }
        std::cout << "{\"ready\": true, \"port\": " << sw->port() << ", \"cached\": " << sw->cached() << "}" << std::endl;
        while (!g_stop) sw->run_once(10);
        // write every dirty value back before exiting (bounded by --drain-ms)
        sw->evict_all();
        auto until = Clock::now() + std::chrono::milliseconds(o.drain_ms);
        while ((sw->cp_busy() || sw->cached()) && Clock::now() < until) {
            sw->run_once(5);
            sw->evict_all();
        }
        std::cout << sw->stats_json() << std::endl;
        return sw->cached() ? 1 : 0;
    } catch (const std::exception& e) {
        std::cerr << "kvswitch: " << e.what() << "\n";
        return 1;
    }
}
