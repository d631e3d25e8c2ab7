// UDP KV server; see server.hpp for the design.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "handler.hpp"

namespace kv {

static uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

static uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

static int bind_socket(const ServerOptions& o, int port, int worker) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    if (inet_pton(AF_INET, o.bind_address.c_str(), &addr.sin_addr) != 1)
        throw OptionError("bind_address", "not an IPv4 address: '" + o.bind_address + "'");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (o.rcvbuf_bytes > 0) {
        // SO_RCVBUFFORCE exceeds net.core.rmem_max when privileged; else fall back.
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &o.rcvbuf_bytes, sizeof(int)) != 0 &&
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o.rcvbuf_bytes, sizeof(int)) != 0) {
            int e = errno;
            close(fd);
            throw OptionError("rcvbuf_bytes", std::strerror(e));
        }
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));  // kernel drop counter in cmsg
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        int e = errno;
        close(fd);
        throw std::runtime_error("base_port: cannot bind " + o.bind_address + ":" + std::to_string(port) +
                                 " for worker " + std::to_string(worker) + ": " + std::strerror(e));
    }
    return fd;
}

std::string Server::worker_dir(int i) const {
    return (std::filesystem::path(opts_.datadir) / ("worker-" + std::to_string(i))).string();
}

Server::Server(const ServerOptions& opts) : opts_(opts) {
    opts_.validate();
    limiter_ = make_bg_limiter(opts_);
    namespace fs = std::filesystem;
    try {
        for (int i = 0; i < opts_.workers; ++i) {
            auto w = std::make_unique<Worker>();
            w->index = i;
            int port = opts_.base_port ? opts_.base_port + i : 0;
            w->fd = bind_socket(opts_, port, i);
            sockaddr_in bound{};
            socklen_t bl = sizeof(bound);
            getsockname(w->fd, reinterpret_cast<sockaddr*>(&bound), &bl);
            ports_.push_back(ntohs(bound.sin_port));
            workers_.push_back(std::move(w));
        }
        for (auto& w : workers_) {
            fs::path dir = worker_dir(w->index);
            std::error_code ec;
            fs::create_directories(dir, ec);
            if (ec || !fs::is_directory(dir))
                throw std::runtime_error("datadir: cannot create '" + dir.string() + "': " +
                                         (ec ? ec.message() : std::string("not a directory")));
            // The preload's writes are setup, not measured: they go without
            // the bg_write_rate limiter, which the reopened DBs then have.
            ServerOptions first = opts_;
            if (opts_.preload_records > 0) first.bg_write_rate = 0;
            w->store = std::make_unique<Store>(dir.string(), first, first.bg_write_rate ? limiter_ : nullptr);
        }
        if (opts_.preload_records > 0) preload();
    } catch (...) {
        for (auto& w : workers_) {
            if (w->fd >= 0) close(w->fd);
            w->fd = -1;
            w->store.reset();
        }
        throw;
    }
}

Server::~Server() { stop(); }

void Server::preload() {
    const uint64_t t0 = now_ns();
    const uint32_t n = uint32_t(workers_.size());
    preloaded_.assign(n, 0);
    std::vector<std::string> errors(n);
    std::vector<std::thread> th;
    for (uint32_t i = 0; i < n; ++i)
        th.emplace_back([&, i] {
            try {
                preloaded_[i] = workers_[i]->store->preload(opts_.preload_records, opts_.preload_value_bytes,
                                                            opts_.preload_partition == "hash", i, n);
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    for (auto& t : th) t.join();
    for (auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    // A server restart after the load: close flushes every memtable; the
    // compactions the reopened DB schedules run during the measured run.
    for (auto& w : workers_) w->store.reset();
    for (auto& w : workers_) {
        w->store = std::make_unique<Store>(worker_dir(w->index), opts_, limiter_);
    }
    preload_s_ = double(now_ns() - t0) / 1e9;
}

void Server::start() {
    if (started_) throw std::runtime_error("server already started (a Server runs once; create a new one)");
    started_ = running_ = true;
    for (auto& w : workers_) w->store->reset_window();  // RocksDB windows start with the workers'
    for (auto& w : workers_) {
        Worker* wp = w.get();
        wp->thread = std::thread([this, wp] { run_worker(*wp); });
    }
}

void Server::stop() {
    if (running_) {
        stop_.store(true, std::memory_order_release);
        for (auto& w : workers_)
            if (w->thread.joinable()) w->thread.join();
        running_ = false;
    }
    for (auto& w : workers_) {
        if (w->store) w->store->close();
        if (w->fd >= 0) close(w->fd);
        w->fd = -1;
    }
}

void Server::take_snapshot(Worker& w, uint64_t req, uint64_t window_start, uint64_t cpu_start,
                           uint64_t& new_window_start, uint64_t& new_cpu_start) {
    uint64_t t = now_ns(), c = thread_cpu_ns();
    w.stats.active_ns = t - window_start;
    w.stats.cpu_ns = c - cpu_start;
    {
        std::lock_guard<std::mutex> g(w.snap_mu);
        w.snapshot = w.stats;
    }
    if (snap_reset_.load(std::memory_order_acquire)) {
        w.stats.reset();
        new_window_start = t;
        new_cpu_start = c;
    }
    w.seen_request = req;
    w.snap_done.store(req, std::memory_order_release);
}

void Server::run_worker(Worker& w) {
    if (!opts_.pin_cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(opts_.pin_cpus[size_t(w.index) % opts_.pin_cpus.size()], &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    std::vector<uint8_t> buf(kHeaderSize + kAbsoluteMaxValue + 1), reply(kReplyBufSize);
    char cbuf[CMSG_SPACE(sizeof(uint32_t))];
    sockaddr_in peer{};
    uint64_t window_start = now_ns(), cpu_start = thread_cpu_ns();
    uint64_t last_end = window_start;
    uint32_t kernel_drops = 0, drops_base = 0;
    pollfd pfd{w.fd, POLLIN, 0};
    while (!stop_.load(std::memory_order_relaxed)) {
        uint64_t req = snap_request_.load(std::memory_order_acquire);
        if (req != w.seen_request) {
            w.stats.drops = kernel_drops - drops_base;
            uint64_t ws = window_start, cs = cpu_start;
            take_snapshot(w, req, window_start, cpu_start, ws, cs);
            if (ws != window_start) { drops_base = kernel_drops; last_end = ws; }
            window_start = ws;
            cpu_start = cs;
        }
        iovec iov{buf.data(), buf.size()};
        msghdr msg{};
        msg.msg_name = &peer;
        msg.msg_namelen = sizeof(peer);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        ssize_t n = recvmsg(w.fd, &msg, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                uint64_t t0 = now_ns();
                poll(&pfd, 1, opts_.idle_poll_ms);
                w.stats.idle_ns += now_ns() - t0;
            }
            continue;  // EINTR and transient errors: retry
        }
        const uint64_t t_recv = now_ns();
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                std::memcpy(&kernel_drops, CMSG_DATA(c), sizeof(uint32_t));
        ++w.stats.rx_packets;
        w.stats.bytes_in += uint64_t(n);
        // MSG_TRUNC in msg_flags: the datagram was larger than any valid one.
        std::size_t len = (msg.msg_flags & MSG_TRUNC) ? buf.size() : std::size_t(n);
        std::size_t rlen = handle_datagram(buf.data(), len, opts_, *w.store, w.stats, reply.data());
        if (rlen == 0) continue;  // malformed: dropped, its time counts as wait
        if (sendto(w.fd, reply.data(), rlen, 0, reinterpret_cast<sockaddr*>(&peer), msg.msg_namelen) < 0) {
            ++w.stats.send_errors;
        } else {
            ++w.stats.tx_packets;
            w.stats.bytes_out += rlen;
        }
        const uint64_t t_end = now_ns();
        w.stats.wait.add(t_recv - last_end);
        w.stats.process.add(t_end - t_recv);
        last_end = t_end;
    }
    // Final stats for collect() after stop().
    w.stats.drops = kernel_drops - drops_base;
    w.stats.active_ns = now_ns() - window_start;
    w.stats.cpu_ns = thread_cpu_ns() - cpu_start;
}

std::vector<WorkerStats> Server::collect(bool reset) {
    std::lock_guard<std::mutex> g(collect_mu_);
    std::vector<WorkerStats> out;
    if (!running_) {
        for (auto& w : workers_) {
            out.push_back(w->stats);
            if (reset) w->stats.reset();
        }
        return out;
    }
    snap_reset_.store(reset, std::memory_order_release);
    uint64_t req = snap_request_.fetch_add(1, std::memory_order_acq_rel) + 1;
    for (auto& w : workers_) {
        // Each worker answers at its next loop boundary: at most one request
        // or one idle poll (idle_poll_ms) away.
        while (w->snap_done.load(std::memory_order_acquire) < req)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::lock_guard<std::mutex> sg(w->snap_mu);
        out.push_back(w->snapshot);
    }
    return out;
}

std::vector<RocksSnapshot> Server::rocksdb_stats(bool reset) {
    std::vector<RocksSnapshot> out;
    for (auto& w : workers_) {
        out.push_back(w->store ? w->store->rocksdb_stats() : RocksSnapshot{});
        if (reset && w->store) w->store->reset_window();
    }
    return out;
}

}  // namespace kv
