// Histogram and stats merging; see stats.hpp.
#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace kv {

int Histogram::bucket_of(uint64_t ns) {
    if (ns < kSub) return int(ns);  // exact buckets for 0..7 ns
    int msb = 63 - __builtin_clzll(ns);             // >= 3
    int sub = int((ns >> (msb - 3)) & (kSub - 1));  // next three bits
    int b = (msb - 2) * kSub + sub;
    return std::min(b, kBuckets - 1);
}

uint64_t Histogram::bucket_low(int b) {
    if (b < kSub) return uint64_t(b);
    int msb = b / kSub + 2, sub = b % kSub;
    return (uint64_t(kSub + sub)) << (msb - 3);
}

void Histogram::add(uint64_t ns) {
    ++b_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
}

void Histogram::merge(const Histogram& o) {
    for (int i = 0; i < kBuckets; ++i) b_[i] += o.b_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
}

void Histogram::reset() { *this = Histogram(); }

double Histogram::percentile_ns(double p) const {
    if (!count_) return 0.0;
    double target = std::clamp(p, 0.0, 100.0) / 100.0 * double(count_);
    uint64_t cum = 0;
    for (int i = 0; i < kBuckets; ++i) {
        if (!b_[i]) continue;
        if (double(cum + b_[i]) >= target) {
            double lo = double(bucket_low(i));
            double hi = i + 1 < kBuckets ? double(bucket_low(i + 1)) : lo;
            double frac = (target - double(cum)) / double(b_[i]);
            double v = lo + frac * (hi - lo);
            // The true samples lie within [min, max]; clamp the interpolation.
            return std::clamp(v, double(min_), double(max_));
        }
        cum += b_[i];
    }
    return double(max_);
}

void WorkerStats::reset() { *this = WorkerStats(); }

void WorkerStats::merge(const WorkerStats& o) {
#define KV_ADD(name) name += o.name;
    KV_SERVER_COUNTERS(KV_ADD)
#undef KV_ADD
    wait.merge(o.wait);
    process.merge(o.process);
    active_ns = std::max(active_ns, o.active_ns);
    idle_ns += o.idle_ns;
    cpu_ns += o.cpu_ns;
}

void WorkerStats::count_op(uint8_t op) {
    switch (op) {
        case 1: ++op_get; break;
        case 2: ++op_put; break;
        case 3: ++op_del; break;
        case 4: ++op_wb_put; break;
        case 5: ++op_wb_del; break;
        case 6: ++op_load; break;
        default: break;
    }
}

void ClientStats::merge(const ClientStats& o) {
#define KV_ADD(name) name += o.name;
    KV_CLIENT_COUNTERS(KV_ADD)
#undef KV_ADD
    send.merge(o.send);
    response.merge(o.response);
    if (per_second.size() < o.per_second.size()) per_second.resize(o.per_second.size(), 0);
    for (size_t i = 0; i < o.per_second.size(); ++i) per_second[i] += o.per_second[i];
    busy_ns += o.busy_ns;
}

std::map<std::string, double> summarize(const Histogram& h) {
    return {
        {"count", double(h.count())},
        {"mean_us", h.mean_ns() / 1e3},
        {"min_us", double(h.min_ns()) / 1e3},
        {"max_us", double(h.max_ns()) / 1e3},
        {"p50_us", h.percentile_ns(50) / 1e3},
        {"p90_us", h.percentile_ns(90) / 1e3},
        {"p99_us", h.percentile_ns(99) / 1e3},
        {"p999_us", h.percentile_ns(99.9) / 1e3},
        {"sum_us", h.sum_ns() / 1e3},
    };
}

}  // namespace kv
