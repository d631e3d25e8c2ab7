// YCSB generators; see ycsb.hpp for the exact algorithms reproduced.
#include "ycsb.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kv {

int64_t fnvhash64(int64_t val) {
    // Java arithmetic: signed 64-bit with wrap-around; use unsigned to avoid UB.
    uint64_t v = uint64_t(val);
    uint64_t h = 0xCBF29CE484222325ULL;
    for (int i = 0; i < 8; ++i) {
        uint64_t octet = v & 0xff;
        v >>= 8;  // Java `>>` is arithmetic, but only the low 8 bytes are ever used
        h ^= octet;
        h *= 1099511628211ULL;
    }
    int64_t s = int64_t(h);
    if (s == std::numeric_limits<int64_t>::min()) return s;  // Math.abs(MIN) == MIN
    return s < 0 ? -s : s;
}

static double zeta_static(int64_t n, double theta) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += 1.0 / std::pow(double(i + 1), theta);
    return sum;
}

Zipfian::Zipfian(int64_t item_count, double th, double zn)
    : items(item_count + 1), theta(th), zetan(zn) {
    double zeta2theta = zeta_static(2, theta);
    alpha = 1.0 / (1.0 - theta);
    eta = (1.0 - std::pow(2.0 / double(items), 1.0 - theta)) / (1.0 - zeta2theta / zetan);
    half_pow_theta = std::pow(0.5, theta);
}

int64_t Zipfian::rank(double u) const {
    double uz = u * zetan;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + half_pow_theta) return 1;
    return int64_t(double(items) * std::pow(eta * u - eta + 1.0, alpha));
}

int64_t scrambled_zipfian(const Zipfian& z, double u, int64_t record_count) {
    return fnvhash64(z.rank(u)) % record_count;  // Java `%`: sign follows the dividend
}

void record_key(int64_t i, uint8_t* out) {
    uint64_t hi = uint64_t(fnvhash64(i)), lo = uint64_t(i);
    for (int b = 0; b < 8; ++b) {
        out[b] = uint8_t(hi >> (56 - 8 * b));
        out[8 + b] = uint8_t(lo >> (56 - 8 * b));
    }
}

static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
    for (auto& w : s) w = splitmix64(seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Rng::next() {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

ValuePool::ValuePool(size_t value_size, uint64_t seed) : pool_(kPoolBytes + value_size), value_size_(value_size) {
    Rng r(seed);
    for (size_t i = 0; i < pool_.size(); i += 8) {
        uint64_t x = r.next();
        for (size_t b = 0; b < 8 && i + b < pool_.size(); ++b) pool_[i + b] = uint8_t(x >> (8 * b));
    }
}

KeyDist parse_key_dist(const std::string& s) {
    if (s == "zipfian") return KeyDist::Zipfian;
    if (s == "uniform") return KeyDist::Uniform;
    if (s == "sequential") return KeyDist::Sequential;
    throw std::invalid_argument("distribution: expected zipfian, uniform or sequential, got '" + s + "'");
}

KeyGen::KeyGen(KeyDist d, int64_t recs, uint64_t seed, int64_t thread_index, int64_t thread_count)
    : dist(d), records(recs), zipf(), rng(seed), next_seq(thread_index), stride(thread_count) {}

int64_t KeyGen::next() {
    switch (dist) {
        case KeyDist::Zipfian: {
            int64_t r = scrambled_zipfian(zipf, rng.uniform(), records);
            return r < 0 ? -r : r;  // only for fnvhash64 == Long.MIN_VALUE (never seen in practice)
        }
        case KeyDist::Uniform: return int64_t(rng.next() % uint64_t(records));
        case KeyDist::Sequential: {
            // Thread t walks t, t+T, t+2T, ... so threads cover disjoint records.
            int64_t r = next_seq % records;
            next_seq += stride;
            return r;
        }
    }
    return 0;
}

}  // namespace kv
