// One RocksDB instance (plain DB or TransactionDB) owned by one worker.
//
// The stored record is 4-byte little-endian seq + value bytes
// (docs/protocol.md), so a sequence check is one Get of the same key.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "options.hpp"

namespace rocksdb { class DB; class TransactionDB; class Statistics; struct WriteOptions; }

namespace kv {

class Store {
public:
    Store(const std::string& path, const ServerOptions& opts);  // throws std::runtime_error
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
    // RocksDB statistics tickers/histograms/properties for this instance.
    std::map<std::string, double> rocksdb_stats() const;
    void close();  // flush memtables and close; idempotent
private:
    rocksdb::DB* db_ = nullptr;                 // the DB (or the TransactionDB as a DB)
    rocksdb::TransactionDB* txn_db_ = nullptr;  // non-null when transaction_db
    std::shared_ptr<rocksdb::Statistics> stats_;
    std::unique_ptr<rocksdb::WriteOptions> wo_;
};

}  // namespace kv
