// Fuzz target: the request parser and the full request handler (RocksDB
// underneath), i.e. everything the server does with an untrusted datagram.
// Built with clang -fsanitize=fuzzer (libFuzzer) when KV_LIBFUZZER=ON, or
// linked with fuzz_driver.cpp (bounded mutation loop) otherwise; both with
// ASan+UBSan. Invariants are checked with abort() so the fuzzer reports them.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "handler.hpp"

using namespace kv;

static Store& fuzz_store(ServerOptions& o) {
    static std::string dir = [] {
        char tmpl[] = "/tmp/kv-fuzz-XXXXXX";
        char* d = mkdtemp(tmpl);
        if (!d) std::abort();
        return std::string(d);
    }();
    o.datadir = dir;
    o.wal = false;  // speed: durability is not what is fuzzed here
    o.memtable_mb = 4;
    static Store store(dir + "/worker-0", o);
    return store;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static ServerOptions opts;
    static Store& store = fuzz_store(opts);
    static WorkerStats st;
    static uint8_t reply[kReplyBufSize];
    // Alternate seq-check modes with the first byte's low bits (cheap coverage).
    opts.seq_check = size ? SeqCheck(data[size - 1] % 3) : SeqCheck::DiskGet;
    Packet p;
    ParseResult pr = parse_request(data, size, size_t(opts.max_value), p);
    uint64_t malformed_before = st.malformed;
    size_t n = handle_datagram(data, size, opts, store, st, reply);
    if (pr != ParseResult::Ok) {
        if (n != 0 || st.malformed != malformed_before + 1) std::abort();  // must drop, and count
        return 0;
    }
    if (n < kHeaderSize || n > kReplyBufSize) std::abort();
    Packet r;
    if (parse_reply(reply, n, kAbsoluteMaxValue, r) != ParseResult::Ok) std::abort();
    if (r.op != (p.op | kReplyFlag) || r.req_id != p.req_id || std::memcmp(r.key, p.key, kKeySize) != 0) std::abort();
    if (r.status > ST_ERROR) std::abort();
    return 0;
}
