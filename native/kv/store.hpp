// One RocksDB instance (plain DB or TransactionDB) owned by one worker.
//
// The stored record is 4-byte little-endian seq + value bytes
// (docs/protocol.md), so a sequence check is one Get of the same key.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "options.hpp"

namespace rocksdb { class DB; class TransactionDB; class Statistics; class RateLimiter; struct WriteOptions; }

namespace kv {

class WritePathListener;

// The bg_write_rate limiter (null when 0), for the server to share.
std::shared_ptr<rocksdb::RateLimiter> make_bg_limiter(const ServerOptions& o);

// One instance's RocksDB statistics over the current window (plain data).
struct RocksSnapshot {
    std::map<std::string, double> values;                     // counters and properties by name
    std::vector<double> files_at_level;                       // rocksdb.num-files-at-level<N>, N = 0..levels-1
    std::vector<std::pair<double, std::string>> stall_transitions;  // (s since window start, condition)
};

class Store {
public:
    // `limiter`: the rate limiter of bg_write_rate shared by the server's
    // instances (made here when null and bg_write_rate is set).
    Store(const std::string& path, const ServerOptions& opts,
          std::shared_ptr<rocksdb::RateLimiter> limiter = nullptr);  // throws std::runtime_error
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
    // Returns 1 found, 0 not found, -1 error. `record` receives seq+value.
    int get(const uint8_t* key, std::string& record);
    bool put(const uint8_t* key, uint32_t seq, const uint8_t* value, uint16_t vlen);
    bool del(const uint8_t* key);
    // Conditional write for the seq check: applies only if seq is newer than
    // the stored one. Returns 1 applied, 0 stale (stored_seq set), -1 error.
    int put_if_newer(const uint8_t* key, uint32_t seq, const uint8_t* value, uint16_t vlen, uint32_t& stored_seq);
    int del_if_newer(const uint8_t* key, uint32_t seq, uint32_t& stored_seq);
    // RocksDB statistics tickers/histograms, write-path counters and
    // properties for this instance, over the window since open or reset_window().
    RocksSnapshot rocksdb_stats() const;
    void reset_window();  // zero the tickers, histograms and write-path counters
    // Preload: write records 0 .. records-1 whose key the load generator's
    // partitioning (hash or range over nparts) sends to `part`, as seq 0 +
    // value_bytes, in record order, in batches, without the WAL (close()
    // flushes them). Returns the records written; throws std::runtime_error.
    int64_t preload(int64_t records, int value_bytes, bool hash, uint32_t part, uint32_t nparts);
    void close();  // flush memtables and close; idempotent
private:
    rocksdb::DB* db_ = nullptr;                 // the DB (or the TransactionDB as a DB)
    rocksdb::TransactionDB* txn_db_ = nullptr;  // non-null when transaction_db
    std::shared_ptr<rocksdb::Statistics> stats_;
    std::unique_ptr<rocksdb::WriteOptions> wo_;
    std::shared_ptr<WritePathListener> listener_;
    std::map<std::string, double> cf_base_;  // RocksDB's stall counts at the window start
    std::map<std::string, double> cf_stall_counts() const;
};

}  // namespace kv
