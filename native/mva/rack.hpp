// The analytic solver's solve of one rack, compiled: the timeout-delay search
// around the damped fixed point (model/solvers/analytic.py: _solve_states_numpy,
// _iterate and _step are the reference and hold the equations; model/rack/*
// hold each mechanism's mean-value form). Racks with collapsed workers too
// (the collapse chain's states: _collapsed).
// No Python headers here: bindings.cpp wraps it.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

namespace mva {

// Number of flush-cycle output fields (model/rack/lsm.py, FlushCycles), in
// this order: stop_us, stop_event_us, stops_per_write, slow_us, wal_us,
// wal_event_us, flush_busy, flush_disk_busy, compaction_busy, stop_fraction,
// memtables_per_flush, cycle_us.
constexpr std::size_t kCycFields = 12;

// The per-rack scalars of a batch, one row of kRackFields each, in this
// order (the bindings export the names: model/solvers/rack_step.py fills
// the rows by name).
#define MVA_RACK_FIELDS(X) X(floor_gap) X(idle) X(sharep) X(cv2) X(think) X(period) X(budget) \
    X(finite_to) X(farreach) X(N) X(K) X(loss) X(wal_base) X(wal_mbps) X(wal) X(entry) X(disk) \
    X(entries) X(entry_bytes) X(memtable_bytes) X(flush_fixed_us) X(flush_write_factor) X(wamp) \
    X(flushnum) X(maxnum) X(slowdown_bytes_per_us) X(compacts) X(workers) X(cores) X(ctx_penalty)
#define MVA_RACK_ENUM(name) RK_##name,
enum RackField { MVA_RACK_FIELDS(MVA_RACK_ENUM) kRackFields };
#undef MVA_RACK_ENUM

// One rack's constants (_Batch's row). Worker arrays hold m entries (padding
// workers have share 0); machine indices are 0 .. machines - 1.
struct RackConst {
    std::size_t m = 0, machines = 0;
    const double* s = nullptr;          // shares
    const double* wf = nullptr;         // write fraction
    const double* ev = nullptr;         // write-backs per us
    const double* cost = nullptr;       // run-average process time, us
    const double* run_memtables = nullptr;
    const long* mach = nullptr;         // machine of each worker
    double floor_gap = 0, idle = 0, sharep = 0, cv2 = 0, think = 0, period = 0, budget = 0;
    bool finite_to = false, farreach = false;
    long N = 0;
    double K = 0, loss = 0;
    // LSM (one spec per rack)
    double entries = 0, entry_bytes = 0, memtable_bytes = 0, flush_fixed_us = 0,
           flush_write_factor = 0, wamp = 0, flushnum = 0, maxnum = 0, slowdown_bytes_per_us = 0;
    bool wal = false, compacts = false;
    double wal_base = 0, wal_mbps = 0, disk = 0;
    double entry = 0;                   // bytes per memtable entry (machine write rate)
    long cores = 0;                     // per machine (0: enough for every thread)
    double ctx_penalty = 0;
    // worker classes (lump.cpp): worker i stands for mult[i] workers of the
    // rack whose largest share is s_cap[i]; nullptr: each worker is itself
    const double* mult = nullptr;
    const double* s_cap = nullptr;
    // the workers on the collapsed branch (_State.collapsed), in the chain's
    // order; none: n_collapsed = 0
    const long* collapsed = nullptr;
    std::size_t n_collapsed = 0;
    double weight(std::size_t i) const { return mult ? mult[i] : 1.0; }
    double share_cap(std::size_t i) const { return s_cap ? s_cap[i] : s[i]; }
};

// One rack's state with the last step's output quantities (_State's row,
// with _take's copy of the outputs). Worker vectors hold m entries, bg one per
// machine, x_hist N, cyc kCycFields x m (field f at f * m + i).
struct Snap {
    double X = 0, implied = 0, delay = 0;
    std::vector<double> util, p, dup, writes, bg, fdb, cb, stop;   // fdb, cb, stop: lsm_prev
    std::vector<double> q;            // the last step's queues, and the next call's q_prev
    std::vector<double> S_req, stretch, wait_extra, demand, block, x_hist, cyc;
    // Schweitzer's populations and their throughput, from which the history
    // x_hist is filled (a step fills only its top); empty on the exact path
    std::vector<double> hist_xp, hist_fp;
    long iterations = 0;
    bool converged = false;

    void size(std::size_t m, std::size_t machines, long N);
    // the per-worker vectors, in the order of the bindings' state keys
    // (util, p_drop, dup, writes, fdb, cb, stop, q, S_req, stretch,
    // wait_extra, demand, block)
    std::array<std::vector<double>*, 13> workers() {
        return {&util, &p, &dup, &writes, &fdb, &cb, &stop, &q, &S_req, &stretch, &wait_extra,
                &demand, &block};
    }
    // w this + (1 - w) z, field by field (_blend)
    void blend(double w, const Snap& z);
};

// Tuning of the damped iteration and the delay search (the reference's constants).
struct IterParams {
    double tol = 1e-5, damp_max = 0.8, late_eps = 1e-10, tail_cut = -69.0;
    int min_steps = 4, max_iter = 400, late_timers = 32;
    // the Schweitzer approximation past n_exact clients and work_exact
    // client-stations (mva_core.N_EXACT, WORK_EXACT), its Newton steps at most
    double n_exact = 16384, work_exact = 4e6;
    int root_steps = 100;
    // _solve_states
    double root_tol = 1e-4, mix_tol = 1e-3;
    int step_budget = 1600, unsettled_rounds = 2, rounds = 40;
    // worker classes (lump.cpp): racks of at least lump_min workers on the
    // Schweitzer path are solved with workers whose constants agree within
    // lump_tol (relative) merged; lump_tol = 0 turns it off
    double lump_tol = 0.0;
    long lump_min = 1024;
};

// A rack's constants from its row of per-rack scalars (kRackFields) and its
// worker arrays: its own workers (the row's ``workers``) of at least that
// many entries (a batch pads them to its widest rack).
RackConst rack_const(const double* row, std::size_t machines, const double* s,
                     const double* wf, const double* ev, const double* cost,
                     const double* run_memtables, const long* mach);

// The damped fixed point at timeout delay D until it settles or ip.max_iter
// steps (_iterate): the state moves on from where it is; on return X and
// util are the map's last output, the outputs those of the last step,
// iterations the steps taken, delay = D.
void iterate_rack(const RackConst& c, Snap& st, double D, const IterParams& ip);

// The fixed point with its timeout delay D solved as the root of
// g(D) = implied(D) - D (_solve_states): cold from D = 0 when D0 is NaN, else
// warm from a neighbour's root D0. iterations: the steps of every round.
void solve_rack(const RackConst& c, Snap& st, double D0, const IterParams& ip);

// Whether the rack's closed network is solved by Schweitzer (past ip.n_exact
// clients and ip.work_exact client-stations), not the exact recursion.
bool schweitzer_path(const RackConst& c, const IterParams& ip);

// solve_rack on the rack's worker classes where ip admits it (lump.cpp), the
// state gathered to the classes and scattered back to the workers; else
// solve_rack itself.
void solve_rack_classes(const RackConst& c, Snap& st, double D0, const IterParams& ip);

}  // namespace mva
