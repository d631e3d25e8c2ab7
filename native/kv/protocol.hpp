// Wire protocol of docs/protocol.md: one UDP datagram per request/reply,
// 32-byte little-endian header followed by vlen value bytes.
//
// This header is the single place where the byte layout lives; the server,
// the load generator, the fuzz target and the bindings all use it, so a
// layout change cannot drift between them. Parsing never trusts the
// datagram: every length is checked before any byte past the header is read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kv {

constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kKeySize = 16;
// Hard upper bound of a value, independent of the configured maximum: vlen is
// a u16 and a reply must fit in one UDP datagram.
constexpr std::size_t kAbsoluteMaxValue = 65000;

enum Op : uint8_t { OP_GET = 1, OP_PUT = 2, OP_DEL = 3, OP_WB_PUT = 4, OP_WB_DEL = 5, OP_LOAD = 6 };
constexpr uint8_t kReplyFlag = 0x80;
constexpr int kNumOps = 7;  // index 0 unused; ops are 1..6

enum Status : uint8_t { ST_OK = 0, ST_NOT_FOUND = 1, ST_STALE = 2, ST_ERROR = 3 };

// Decoded header; `value` points into the datagram buffer (not owned).
struct Packet {
    uint8_t op = 0;
    uint8_t status = 0;
    uint16_t vlen = 0;
    uint32_t seq = 0;
    uint64_t req_id = 0;
    uint8_t key[kKeySize] = {};
    const uint8_t* value = nullptr;
};

enum class ParseResult { Ok, TooShort, BadOp, TooLong, LengthMismatch };

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t load_u64(const uint8_t* p) { return uint64_t(load_u32(p)) | (uint64_t(load_u32(p + 4)) << 32); }
inline void store_u16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
inline void store_u32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i)); }
inline void store_u64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i)); }

inline bool is_request_op(uint8_t op) { return op >= OP_GET && op <= OP_LOAD; }

// Parse a datagram of either direction: a request (`reply` false) or a
// reply, whose op carries kReplyFlag. `max_value` is the configured maximum
// value size; the length rules are the same both ways.
inline ParseResult parse_datagram(const uint8_t* buf, std::size_t len, std::size_t max_value,
                                  bool reply, Packet& out) {
    if (len < kHeaderSize) return ParseResult::TooShort;
    out.op = buf[0];
    const bool ok_op = reply ? ((out.op & kReplyFlag) && is_request_op(uint8_t(out.op & 0x7f)))
                             : is_request_op(out.op);
    if (!ok_op) return ParseResult::BadOp;
    out.status = buf[1];
    out.vlen = load_u16(buf + 2);
    out.seq = load_u32(buf + 4);
    out.req_id = load_u64(buf + 8);
    std::memcpy(out.key, buf + 16, kKeySize);
    if (out.vlen > max_value) return ParseResult::TooLong;
    if (len != kHeaderSize + out.vlen) return ParseResult::LengthMismatch;
    out.value = buf + kHeaderSize;
    return ParseResult::Ok;
}

// Parse a request datagram (the server's side).
inline ParseResult parse_request(const uint8_t* buf, std::size_t len, std::size_t max_value, Packet& out) {
    return parse_datagram(buf, len, max_value, false, out);
}

// Parse a reply datagram (the load generator's side).
inline ParseResult parse_reply(const uint8_t* buf, std::size_t len, std::size_t max_value, Packet& out) {
    return parse_datagram(buf, len, max_value, true, out);
}

// Write a header into `buf` (caller guarantees kHeaderSize + vlen bytes);
// returns the datagram length.
inline std::size_t write_packet(uint8_t* buf, uint8_t op, uint8_t status, uint32_t seq, uint64_t req_id,
                                const uint8_t* key, const uint8_t* value, uint16_t vlen) {
    buf[0] = op;
    buf[1] = status;
    store_u16(buf + 2, vlen);
    store_u32(buf + 4, seq);
    store_u64(buf + 8, req_id);
    std::memcpy(buf + 16, key, kKeySize);
    if (vlen) std::memcpy(buf + kHeaderSize, value, vlen);
    return kHeaderSize + vlen;
}

// Range partitioning over the populated space [0, 2^31) (YCSB keys have the
// top bit clear): server = min(N-1, (first 4 key bytes, big-endian) * N >> 31).
inline uint32_t range_partition(const uint8_t* key, uint32_t n) {
    uint32_t top = (uint32_t(key[0]) << 24) | (uint32_t(key[1]) << 16) | (uint32_t(key[2]) << 8) | key[3];
    uint64_t s = (uint64_t(top) * n) >> 31;
    return uint32_t(s < n ? s : n - 1);
}

// CRC-32 (IEEE, reflected, as zlib.crc32) for hash partitioning.
uint32_t crc32(const uint8_t* data, std::size_t len);

// Hash partitioning: bucket = crc32(key) mod 32768, server = bucket * N / 32768.
inline uint32_t hash_partition(const uint8_t* key, uint32_t n) {
    uint32_t bucket = crc32(key, kKeySize) % 32768u;
    return uint32_t((uint64_t(bucket) * n) / 32768u);
}

}  // namespace kv
