// ServerOptions: every knob of the KV server in one documented struct.
//
// Mirrored field by field by the Python dataclass native.options.ServerOptions
// (same names, same defaults). validate() rejects bad values with an
// OptionError whose message starts with the option name, so a user can tell
// which setting to fix.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kv {

struct OptionError : std::invalid_argument {
    std::string option;
    OptionError(const std::string& opt, const std::string& msg)
        : std::invalid_argument(opt + ": " + msg), option(opt) {}
};

enum class SeqCheck { DiskGet, None, EvictedOnly };
SeqCheck parse_seq_check(const std::string& s);  // "disk-get" | "none" | "evicted-only"
std::string seq_check_name(SeqCheck s);

struct ServerOptions {
    // --- placement -----------------------------------------------------------
    std::string datadir;                   // worker i keeps its RocksDB in datadir/worker-i (required)
    std::string bind_address = "127.0.0.1";
    int base_port = 0;                     // worker i listens on base_port + i; 0 = ports chosen by the OS
    int workers = 1;                       // worker threads = partitions = RocksDB instances
    std::vector<int> pin_cpus;             // worker i pinned to pin_cpus[i % size]; empty = not pinned
    int rcvbuf_bytes = 0;                  // SO_RCVBUF per worker socket; 0 = OS default
    int max_value = 128;                   // largest accepted value (bytes); larger requests are malformed
    int idle_poll_ms = 20;                 // how often an idle worker checks for stop/snapshot requests
    // --- RocksDB memtables (FarReach notation) ---------------------------------
    int memtable_mb = 64;                  // write_buffer_size in MiB
    int flushnum = 1;                      // min_write_buffer_number_to_merge
    int maxnum = 2;                        // max_write_buffer_number (writes stall when this many are full)
    // --- durability ---------------------------------------------------------
    bool wal = true;                       // write-ahead log on/off (WriteOptions::disableWAL)
    bool sync = false;                     // fsync the WAL on every write (requires wal)
    uint64_t wal_bytes_per_sync = 0;       // incremental WAL writeback every N bytes; 0 = off
    // --- background work ----------------------------------------------------
    int flush_threads = 1;                 // HIGH-priority pool (flushes), shared by all instances
    int compaction_threads = 1;            // LOW-priority pool (compactions), shared by all instances
    int64_t bg_write_rate = 0;             // bytes/s of flush + compaction writes, one limiter for all
                                           // instances (a disk's bandwidth; rocksdb::NewGenericRateLimiter); 0 = unlimited
    // --- write stalls (0 = RocksDB's default) ---------------------------------
    int64_t delayed_write_rate = 0;        // bytes/s while writes are delayed (DBOptions; default: 16 MiB/s,
                                           // or bg_write_rate when that is set, as RocksDB infers it)
    int level0_file_num_compaction_trigger = 0;  // L0 files that start an L0 compaction (default 4)
    int level0_slowdown_writes_trigger = 0;      // L0 files that delay writes (default 20)
    int level0_stop_writes_trigger = 0;          // L0 files that stop writes (default 36)
    // --- preload: a loaded DB at start (a YCSB load, then a server restart) ---
    int64_t preload_records = 0;           // write records 0..N-1 into their instances, close, reopen; 0 = none
    int preload_value_bytes = 128;         // value size of the preloaded records (bytes)
    std::string preload_partition = "hash";  // how a record picks its instance: "hash" | "range" (as run_load)
    // --- semantics ----------------------------------------------------------
    bool transaction_db = false;           // TransactionDB (pessimistic) instead of a plain DB
    SeqCheck seq_check = SeqCheck::DiskGet;

    void validate() const;                 // throws OptionError
};

}  // namespace kv
