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
#include <thread>
#include <vector>

#include "options.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace kv {

class Server {
public:
    // Validates options, creates datadir/worker-i, opens every RocksDB
    // instance and binds every socket. Throws OptionError or
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
    // RocksDB statistics per instance (empty maps once stopped).
    std::vector<std::map<std::string, double>> rocksdb_stats() const;

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
};

}  // namespace kv
