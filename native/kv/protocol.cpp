// CRC-32 for hash partitioning (same values as Python's zlib.crc32).
#include "protocol.hpp"

namespace kv {

static const uint32_t* crc_table() {
    static uint32_t table[256];
    static bool ready = [] {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        return true;
    }();
    (void)ready;
    return table;
}

uint32_t crc32(const uint8_t* data, std::size_t len) {
    const uint32_t* t = crc_table();
    uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < len; ++i) c = t[(c ^ data[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

}  // namespace kv
