// YCSB key stream, bit-compatible with YCSB (and with model/workload.py):
//
// * fnvhash64      = YCSB Utils.fnvhash64: FNV-1a 64 over the 8 bytes of the
//                    long, low byte first, then Java Math.abs of the signed
//                    result (so Long.MIN_VALUE stays negative, as in Java).
// * ZipfianGenerator over [0, 10^10] with theta 0.99 and the precomputed
//   zetan YCSB ships (ScrambledZipfianGenerator).
// * scrambled zipfian record = fnvhash64(rank) mod record_count (Java `%`).
// * record_key(i)  = 16 bytes big-endian: hi = fnvhash64(i), lo = i.
//
// The random source is ours (xoshiro256**); only the mapping from a uniform
// double u in [0,1) to a rank is YCSB's, which is what tests compare.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kv {

int64_t fnvhash64(int64_t val);

struct Zipfian {
    static constexpr int64_t kItemCount = 10000000000LL;        // YCSB ITEM_COUNT
    static constexpr double kTheta = 0.99;                       // YCSB ZIPFIAN_CONSTANT
    static constexpr double kZetan = 26.46902820178302;          // YCSB ZETAN for theta .99
    int64_t items;  // max - min + 1
    double theta, zetan, alpha, eta, half_pow_theta;
    // YCSB ZipfianGenerator(0, item_count, theta, zetan): items = item_count + 1.
    Zipfian(int64_t item_count = kItemCount, double theta = kTheta, double zetan = kZetan);
    int64_t rank(double u) const;  // ZipfianGenerator.nextLong(items) for a given u
};

// Scrambled zipfian: record number in [0, record_count).
int64_t scrambled_zipfian(const Zipfian& z, double u, int64_t record_count);

// 16-byte key of record i, written to out[0..15].
void record_key(int64_t i, uint8_t* out);

// Small fast PRNG (xoshiro256**), seeded with splitmix64.
struct Rng {
    uint64_t s[4];
    explicit Rng(uint64_t seed);
    uint64_t next();
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0,1)
};

// Values that do not compress, as YCSB's random field values: windows at
// random offsets of a 1 MiB pool of random bytes (so two values in one 4 KiB
// SST block rarely share bytes, and SST files hold as many bytes as were
// written, with or without RocksDB's block compression).
class ValuePool {
public:
    static constexpr size_t kPoolBytes = size_t(1) << 20;
    ValuePool(size_t value_size, uint64_t seed);
    const uint8_t* next(Rng& rng) const { return pool_.data() + rng.next() % kPoolBytes; }
    size_t value_size() const { return value_size_; }
private:
    std::vector<uint8_t> pool_;
    size_t value_size_;
};

enum class KeyDist { Zipfian, Uniform, Sequential };
KeyDist parse_key_dist(const std::string& s);  // throws std::invalid_argument

// Per-thread key generator: no shared state, so client threads never contend.
struct KeyGen {
    KeyDist dist;
    int64_t records;
    Zipfian zipf;
    Rng rng;
    int64_t next_seq;
    int64_t stride;
    KeyGen(KeyDist d, int64_t records, uint64_t seed, int64_t thread_index, int64_t thread_count);
    int64_t next();
};

}  // namespace kv
