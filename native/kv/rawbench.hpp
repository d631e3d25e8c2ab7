// In-process RocksDB Put/Get loop through the same Store (same options,
// record format and write options) the server uses, without sockets: the
// baseline against which the benchmark reports the server's overhead.
#pragma once
#include <cstdint>
#include <string>

#include "options.hpp"

namespace kv {

struct RawBenchResult {
    uint64_t puts = 0, gets = 0, found = 0;
    double put_mean_ns = 0, get_mean_ns = 0;
};

// `n` puts of `value_size`-byte values over keys of records [0, records)
// drawn with the given distribution, then `n` gets of the same distribution.
RawBenchResult raw_rocksdb_bench(const ServerOptions& opts, const std::string& path, uint64_t n, int value_size,
                                 const std::string& distribution, int64_t records, uint64_t seed);

}  // namespace kv
