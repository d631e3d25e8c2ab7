// What RocksDB's write path did over a statistics window, per instance.
//
// A rocksdb::EventListener (include/rocksdb/listener.h) registered in
// Options::listeners of every Store records, with a steady clock:
//
//   OnStallConditionsChanged(WriteStallInfo)  time spent in, and entries into,
//       WriteStallCondition::kStopped and ::kDelayed. RocksDB calls it when
//       ColumnFamilyData::RecalculateWriteStallConditions (db/column_family.cc)
//       installs a super version whose condition differs from the previous
//       one, so each call is a transition; the list of transitions is kept
//       (seconds since window start, condition) for a timeline.
//   OnMemTableSealed(MemTableInfo)      a full memtable became immutable (a
//       memtable switch, DBImpl::SwitchMemtable).
//   OnFlushCompleted(DB*, FlushJobInfo)  a flush installed its L0 file; bytes
//       = that file's size on disk.
//   OnCompactionCompleted(DB*, CompactionJobInfo)  a compaction finished;
//       bytes = CompactionJobStats::total_output_bytes
//       (include/rocksdb/compaction_job_stats.h). A trivial move (the input
//       files moved to the output level unchanged: input and output file
//       numbers equal) is counted as a compaction and in trivial_moves.
//
// Dating a stall. RocksDB pushes the stall notification into the job's
// SuperVersionContext when the super version is installed and delivers it
// only when that context is cleaned (SuperVersionContext::Clean, db/
// job_context.h): for a memtable switch that is when the WriteContext of the
// write goes away (DBImpl::WriteImpl), i.e. after the write has waited out
// the very stop it caused; for a flush or compaction, after its job's file
// purge. So a notification is dated by the install that caused it, which the
// same thread announced just before: OnMemTableSealed (SwitchMemtable
// notifies right after installing), OnFlushCompleted, OnCompactionCompleted
// (each after its install). A notification on a thread with no such pending
// anchor is dated on arrival. At a snapshot the notifications are ordered by
// these dates and walked as a chain; `order_errors` counts notifications whose
// `prev` condition is not the chain's (0 when the dating is consistent).
//
// Callbacks run on RocksDB's threads (flush/compaction pool or the writing
// thread), snapshots on the caller's, so the state is under one mutex; the
// callbacks are rare (per memtable, per background job). The callbacks never
// call back into the DB (listener.h warns of deadlocks).
#pragma once
#include <rocksdb/listener.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <string>
#include <utility>
#include <vector>

namespace kv {

// Plain-data counts of one window (exported by Store::rocksdb_stats).
struct WritePathCounts {
    double window_s = 0;       // length of the window so far
    double stop_s = 0;         // time in kStopped (a stop still in force counts up to the snapshot)
    double slow_s = 0;         // time in kDelayed (likewise)
    uint64_t stops = 0;        // transitions into kStopped
    uint64_t slows = 0;        // transitions into kDelayed
    uint64_t memtables_sealed = 0;
    uint64_t flushes = 0;
    uint64_t flush_bytes = 0;
    uint64_t compactions = 0;       // including trivial moves
    uint64_t trivial_moves = 0;
    uint64_t compaction_bytes = 0;
    uint64_t order_errors = 0; // notifications whose prev condition is not the chain's
    std::string condition;     // condition at the snapshot: normal | delayed | stopped
    // (seconds since window start, condition entered); a window that starts
    // inside a stall opens with (0, that condition), not counted in stops/slows.
    std::vector<std::pair<double, std::string>> transitions;
};

std::string condition_name(rocksdb::WriteStallCondition c);

class WritePathListener : public rocksdb::EventListener {
public:
    WritePathListener();
    const char* Name() const override { return "kvperf.WritePathListener"; }
    void OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) override;
    void OnMemTableSealed(const rocksdb::MemTableInfo& info) override;
    void OnFlushCompleted(rocksdb::DB* db, const rocksdb::FlushJobInfo& info) override;
    void OnCompactionCompleted(rocksdb::DB* db, const rocksdb::CompactionJobInfo& info) override;

    WritePathCounts snapshot() const;
    void reset();  // start a new window now (the current condition carries over)

    static constexpr size_t kMaxTransitions = 100000;  // bound on the kept timeline

private:
    struct Event {
        uint64_t t_ns;  // dated as above (absolute steady clock)
        rocksdb::WriteStallCondition prev, cur;
    };
    struct Walk {  // the chain of events walked up to a time
        rocksdb::WriteStallCondition cond;
        uint64_t stop_ns = 0, slow_ns = 0, stops = 0, slows = 0, order_errors = 0;
        std::vector<std::pair<uint64_t, rocksdb::WriteStallCondition>> trans;  // ns since window start
    };
    Walk walk(uint64_t now) const;  // mu_ held
    void anchor();                  // this thread just installed a super version (mu_ held)

    mutable std::mutex mu_;
    uint64_t window_start_ns_;
    rocksdb::WriteStallCondition start_cond_ = rocksdb::WriteStallCondition::kNormal;  // at window start
    std::vector<Event> events_;     // this window's, in arrival order
    std::map<std::thread::id, uint64_t> anchors_;  // pending install time per thread
    WritePathCounts c_;             // the job counters
};

}  // namespace kv
