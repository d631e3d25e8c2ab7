// Minimal stand-in for libFuzzer's driver when clang/libFuzzer is missing:
// mutates valid seed datagrams (bit flips, byte stores, truncation,
// extension, header-field edits) and feeds them to LLVMFuzzerTestOneInput
// for a bounded time and count:  kv_fuzz_parser [-max_total_time=S] [-runs=N] [-seed=K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "ycsb.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    double max_s = 5;
    long long runs = 1LL << 40;
    uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("-max_total_time=", 0) == 0) max_s = std::atof(a.c_str() + 16);
        else if (a.rfind("-runs=", 0) == 0) runs = std::atoll(a.c_str() + 6);
        else if (a.rfind("-seed=", 0) == 0) seed = std::strtoull(a.c_str() + 6, nullptr, 10);
    }
    kv::Rng rng(seed);
    std::vector<std::vector<uint8_t>> seeds;
    for (uint8_t op = 0; op <= 8; ++op) {
        for (uint16_t vlen : {0, 1, 16, 128, 129}) {
            std::vector<uint8_t> b(kv::kHeaderSize + vlen, 'v');
            uint8_t key[16];
            kv::record_key(op * 7 + vlen, key);
            kv::write_packet(b.data(), op, 0, uint32_t(vlen % 3), 42, key, b.data() + kv::kHeaderSize, vlen);
            seeds.push_back(b);
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    long long n = 0;
    for (; n < runs; ++n) {
        if ((n & 255) == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_s) break;
        std::vector<uint8_t> b = seeds[rng.next() % seeds.size()];
        int muts = 1 + int(rng.next() % 4);
        for (int m = 0; m < muts; ++m) {
            switch (rng.next() % 6) {
                case 0: if (!b.empty()) b[rng.next() % b.size()] ^= uint8_t(1u << (rng.next() % 8)); break;
                case 1: if (!b.empty()) b[rng.next() % b.size()] = uint8_t(rng.next()); break;
                case 2: b.resize(rng.next() % (b.size() + 1)); break;
                case 3: b.resize(b.size() + rng.next() % 200, uint8_t(rng.next())); break;
                case 4: if (b.size() >= 4) kv::store_u16(b.data() + 2, uint16_t(rng.next())); break;
                case 5: if (b.size() >= 8) kv::store_u32(b.data() + 4, uint32_t(rng.next() % 4)); break;
            }
        }
        LLVMFuzzerTestOneInput(b.data(), b.size());
    }
    std::printf("fuzz_driver: %lld inputs in %.1f s, no invariant violated\n", n,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
}
