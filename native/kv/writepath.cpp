// Write-path listener; see writepath.hpp.
#include "writepath.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace kv {

static uint64_t steady_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string condition_name(rocksdb::WriteStallCondition c) {
    switch (c) {
        case rocksdb::WriteStallCondition::kNormal: return "normal";
        case rocksdb::WriteStallCondition::kDelayed: return "delayed";
        case rocksdb::WriteStallCondition::kStopped: return "stopped";
    }
    return "?";
}

WritePathListener::WritePathListener() : window_start_ns_(steady_ns()) {}

void WritePathListener::anchor() { anchors_[std::this_thread::get_id()] = steady_ns(); }

// listener.h: "A callback function for RocksDB which will be called whenever
// a change of superversion triggers a change of the stall conditions."
void WritePathListener::OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) {
    uint64_t t = steady_ns();
    std::lock_guard<std::mutex> g(mu_);
    auto a = anchors_.find(std::this_thread::get_id());
    if (a != anchors_.end()) {  // dated by the install this thread announced (see writepath.hpp)
        t = a->second;
        anchors_.erase(a);
    }
    if (events_.size() < kMaxTransitions) events_.push_back({t, info.condition.prev, info.condition.cur});
}

// listener.h: called "before a memtable is made immutable" by SwitchMemtable.
void WritePathListener::OnMemTableSealed(const rocksdb::MemTableInfo&) {
    std::lock_guard<std::mutex> g(mu_);
    ++c_.memtables_sealed;
    anchor();
}

// listener.h: called "whenever a registered RocksDB flushes a file".
void WritePathListener::OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo& info) {
    std::error_code ec;
    uint64_t bytes = std::filesystem::file_size(info.file_path, ec);
    if (ec) {  // the file is gone already (compacted away): its table properties' sizes
        const auto& p = info.table_properties;
        bytes = p.data_size + p.index_size + p.filter_size;
    }
    std::lock_guard<std::mutex> g(mu_);
    ++c_.flushes;
    c_.flush_bytes += bytes;
    anchor();
}

// listener.h: called "right after a compaction is completed"; a failed or
// aborted compaction (non-OK status, e.g. shutting down) is not counted.
void WritePathListener::OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& info) {
    std::vector<uint64_t> in, out;
    for (auto& f : info.input_file_infos) in.push_back(f.file_number);
    for (auto& f : info.output_file_infos) out.push_back(f.file_number);
    std::sort(in.begin(), in.end());
    std::sort(out.begin(), out.end());
    const bool trivial = !in.empty() && in == out;
    std::lock_guard<std::mutex> g(mu_);
    anchor();
    if (!info.status.ok()) return;
    ++c_.compactions;
    if (trivial) ++c_.trivial_moves;
    c_.compaction_bytes += info.stats.total_output_bytes;
}

WritePathListener::Walk WritePathListener::walk(uint64_t now) const {
    std::vector<Event> ev = events_;
    std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.t_ns < b.t_ns; });
    Walk w;
    w.cond = start_cond_;
    if (w.cond != rocksdb::WriteStallCondition::kNormal) w.trans.emplace_back(0, w.cond);
    uint64_t since = window_start_ns_;
    auto close = [&](uint64_t t) {
        uint64_t d = t > since ? t - since : 0;
        if (w.cond == rocksdb::WriteStallCondition::kStopped) w.stop_ns += d;
        if (w.cond == rocksdb::WriteStallCondition::kDelayed) w.slow_ns += d;
        since = std::max(since, t);
    };
    for (auto& e : ev) {
        if (e.prev != w.cond) ++w.order_errors;
        if (e.t_ns <= window_start_ns_) {  // caused before the window: the state it starts in
            w.cond = e.cur;
            w.trans.clear();
            if (w.cond != rocksdb::WriteStallCondition::kNormal) w.trans.emplace_back(0, w.cond);
            continue;
        }
        close(e.t_ns);
        w.cond = e.cur;
        if (e.cur == rocksdb::WriteStallCondition::kStopped) ++w.stops;
        if (e.cur == rocksdb::WriteStallCondition::kDelayed) ++w.slows;
        w.trans.emplace_back(e.t_ns - window_start_ns_, e.cur);
    }
    close(now);  // the condition in force counts up to now
    return w;
}

WritePathCounts WritePathListener::snapshot() const {
    const uint64_t now = steady_ns();
    std::lock_guard<std::mutex> g(mu_);
    WritePathCounts out = c_;
    Walk w = walk(now);
    out.window_s = double(now - window_start_ns_) / 1e9;
    out.stop_s = double(w.stop_ns) / 1e9;
    out.slow_s = double(w.slow_ns) / 1e9;
    out.stops = w.stops;
    out.slows = w.slows;
    out.order_errors = w.order_errors;
    out.condition = condition_name(w.cond);
    out.transitions.reserve(w.trans.size());
    for (auto& t : w.trans) out.transitions.emplace_back(double(t.first) / 1e9, condition_name(t.second));
    return out;
}

void WritePathListener::reset() {
    const uint64_t now = steady_ns();
    std::lock_guard<std::mutex> g(mu_);
    start_cond_ = walk(now).cond;  // the condition in force carries over
    c_ = WritePathCounts();
    events_.clear();
    window_start_ns_ = now;
}

}  // namespace kv
