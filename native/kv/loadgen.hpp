// Closed-loop UDP load generator (YCSB-style clients).
//
// Each client thread keeps exactly one request outstanding: it draws a key
// (ycsb.hpp), picks read or write by read_ratio, sends, and waits for the
// reply whose req_id matches. Every send (first or resend) gets a fresh
// req_id, so a reply to an earlier attempt, or a duplicate, is filtered out
// and counted as a false positive. When no matching reply arrives within
// timeout_ms the request is resent (counted as a timeout, i.e. a loss).
//
// The run stops when the time bound or the request-count bound is reached,
// whichever comes first; a request still outstanding at the deadline is
// abandoned (counted in `abandoned`, not in `completed`).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stats.hpp"

namespace kv {

struct LoadOptions {
    std::vector<std::pair<std::string, int>> targets;  // one per server worker, or one switch port
    std::string partition = "range";   // "range" | "hash": how a key picks targets[i]
    int threads = 1;                   // client threads (= outstanding requests)
    double duration_s = 1.0;           // time bound (s)
    uint64_t max_requests = 1000000;   // count bound over all threads
    double read_ratio = 0.5;           // fraction of GETs; the rest are PUTs
    std::string distribution = "zipfian";  // zipfian (scrambled, YCSB) | uniform | sequential
    int64_t records = 1000000;         // record count of the key space
    int value_size = 128;              // PUT value bytes
    double timeout_ms = 10.0;          // resend after this long without a matching reply
    uint64_t seed = 1;                 // RNG seed; thread t uses seed + t
    int max_value = 65000;             // replies with a larger vlen are malformed
    void validate() const;             // throws OptionError naming the option
};

struct LoadResult {
    ClientStats total;
    std::vector<ClientStats> per_thread;
    double elapsed_s = 0;        // wall time from the common start to the last thread's end
    uint64_t abandoned = 0;      // outstanding when the time bound hit
};

LoadResult run_load(const LoadOptions& opts);  // throws OptionError / std::runtime_error

}  // namespace kv
