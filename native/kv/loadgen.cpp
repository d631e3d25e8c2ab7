// Closed-loop load generator; see loadgen.hpp.
#include "loadgen.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "options.hpp"
#include "protocol.hpp"
#include "ycsb.hpp"

namespace kv {

static uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

void LoadOptions::validate() const {
    if (targets.empty()) throw OptionError("targets", "need at least one (host, port)");
    for (auto& t : targets) {
        in_addr a{};
        if (inet_pton(AF_INET, t.first.c_str(), &a) != 1)
            throw OptionError("targets", "not an IPv4 address: '" + t.first + "'");
        if (t.second < 1 || t.second > 65535) throw OptionError("targets", "port out of range: " + std::to_string(t.second));
    }
    if (partition != "range" && partition != "hash")
        throw OptionError("partition", "expected 'range' or 'hash', got '" + partition + "'");
    if (threads < 1 || threads > 4096) throw OptionError("threads", "must be in [1, 4096]");
    if (!(duration_s > 0) || duration_s > 3600) throw OptionError("duration_s", "must be in (0, 3600] s");
    if (max_requests < 1) throw OptionError("max_requests", "must be >= 1 (the run is bounded in count and time)");
    if (!(read_ratio >= 0 && read_ratio <= 1)) throw OptionError("read_ratio", "must be in [0, 1]");
    try { parse_key_dist(distribution); } catch (const std::invalid_argument& e) {
        throw OptionError("distribution", "expected zipfian, uniform or sequential, got '" + distribution + "'");
    }
    if (records < 1) throw OptionError("records", "must be >= 1");
    if (value_size < 0 || value_size > int(kAbsoluteMaxValue)) throw OptionError("value_size", "must be in [0, 65000] bytes");
    if (!(timeout_ms > 0) || timeout_ms > 60000) throw OptionError("timeout_ms", "must be in (0, 60000] ms");
    if (max_value < 0 || max_value > int(kAbsoluteMaxValue)) throw OptionError("max_value", "must be in [0, 65000] bytes");
}

namespace {

struct Shared {
    const LoadOptions* o;
    std::vector<sockaddr_in> addrs;
    std::atomic<int> ready{0};
    std::atomic<uint64_t> start_ns{0};
    uint64_t deadline_ns = 0;
};

void client_thread(Shared& sh, int t, uint64_t quota, ClientStats& st, uint64_t& abandoned, uint64_t& end_ns) {
    const LoadOptions& o = *sh.o;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    KeyGen keys(parse_key_dist(o.distribution), o.records, o.seed + uint64_t(t) * 0x9E3779B97F4A7C15ULL, t, o.threads);
    Rng mix(o.seed ^ (uint64_t(t) << 32) ^ 0x5bd1e995ULL);
    std::vector<uint8_t> req(kHeaderSize + size_t(o.value_size)), buf(kHeaderSize + kAbsoluteMaxValue + 1);
    const ValuePool values(size_t(o.value_size), o.seed + 0x76616c75ULL + uint64_t(t));
    Rng value_rng(o.seed ^ (uint64_t(t) << 40) ^ 0x76616c75ULL);  // own stream: mix's draws stay as they were
    const bool hash = o.partition == "hash";
    const uint32_t n = uint32_t(sh.addrs.size());
    const uint64_t timeout_ns = uint64_t(o.timeout_ms * 1e6);
    uint64_t counter = 0;
    pollfd pfd{fd, POLLIN, 0};

    sh.ready.fetch_add(1);
    uint64_t start;
    while ((start = sh.start_ns.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    const uint64_t deadline = sh.deadline_ns;
    uint64_t t_now = now_ns();

    for (uint64_t done = 0; done < quota && t_now < deadline && fd >= 0; ++done) {
        uint8_t key[kKeySize];
        record_key(keys.next(), key);
        const bool read = mix.uniform() < o.read_ratio;
        const sockaddr_in& dst = sh.addrs[n == 1 ? 0 : (hash ? hash_partition(key, n) : range_partition(key, n))];
        const uint8_t* value = read ? nullptr : values.next(value_rng);
        ++st.requests;
        const uint64_t req_start = now_ns();
        bool answered = false;
        Packet rep;
        while (!answered && t_now < deadline) {
            // Fresh req_id per attempt: thread in the top 16 bits, attempt counter below.
            const uint64_t req_id = (uint64_t(t) << 48) | (++counter & 0xFFFFFFFFFFFFULL);
            size_t len = read ? write_packet(req.data(), OP_GET, 0, 0, req_id, key, nullptr, 0)
                              : write_packet(req.data(), OP_PUT, 0, 0, req_id, key, value, uint16_t(o.value_size));
            const uint64_t t0 = now_ns();
            ssize_t s = sendto(fd, req.data(), len, 0, reinterpret_cast<const sockaddr*>(&dst), sizeof(dst));
            const uint64_t t_sent = now_ns();
            st.send.add(t_sent - t0);
            if (s < 0) ++st.send_errors; else { ++st.sent; st.bytes_out += len; }
            // Wait for the matching reply, discarding others, until timeout or deadline.
            for (;;) {
                t_now = now_ns();
                const uint64_t limit = std::min(t_sent + timeout_ns, deadline);
                if (t_now >= limit) {
                    if (t_now < deadline) ++st.timeouts;
                    break;
                }
                uint64_t left = limit - t_now;
                timespec ts{time_t(left / 1000000000ULL), long(left % 1000000000ULL)};
                if (ppoll(&pfd, 1, &ts, nullptr) <= 0) continue;
                ssize_t r = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
                if (r < 0) continue;
                st.bytes_in += uint64_t(r);
                if (parse_reply(buf.data(), size_t(r), size_t(o.max_value), rep) != ParseResult::Ok) { ++st.malformed; continue; }
                if (rep.req_id != req_id) { ++st.false_positives; continue; }
                answered = true;
                break;
            }
        }
        t_now = now_ns();
        if (!answered) { ++abandoned; break; }
        st.response.add(t_now - req_start);
        ++st.completed;
        if (read) ++st.reads; else ++st.writes;
        switch (rep.status) {
            case ST_OK: ++st.status_ok; break;
            case ST_NOT_FOUND: ++st.status_not_found; break;
            case ST_STALE: ++st.status_stale; break;
            default: ++st.status_error; break;
        }
        size_t sec = size_t((t_now - start) / 1000000000ULL);
        if (st.per_second.size() <= sec) st.per_second.resize(sec + 1, 0);
        ++st.per_second[sec];
    }
    end_ns = now_ns();
    st.busy_ns = end_ns - start;
    // Whole seconds without a completion (a write stop) are zeros, not
    // missing: per_second covers at least [0, floor(busy)) s.
    const size_t secs = size_t(st.busy_ns / 1000000000ULL);
    if (st.per_second.size() < secs) st.per_second.resize(secs, 0);
    if (fd >= 0) close(fd);
}

}  // namespace

LoadResult run_load(const LoadOptions& o) {
    o.validate();
    Shared sh;
    sh.o = &o;
    for (auto& t : o.targets) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(uint16_t(t.second));
        inet_pton(AF_INET, t.first.c_str(), &a.sin_addr);
        sh.addrs.push_back(a);
    }
    LoadResult res;
    res.per_thread.resize(size_t(o.threads));
    std::vector<uint64_t> abandoned(size_t(o.threads), 0), end(size_t(o.threads), 0);
    std::vector<std::thread> th;
    const uint64_t per = o.max_requests / uint64_t(o.threads), extra = o.max_requests % uint64_t(o.threads);
    for (int t = 0; t < o.threads; ++t) {
        uint64_t quota = per + (uint64_t(t) < extra ? 1 : 0);
        th.emplace_back(client_thread, std::ref(sh), t, quota, std::ref(res.per_thread[size_t(t)]),
                        std::ref(abandoned[size_t(t)]), std::ref(end[size_t(t)]));
    }
    // Common start once every thread has its socket, so all clients load the
    // servers over the same window.
    while (sh.ready.load() < o.threads) std::this_thread::yield();
    uint64_t start = now_ns();
    sh.deadline_ns = start + uint64_t(o.duration_s * 1e9);
    sh.start_ns.store(start, std::memory_order_release);
    for (auto& x : th) x.join();
    uint64_t last = start;
    for (int t = 0; t < o.threads; ++t) {
        res.total.merge(res.per_thread[size_t(t)]);
        res.abandoned += abandoned[size_t(t)];
        last = std::max(last, end[size_t(t)]);
    }
    res.elapsed_s = double(last - start) / 1e9;
    return res;
}

}  // namespace kv
