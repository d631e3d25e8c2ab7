// RocksDB-backed store; see store.hpp.
#include "store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>

#include <cstring>
#include <stdexcept>

namespace kv {

static rocksdb::Slice key_slice(const uint8_t* key) { return rocksdb::Slice(reinterpret_cast<const char*>(key), 16); }

static std::string make_record(uint32_t seq, const uint8_t* value, uint16_t vlen) {
    std::string r(4 + size_t(vlen), '\0');
    for (int i = 0; i < 4; ++i) r[size_t(i)] = char(uint8_t(seq >> (8 * i)));
    if (vlen) std::memcpy(&r[4], value, vlen);
    return r;
}

static uint32_t record_seq(const std::string& r) {
    if (r.size() < 4) return 0;
    const auto* p = reinterpret_cast<const uint8_t*>(r.data());
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

Store::Store(const std::string& path, const ServerOptions& o) {
    rocksdb::Options opts;
    opts.create_if_missing = true;
    opts.write_buffer_size = size_t(o.memtable_mb) << 20;
    opts.min_write_buffer_number_to_merge = o.flushnum;
    opts.max_write_buffer_number = o.maxnum;
    opts.wal_bytes_per_sync = o.wal_bytes_per_sync;
    // The thread pools of Env::Default are process-wide, shared by all
    // instances, as in FarReach's server; the per-DB limits follow them.
    opts.env->SetBackgroundThreads(o.flush_threads, rocksdb::Env::Priority::HIGH);
    opts.env->SetBackgroundThreads(o.compaction_threads, rocksdb::Env::Priority::LOW);
    opts.max_background_flushes = o.flush_threads;
    opts.max_background_compactions = o.compaction_threads;
    stats_ = rocksdb::CreateDBStatistics();
    opts.statistics = stats_;
    wo_ = std::make_unique<rocksdb::WriteOptions>();
    wo_->sync = o.sync;
    wo_->disableWAL = !o.wal;
    rocksdb::Status s;
    if (o.transaction_db) {
        rocksdb::TransactionDBOptions topts;
        s = rocksdb::TransactionDB::Open(opts, topts, path, &txn_db_);
        db_ = txn_db_;
    } else {
        s = rocksdb::DB::Open(opts, path, &db_);
    }
    if (!s.ok()) throw std::runtime_error("datadir: cannot open RocksDB at '" + path + "': " + s.ToString());
}

Store::~Store() { close(); }

void Store::close() {
    if (!db_) return;
    // Flush so a restart without WAL still sees every acknowledged write.
    db_->Flush(rocksdb::FlushOptions());
    db_->Close();
    delete db_;  // deletes the TransactionDB too (same object)
    db_ = nullptr;
    txn_db_ = nullptr;
}

int Store::get(const uint8_t* key, std::string& record) {
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key_slice(key), &record);
    if (s.ok()) return 1;
    return s.IsNotFound() ? 0 : -1;
}

bool Store::put(const uint8_t* key, uint32_t seq, const uint8_t* value, uint16_t vlen) {
    return db_->Put(*wo_, key_slice(key), make_record(seq, value, vlen)).ok();
}

bool Store::del(const uint8_t* key) { return db_->Delete(*wo_, key_slice(key)).ok(); }

// Shared body of the conditional writes. With a TransactionDB the read and
// the write happen in one transaction (GetForUpdate locks the key); a plain
// DB needs no lock because only this worker's thread touches the instance.
template <class Apply>
static int if_newer(rocksdb::DB* db, rocksdb::TransactionDB* tdb, const rocksdb::WriteOptions& wo,
                    const uint8_t* key, uint32_t seq, uint32_t& stored_seq, Apply apply) {
    std::string rec;
    if (tdb) {
        std::unique_ptr<rocksdb::Transaction> txn(tdb->BeginTransaction(wo));
        rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key_slice(key), &rec);
        if (!s.ok() && !s.IsNotFound()) return -1;
        if (s.ok() && seq <= record_seq(rec)) { stored_seq = record_seq(rec); return 0; }
        if (!apply(txn.get()).ok()) return -1;
        return txn->Commit().ok() ? 1 : -1;
    }
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key_slice(key), &rec);
    if (!s.ok() && !s.IsNotFound()) return -1;
    if (s.ok() && seq <= record_seq(rec)) { stored_seq = record_seq(rec); return 0; }
    return apply(static_cast<rocksdb::Transaction*>(nullptr)).ok() ? 1 : -1;
}

int Store::put_if_newer(const uint8_t* key, uint32_t seq, const uint8_t* value, uint16_t vlen, uint32_t& stored_seq) {
    std::string rec = make_record(seq, value, vlen);
    return if_newer(db_, txn_db_, *wo_, key, seq, stored_seq, [&](rocksdb::Transaction* t) {
        return t ? t->Put(key_slice(key), rec) : db_->Put(*wo_, key_slice(key), rec);
    });
}

int Store::del_if_newer(const uint8_t* key, uint32_t seq, uint32_t& stored_seq) {
    return if_newer(db_, txn_db_, *wo_, key, seq, stored_seq, [&](rocksdb::Transaction* t) {
        return t ? t->Delete(key_slice(key)) : db_->Delete(*wo_, key_slice(key));
    });
}

std::map<std::string, double> Store::rocksdb_stats() const {
    std::map<std::string, double> m;
    if (!db_) return m;
    auto t = [&](const char* name, rocksdb::Tickers tk) { m[name] = double(stats_->getTickerCount(tk)); };
    t("stall_micros", rocksdb::STALL_MICROS);
    t("wal_bytes", rocksdb::WAL_FILE_BYTES);
    t("wal_syncs", rocksdb::WAL_FILE_SYNCED);
    t("flush_write_bytes", rocksdb::FLUSH_WRITE_BYTES);
    t("compact_write_bytes", rocksdb::COMPACT_WRITE_BYTES);
    t("keys_written", rocksdb::NUMBER_KEYS_WRITTEN);
    t("bytes_written", rocksdb::BYTES_WRITTEN);
    t("memtable_hits", rocksdb::MEMTABLE_HIT);
    t("memtable_misses", rocksdb::MEMTABLE_MISS);
    t("block_cache_hits", rocksdb::BLOCK_CACHE_HIT);
    t("block_cache_misses", rocksdb::BLOCK_CACHE_MISS);
    rocksdb::HistogramData h;
    stats_->histogramData(rocksdb::FLUSH_TIME, &h);
    m["flushes"] = double(h.count);
    m["flush_time_us_sum"] = double(h.sum);
    stats_->histogramData(rocksdb::COMPACTION_TIME, &h);
    m["compactions"] = double(h.count);
    m["compaction_time_us_sum"] = double(h.sum);
    stats_->histogramData(rocksdb::WAL_FILE_SYNC_MICROS, &h);
    m["wal_sync_us_sum"] = double(h.sum);
    auto p = [&](const char* name, const std::string& prop) {
        uint64_t v = 0;
        if (db_->GetIntProperty(prop, &v)) m[name] = double(v);
    };
    p("immutable_memtables", rocksdb::DB::Properties::kNumImmutableMemTable);
    p("running_flushes", rocksdb::DB::Properties::kNumRunningFlushes);
    p("running_compactions", rocksdb::DB::Properties::kNumRunningCompactions);
    p("memtable_bytes", rocksdb::DB::Properties::kCurSizeAllMemTables);
    p("sst_bytes", rocksdb::DB::Properties::kTotalSstFilesSize);
    p("estimated_keys", rocksdb::DB::Properties::kEstimateNumKeys);
    p("write_stopped", rocksdb::DB::Properties::kIsWriteStopped);
    p("delayed_write_rate", rocksdb::DB::Properties::kActualDelayedWriteRate);
    return m;
}

}  // namespace kv
