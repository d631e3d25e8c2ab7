// Per-thread statistics, merged after the run.
//
// Every worker and client thread owns one stats object and writes it with
// plain (non-atomic) increments: there are no shared counters on the hot
// path. Results are merged only after the threads stopped or handed over a
// snapshot (see Server::collect). Counter lists are declared once, as
// X-macros, and every consumer (struct fields, reset, merge, export to
// Python) expands the same list, so adding a counter is a one-line change.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kv {

// Log-bucketed latency histogram in nanoseconds: 8 sub-buckets per power of
// two (relative bucket width <= 12.5 %), 1 ns .. 2^40 ns (~18 min).
class Histogram {
public:
    static constexpr int kSub = 8;
    static constexpr int kOctaves = 41;
    static constexpr int kBuckets = kSub * kOctaves;
    void add(uint64_t ns);
    void merge(const Histogram& o);
    void reset();
    uint64_t count() const { return count_; }
    double sum_ns() const { return double(sum_); }
    double mean_ns() const { return count_ ? double(sum_) / double(count_) : 0.0; }
    uint64_t min_ns() const { return count_ ? min_ : 0; }
    uint64_t max_ns() const { return max_; }
    // Percentile p in [0,100], interpolated linearly inside the bucket.
    double percentile_ns(double p) const;
    static int bucket_of(uint64_t ns);
    static uint64_t bucket_low(int b);   // inclusive lower bound in ns
    const std::vector<uint64_t>& buckets() const { return b_; }
private:
    std::vector<uint64_t> b_ = std::vector<uint64_t>(kBuckets, 0);
    uint64_t count_ = 0, sum_ = 0, min_ = UINT64_MAX, max_ = 0;
};

// Server worker counters (one instance per worker thread).
#define KV_SERVER_COUNTERS(X)                                                     \
    X(rx_packets)    /* datagrams received, well-formed or not */                 \
    X(tx_packets)    /* replies sent */                                           \
    X(bytes_in)      /* UDP payload bytes received */                             \
    X(bytes_out)     /* UDP payload bytes sent */                                 \
    X(malformed)     /* short / unknown op / oversized / length mismatch, dropped */ \
    X(drops)         /* kernel rcvbuf drops (SO_RXQ_OVFL), seen with the next datagram */ \
    X(stale)         /* writes rejected by the sequence check */                  \
    X(not_found)     /* GET/LOAD of a missing key */                              \
    X(store_errors)  /* RocksDB returned an error; reply status ERROR */          \
    X(send_errors)   /* sendto failed */                                          \
    X(op_get) X(op_put) X(op_del) X(op_wb_put) X(op_wb_del) X(op_load)

struct WorkerStats {
#define KV_FIELD(name) uint64_t name = 0;
    KV_SERVER_COUNTERS(KV_FIELD)
#undef KV_FIELD
    Histogram wait;     // end of previous request -> next datagram received
    Histogram process;  // datagram received -> reply sent
    uint64_t active_ns = 0;  // wall time covered by these stats
    uint64_t idle_ns = 0;    // time blocked in poll() with nothing to receive
    uint64_t cpu_ns = 0;     // thread CPU time over the same window
    void reset();
    void merge(const WorkerStats& o);
    void count_op(uint8_t op);
};

// Load generator counters (one instance per client thread).
#define KV_CLIENT_COUNTERS(X)                                                        \
    X(requests)         /* logical requests started */                               \
    X(completed)        /* requests answered by a matching reply */                  \
    X(sent)             /* datagrams sent, including resends */                      \
    X(timeouts)         /* waits that hit the timeout (loss); each causes a resend */ \
    X(false_positives)  /* replies whose req_id is not the outstanding one */         \
    X(malformed)        /* replies that failed to parse */                           \
    X(send_errors)      /* sendto failed */                                          \
    X(reads) X(writes)  /* completed requests by kind */                             \
    X(status_ok) X(status_not_found) X(status_stale) X(status_error)                 \
    X(bytes_out) X(bytes_in)

struct ClientStats {
#define KV_FIELD(name) uint64_t name = 0;
    KV_CLIENT_COUNTERS(KV_FIELD)
#undef KV_FIELD
    Histogram send;      // duration of the sendto() call
    Histogram response;  // first send of a request -> matching reply received
    std::vector<uint64_t> per_second;  // completed requests per second of the run
    uint64_t busy_ns = 0;  // wall time this thread spent in the load loop
    void merge(const ClientStats& o);
};

// Flatten a histogram into summary fields (ns and us) for export.
std::map<std::string, double> summarize(const Histogram& h);

}  // namespace kv
