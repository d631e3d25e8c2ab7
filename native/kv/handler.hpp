// Request handling, separated from socket I/O so the fuzz target and the
// sanitizer self-test drive exactly the code the server runs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "options.hpp"
#include "protocol.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace kv {

constexpr std::size_t kReplyBufSize = kHeaderSize + kAbsoluteMaxValue;

// Handle one received datagram. Writes the reply to `reply` (at least
// kReplyBufSize bytes) and returns its length, or 0 when the datagram is
// malformed (counted in st.malformed and never answered).
std::size_t handle_datagram(const uint8_t* buf, std::size_t len, const ServerOptions& opts, Store& store,
                            WorkerStats& st, uint8_t* reply);

}  // namespace kv
