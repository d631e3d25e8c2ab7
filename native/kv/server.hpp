// The UDP KV server: N worker threads, each with its own socket
// (base_port + i) and its own RocksDB instance (datadir/worker-i).
//
// A worker loops: non-blocking receive; if nothing is queued, poll() (that
// time is idle); handle; reply. It times "wait" (end of the previous request
// -> datagram received) and "process" (received -> reply sent) per request
// into its own WorkerStats. Stats leave the worker only through collect(),
// which asks each worker to copy (and optionally reset) its stats at a loop
// boundary, so the hot path never touches shared memory except one relaxed
// atomic load per iteration.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "options.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace kv {

class Server {
public:
    // Validates options, creates datadir/worker-i, opens every RocksDB
    // instance and binds every socket. With preload_records, first loads the
    // records into their instances (one thread per instance), then closes
    // (flushing the memtables) and reopens every DB, whose compactions then
    // run from the reopened state. Throws OptionError or
    // std::runtime_error (message names the option at fault); on failure
    // everything opened so far is closed again.
    explicit Server(const ServerOptions& opts);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void start();
    // Stop the workers, flush and close every RocksDB instance. Idempotent.
    void stop();
    bool running() const { return running_; }
    const ServerOptions& options() const { return opts_; }
    std::vector<int> ports() const { return ports_; }

    // Per-worker stats since start or the last reset. While running, each
    // worker hands over a copy at its next loop boundary (within
    // idle_poll_ms when idle); after stop() the final stats are returned.
    std::vector<WorkerStats> collect(bool reset);
    // RocksDB statistics per instance over the window since start() or the
    // last reset (empty once stopped); reset = start a new window after the
    // snapshot, as collect(true) does for the workers.
    std::vector<RocksSnapshot> rocksdb_stats(bool reset = false);
    // Wall time of the preload, load + close + reopen (0 without one), s.
    double preload_s() const { return preload_s_; }
    // Records each instance received in the preload.
    std::vector<int64_t> preloaded() const { return preloaded_; }

private:
    struct Worker {
        int index = 0;
        int fd = -1;
        std::unique_ptr<Store> store;
        std::thread thread;
        WorkerStats stats;            // written only by the worker thread while running
        uint64_t seen_request = 0;    // worker-private copy of the last snapshot request served
        std::mutex snap_mu;
        WorkerStats snapshot;         // guarded by snap_mu
        std::atomic<uint64_t> snap_done{0};
    };
    void run_worker(Worker& w);
    void preload();
    std::string worker_dir(int i) const;  // datadir/worker-i
    void take_snapshot(Worker& w, uint64_t req, uint64_t window_start_ns, uint64_t cpu_start_ns,
                       uint64_t& new_window_start, uint64_t& new_cpu_start);

    ServerOptions opts_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<int> ports_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> snap_request_{0};
    std::atomic<bool> snap_reset_{false};
    std::mutex collect_mu_;
    bool running_ = false;
    bool started_ = false;
    double preload_s_ = 0;
    std::shared_ptr<rocksdb::RateLimiter> limiter_;  // bg_write_rate, shared by the instances
    std::vector<int64_t> preloaded_;
};

}  // namespace kv
