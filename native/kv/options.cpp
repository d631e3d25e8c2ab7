// ServerOptions validation and enum names; see options.hpp.
#include "options.hpp"

#include <thread>

#include "protocol.hpp"

namespace kv {

SeqCheck parse_seq_check(const std::string& s) {
    if (s == "disk-get") return SeqCheck::DiskGet;
    if (s == "none") return SeqCheck::None;
    if (s == "evicted-only") return SeqCheck::EvictedOnly;
    throw OptionError("seq_check", "expected 'disk-get', 'none' or 'evicted-only', got '" + s + "'");
}

std::string seq_check_name(SeqCheck s) {
    switch (s) {
        case SeqCheck::DiskGet: return "disk-get";
        case SeqCheck::None: return "none";
        case SeqCheck::EvictedOnly: return "evicted-only";
    }
    return "?";
}

static void range(const char* name, long long v, long long lo, long long hi) {
    if (v < lo || v > hi)
        throw OptionError(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                    std::to_string(v));
}

void ServerOptions::validate() const {
    if (datadir.empty()) throw OptionError("datadir", "must be set (worker i uses datadir/worker-i)");
    range("workers", workers, 1, 1024);
    range("base_port", base_port, 0, 65535);
    if (base_port != 0) range("base_port", base_port + workers - 1, 1, 65535);
    range("max_value", max_value, 0, static_cast<long long>(kAbsoluteMaxValue));
    range("rcvbuf_bytes", rcvbuf_bytes, 0, 1LL << 30);
    range("idle_poll_ms", idle_poll_ms, 1, 10000);
    range("memtable_mb", memtable_mb, 1, 1 << 16);
    range("flushnum", flushnum, 1, 64);
    range("maxnum", maxnum, 2, 64);
    if (flushnum >= maxnum)
        throw OptionError("flushnum", "must be smaller than maxnum (" + std::to_string(maxnum) +
                                          "), otherwise writes stall before a flush can start");
    if (sync && !wal) throw OptionError("sync", "sync writes need the WAL (wal = true)");
    range("flush_threads", flush_threads, 1, 256);
    range("compaction_threads", compaction_threads, 1, 256);
    range("bg_write_rate", bg_write_rate, 0, 1LL << 40);
    if (bg_write_rate != 0 && bg_write_rate < 64 * 1024)
        throw OptionError("bg_write_rate", "must be 0 (unlimited) or at least 65536 bytes/s, got " +
                                               std::to_string(bg_write_rate));
    range("delayed_write_rate", delayed_write_rate, 0, 1LL << 40);
    if (delayed_write_rate != 0 && delayed_write_rate < 16 * 1024)
        throw OptionError("delayed_write_rate", "must be 0 (RocksDB's default) or at least 16384 bytes/s "
                                                "(RocksDB's floor, kMinWriteRate), got " + std::to_string(delayed_write_rate));
    range("level0_file_num_compaction_trigger", level0_file_num_compaction_trigger, 0, 1 << 16);
    range("level0_slowdown_writes_trigger", level0_slowdown_writes_trigger, 0, 1 << 16);
    range("level0_stop_writes_trigger", level0_stop_writes_trigger, 0, 1 << 16);
    // RocksDB would silently raise slowdown to the compaction trigger and stop
    // to slowdown (SanitizeOptions); refuse instead, naming the option.
    const int l0c = level0_file_num_compaction_trigger ? level0_file_num_compaction_trigger : 4;
    const int l0s = level0_slowdown_writes_trigger ? level0_slowdown_writes_trigger : 20;
    const int l0p = level0_stop_writes_trigger ? level0_stop_writes_trigger : 36;
    if (l0s < l0c)
        throw OptionError("level0_slowdown_writes_trigger", "must be >= level0_file_num_compaction_trigger (" +
                                                                std::to_string(l0c) + "), got " + std::to_string(l0s));
    if (l0p < l0s)
        throw OptionError("level0_stop_writes_trigger", "must be >= level0_slowdown_writes_trigger (" +
                                                            std::to_string(l0s) + "), got " + std::to_string(l0p));
    range("preload_records", preload_records, 0, 10000000000LL);
    range("preload_value_bytes", preload_value_bytes, 0, static_cast<long long>(kAbsoluteMaxValue));
    if (preload_partition != "hash" && preload_partition != "range")
        throw OptionError("preload_partition", "expected 'hash' or 'range', got '" + preload_partition + "'");
    long long ncpu = std::thread::hardware_concurrency();
    for (int c : pin_cpus) range("pin_cpus", c, 0, ncpu > 0 ? ncpu - 1 : 1023);
}

}  // namespace kv
