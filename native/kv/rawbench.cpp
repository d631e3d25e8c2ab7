// See rawbench.hpp.
#include "rawbench.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "store.hpp"
#include "ycsb.hpp"

namespace kv {

RawBenchResult raw_rocksdb_bench(const ServerOptions& opts, const std::string& path, uint64_t n, int value_size,
                                 const std::string& distribution, int64_t records, uint64_t seed) {
    opts.validate();
    if (value_size < 0 || value_size > 65000) throw OptionError("value_size", "must be in [0, 65000] bytes");
    if (records < 1) throw OptionError("records", "must be >= 1");
    Store store(path, opts);
    std::vector<uint8_t> value(size_t(value_size), 'r');
    RawBenchResult r;
    using clk = std::chrono::steady_clock;
    KeyGen kg(parse_key_dist(distribution), records, seed, 0, 1);
    uint8_t key[16];
    auto t0 = clk::now();
    for (uint64_t i = 0; i < n; ++i) {
        record_key(kg.next(), key);
        store.put(key, 0, value.data(), uint16_t(value.size()));
    }
    auto t1 = clk::now();
    KeyGen kg2(parse_key_dist(distribution), records, seed + 1, 0, 1);
    std::string rec;
    for (uint64_t i = 0; i < n; ++i) {
        record_key(kg2.next(), key);
        r.found += store.get(key, rec) == 1;
    }
    auto t2 = clk::now();
    r.puts = r.gets = n;
    r.put_mean_ns = n ? std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n) : 0;
    r.get_mean_ns = n ? std::chrono::duration<double, std::nano>(t2 - t1).count() / double(n) : 0;
    store.close();
    return r;
}

}  // namespace kv
