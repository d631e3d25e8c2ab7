// Request semantics of docs/protocol.md (ops, statuses, sequence checks).
#include "handler.hpp"

#include <string>

namespace kv {

static bool seq_checked(uint8_t op, uint32_t seq, SeqCheck mode) {
    if (seq == 0 || mode == SeqCheck::None) return false;
    if (mode == SeqCheck::EvictedOnly) return op == OP_WB_PUT || op == OP_WB_DEL;
    return true;  // disk-get: every write with a seq
}

std::size_t handle_datagram(const uint8_t* buf, std::size_t len, const ServerOptions& opts, Store& store,
                            WorkerStats& st, uint8_t* reply) {
    Packet p;
    if (parse_request(buf, len, std::size_t(opts.max_value), p) != ParseResult::Ok) {
        ++st.malformed;
        return 0;
    }
    st.count_op(p.op);
    const uint8_t rop = uint8_t(p.op | kReplyFlag);
    switch (p.op) {
        case OP_GET:
        case OP_LOAD: {
            std::string rec;
            int r = store.get(p.key, rec);
            if (r < 0 || (r == 1 && (rec.size() < 4 || rec.size() - 4 > kAbsoluteMaxValue))) {
                ++st.store_errors;
                return write_packet(reply, rop, ST_ERROR, p.seq, p.req_id, p.key, nullptr, 0);
            }
            if (r == 0) {
                ++st.not_found;
                return write_packet(reply, rop, ST_NOT_FOUND, p.seq, p.req_id, p.key, nullptr, 0);
            }
            const auto* v = reinterpret_cast<const uint8_t*>(rec.data()) + 4;
            uint32_t stored = load_u32(reinterpret_cast<const uint8_t*>(rec.data()));
            // LOAD returns the stored seq (cache population); GET echoes the request's.
            return write_packet(reply, rop, ST_OK, p.op == OP_LOAD ? stored : p.seq, p.req_id, p.key, v,
                                uint16_t(rec.size() - 4));
        }
        case OP_PUT:
        case OP_WB_PUT:
        case OP_DEL:
        case OP_WB_DEL: {
            const bool is_put = p.op == OP_PUT || p.op == OP_WB_PUT;
            int r;
            uint32_t stored = 0;
            if (seq_checked(p.op, p.seq, opts.seq_check)) {
                r = is_put ? store.put_if_newer(p.key, p.seq, p.value, p.vlen, stored)
                           : store.del_if_newer(p.key, p.seq, stored);
            } else {
                r = (is_put ? store.put(p.key, p.seq, p.value, p.vlen) : store.del(p.key)) ? 1 : -1;
            }
            if (r < 0) {
                ++st.store_errors;
                return write_packet(reply, rop, ST_ERROR, p.seq, p.req_id, p.key, nullptr, 0);
            }
            if (r == 0) {
                ++st.stale;  // the reply carries the stored (newer) seq
                return write_packet(reply, rop, ST_STALE, stored, p.req_id, p.key, nullptr, 0);
            }
            return write_packet(reply, rop, ST_OK, p.seq, p.req_id, p.key, nullptr, 0);
        }
        default:
            ++st.malformed;  // unreachable: parse_request rejects unknown ops
            return 0;
    }
}

}  // namespace kv
