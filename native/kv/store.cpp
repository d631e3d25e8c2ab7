// RocksDB-backed store; see store.hpp.
#include "store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/rate_limiter.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/write_batch.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "protocol.hpp"
#include "writepath.hpp"
#include "ycsb.hpp"

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

std::shared_ptr<rocksdb::RateLimiter> make_bg_limiter(const ServerOptions& o) {
    if (!o.bg_write_rate) return nullptr;
    // Flushes (IO_HIGH) before compactions (IO_LOW); 10 ms refills so a short
    // flush is not held back by a long refill period.
    return std::shared_ptr<rocksdb::RateLimiter>(rocksdb::NewGenericRateLimiter(o.bg_write_rate, 10 * 1000));
}

Store::Store(const std::string& path, const ServerOptions& o, std::shared_ptr<rocksdb::RateLimiter> limiter) {
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
    // 0 keeps RocksDB's defaults (options.h / advanced_options.h): delayed
    // write rate 16 MiB/s (no rate limiter), L0 triggers 4 / 20 / 36.
    if (o.delayed_write_rate) opts.delayed_write_rate = uint64_t(o.delayed_write_rate);
    if (o.level0_file_num_compaction_trigger) opts.level0_file_num_compaction_trigger = o.level0_file_num_compaction_trigger;
    if (o.level0_slowdown_writes_trigger) opts.level0_slowdown_writes_trigger = o.level0_slowdown_writes_trigger;
    if (o.level0_stop_writes_trigger) opts.level0_stop_writes_trigger = o.level0_stop_writes_trigger;
    opts.rate_limiter = limiter ? limiter : make_bg_limiter(o);
    listener_ = std::make_shared<WritePathListener>();
    opts.listeners.push_back(listener_);
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
    cf_base_ = cf_stall_counts();
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

int64_t Store::preload(int64_t records, int value_bytes, bool hash, uint32_t part, uint32_t nparts) {
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;  // close() flushes the memtables: the loaded state is the same
    const ValuePool values(size_t(value_bytes), 0x70726c64ULL + part);
    Rng rng(0x9e3779b9ULL * (part + 1));
    rocksdb::WriteBatch batch;
    int64_t written = 0;
    uint8_t key[16];
    auto commit = [&] {
        rocksdb::Status s = db_->Write(wo, &batch);
        if (!s.ok()) throw std::runtime_error("preload_records: write failed: " + s.ToString());
        batch.Clear();
    };
    for (int64_t i = 0; i < records; ++i) {
        record_key(i, key);
        uint32_t p = nparts == 1 ? 0 : (hash ? hash_partition(key, nparts) : range_partition(key, nparts));
        if (p != part) continue;
        batch.Put(key_slice(key), make_record(0, values.next(rng), uint16_t(value_bytes)));
        if (++written % 256 == 0) commit();
    }
    if (batch.Count()) commit();
    return written;
}

// RocksDB's own per-column-family stall counts, "io_stalls.*" of the
// rocksdb.cfstats map property (include/rocksdb/db.h Properties::kCFStats;
// db/internal_stats.cc DumpCFMapStatsIOStalls). They count the
// RecalculateWriteStallConditions calls that found a stall (so at least the
// transitions into it), since open.
std::map<std::string, double> Store::cf_stall_counts() const {
    std::map<std::string, double> out;
    std::map<std::string, std::string> cf;
    if (!db_ || !db_->GetMapProperty(rocksdb::DB::Properties::kCFStats, &cf)) return out;
    for (auto& kv : cf)
        if (kv.first.rfind("io_stalls.", 0) == 0) out[kv.first] = std::strtod(kv.second.c_str(), nullptr);
    return out;
}

void Store::reset_window() {
    if (!db_) return;
    stats_->Reset();
    listener_->reset();
    cf_base_ = cf_stall_counts();
}

RocksSnapshot Store::rocksdb_stats() const {
    RocksSnapshot snap;
    auto& m = snap.values;
    if (!db_) return snap;
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
    // The listener's counts (writepath.hpp; include/rocksdb/listener.h).
    WritePathCounts w = listener_->snapshot();
    m["window_s"] = w.window_s;
    m["stop_s"] = w.stop_s;
    m["slow_s"] = w.slow_s;
    m["stops"] = double(w.stops);
    m["slows"] = double(w.slows);
    m["memtables_sealed"] = double(w.memtables_sealed);
    m["flushes_completed"] = double(w.flushes);
    m["flush_bytes"] = double(w.flush_bytes);
    m["compactions_completed"] = double(w.compactions);
    m["trivial_moves"] = double(w.trivial_moves);
    m["compaction_bytes"] = double(w.compaction_bytes);
    m["stall_order_errors"] = double(w.order_errors);
    m["stopped_now"] = w.condition == "stopped";
    m["delayed_now"] = w.condition == "delayed";
    snap.stall_transitions = std::move(w.transitions);
    for (auto& kv : cf_stall_counts()) {
        auto base = cf_base_.find(kv.first);
        m[kv.first] = kv.second - (base == cf_base_.end() ? 0.0 : base->second);
    }
    // DB properties at the snapshot (include/rocksdb/db.h, DB::Properties).
    auto p = [&](const char* name, const std::string& prop) {
        uint64_t v = 0;
        if (db_->GetIntProperty(prop, &v)) m[name] = double(v);
    };
    p("immutable_memtables", rocksdb::DB::Properties::kNumImmutableMemTable);              // rocksdb.num-immutable-mem-table
    p("immutable_memtables_flushed", rocksdb::DB::Properties::kNumImmutableMemTableFlushed);  // ...-flushed
    p("running_flushes", rocksdb::DB::Properties::kNumRunningFlushes);
    p("running_compactions", rocksdb::DB::Properties::kNumRunningCompactions);
    p("memtable_bytes", rocksdb::DB::Properties::kCurSizeAllMemTables);
    p("sst_bytes", rocksdb::DB::Properties::kTotalSstFilesSize);
    p("estimated_keys", rocksdb::DB::Properties::kEstimateNumKeys);
    p("write_stopped", rocksdb::DB::Properties::kIsWriteStopped);                          // rocksdb.is-write-stopped
    p("delayed_write_rate", rocksdb::DB::Properties::kActualDelayedWriteRate);             // rocksdb.actual-delayed-write-rate
    p("pending_compaction_bytes", rocksdb::DB::Properties::kEstimatePendingCompactionBytes);  // rocksdb.estimate-pending-compaction-bytes
    for (int level = 0; level < db_->NumberLevels(); ++level) {
        std::string v;  // rocksdb.num-files-at-level<N> (DB::Properties::kNumFilesAtLevelPrefix)
        db_->GetProperty(rocksdb::DB::Properties::kNumFilesAtLevelPrefix + std::to_string(level), &v);
        snap.files_at_level.push_back(std::strtod(v.c_str(), nullptr));
    }
    m["l0_files"] = snap.files_at_level.empty() ? 0.0 : snap.files_at_level[0];
    return snap;
}

}  // namespace kv
