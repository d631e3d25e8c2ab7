// Worker classes: the near-identical workers of a very wide rack solved once.
//
// Why: a step costs time linear in the workers (flush cycle, queue tail, block
// overflow and the Schweitzer roots of each), and a rack of 4,096 workers takes
// about 40 steps. Its workers differ only by their hash partition's share and
// what follows from it (storage cost, memtables per run), within a few percent
// of each other. Workers on one machine whose constants agree within
// ip.lump_tol (relative) form a class; the class is solved as one worker that
// counts mult times in every sum over the rack (machine load, background jobs,
// the closed network's queues, the timeout delay), with the mean of its
// workers' constants, so the shares still add up to the rack's.
//
// It is an approximation of the solution, not of a mechanism: each worker of
// a class gets its class's state, its utilisation scaled by its own share.
// The capacity bound uses the class's largest share, so no worker is pushed
// past its capacity. Only racks on the Schweitzer path are grouped (the exact
// recursion has no multiplicities), and only from ip.lump_min workers.
// tests/model/test_worker_classes.py measures the error against the solve of
// every worker, and benchmarks/bench_large.py its speed.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

#include "rack.hpp"

namespace mva {

namespace {

struct Classes {
    std::vector<std::size_t> of;                       // worker -> class
    std::vector<double> mult, s, wf, ev, cost, runm, s_cap;
    std::vector<long> mach;
};

// the band of workers near the busiest that stay alone: kBand / K below it
constexpr double kBand = 8.0;

// a and b agree within tol (relative); zero agrees only with zero
bool agree(double a, double b, double tol) {
    if (a == b) return true;
    if (!(a > 0.0 && b > 0.0)) return false;
    return std::abs(a / b - 1.0) <= tol;
}

// Greedy over the workers sorted by machine, share and cost: a worker joins
// the open class when every constant agrees with the class's first worker.
// Workers near the busiest (demand, share x cost, within kBand / K of the top)
// join only workers exactly like them. The loss comes from the queue tail at
// the buffer's K packets, which goes as demand^K: there a share 0.5 % off would
// move a worker's loss by a factor of about 1.005^K (4 at K = 279). At the
// band's edge a worker's tail is (1 - kBand / K)^K ~ e^-8 = 3e-4 of the top's.
void classes_of(const RackConst& c, double tol, Classes& k) {
    const std::size_t m = c.m;
    double top = 0.0;
    for (std::size_t i = 0; i < m; ++i) top = std::max(top, c.s[i] * c.cost[i]);
    const double band = top * (1.0 - std::min(0.5, kBand / std::max(c.K, 1.0)));
    thread_local std::vector<std::size_t> order;
    order.resize(m);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (c.mach[a] != c.mach[b]) return c.mach[a] < c.mach[b];
        if (c.s[a] != c.s[b]) return c.s[a] < c.s[b];
        return c.cost[a] < c.cost[b];
    });
    k.of.assign(m, 0);
    for (auto* v : {&k.mult, &k.s, &k.wf, &k.ev, &k.cost, &k.runm, &k.s_cap}) v->clear();
    k.mach.clear();
    std::size_t head = 0;
    bool open = false;
    for (const std::size_t i : order) {
        // in the band a worker joins only workers exactly like it
        const double t = c.s[i] * c.cost[i] >= band ? 0.0 : tol;
        const bool join = open && c.mach[i] == c.mach[head] && agree(c.s[i], c.s[head], t) &&
                          agree(c.cost[i], c.cost[head], t) && agree(c.wf[i], c.wf[head], t) &&
                          agree(c.ev[i], c.ev[head], t) &&
                          agree(c.run_memtables[i], c.run_memtables[head], t);
        if (!join) {
            head = i;
            open = true;
            for (auto* v : {&k.mult, &k.s, &k.wf, &k.ev, &k.cost, &k.runm, &k.s_cap}) v->push_back(0.0);
            k.mach.push_back(c.mach[i]);
        }
        const std::size_t g = k.mult.size() - 1;
        k.of[i] = g;
        k.mult[g] += 1.0;
        k.s[g] += c.s[i];
        k.wf[g] += c.wf[i];
        k.ev[g] += c.ev[i];
        k.cost[g] += c.cost[i];
        k.runm[g] += c.run_memtables[i];
        k.s_cap[g] = std::max(k.s_cap[g], c.s[i]);
    }
    for (std::size_t g = 0; g < k.mult.size(); ++g)
        for (auto* v : {&k.s, &k.wf, &k.ev, &k.cost, &k.runm}) (*v)[g] /= k.mult[g];
}

}  // namespace

void solve_rack_classes(const RackConst& c, Snap& st, double D0, const IterParams& ip) {
    // a collapse chain's state is solved on every worker: its collapsed
    // workers' drop fraction is a root over the whole rack (_collapsed)
    if (!(ip.lump_tol > 0.0) || static_cast<long>(c.m) < ip.lump_min || c.mult ||
        c.n_collapsed || !schweitzer_path(c, ip)) {
        solve_rack(c, st, D0, ip);
        return;
    }
    thread_local Classes k;
    classes_of(c, ip.lump_tol, k);
    const std::size_t m = c.m, G = k.mult.size();
    if (2 * G > m) {                                    // too few alike to pay
        solve_rack(c, st, D0, ip);
        return;
    }
    RackConst cg = c;
    cg.m = G;
    cg.s = k.s.data();
    cg.wf = k.wf.data();
    cg.ev = k.ev.data();
    cg.cost = k.cost.data();
    cg.run_memtables = k.runm.data();
    cg.mach = k.mach.data();
    cg.mult = k.mult.data();
    cg.s_cap = k.s_cap.data();
    // gather: a class starts from the mean state of its workers
    thread_local Snap sg;                              // its memory kept between racks
    sg.size(G, c.machines, c.N);
    const auto from = st.workers(), to = sg.workers();
    for (auto* v : to) std::fill(v->begin(), v->end(), 0.0);
    for (std::size_t i = 0; i < m; ++i) {
        const std::size_t g = k.of[i];
        const double share = 1.0 / k.mult[g];
        for (std::size_t f = 0; f < from.size(); ++f) (*to[f])[g] += (*from[f])[i] * share;
        for (std::size_t f = 0; f < kCycFields; ++f) sg.cyc[f * G + g] += st.cyc[f * m + i] * share;
    }
    sg.X = st.X;
    sg.implied = st.implied;
    sg.delay = st.delay;
    sg.bg = st.bg;
    solve_rack(cg, sg, D0, ip);
    // scatter: each worker its class's state; its utilisation and demand
    // (X s A, linear in the share) scaled by its own share
    for (std::size_t i = 0; i < m; ++i) {
        const std::size_t g = k.of[i];
        for (std::size_t f = 0; f < from.size(); ++f) (*from[f])[i] = (*to[f])[g];
        const double r = cg.s[g] > 0.0 ? c.s[i] / cg.s[g] : 1.0;
        st.util[i] = sg.util[g] < 1.0 ? std::min(sg.util[g] * r, 1.0) : sg.util[g];
        st.demand[i] = sg.demand[g] * r;
        for (std::size_t f = 0; f < kCycFields; ++f) st.cyc[f * m + i] = sg.cyc[f * G + g];
    }
    st.X = sg.X;
    st.implied = sg.implied;
    st.delay = sg.delay;
    st.bg = sg.bg;
    std::copy(sg.x_hist.begin(), sg.x_hist.end(), st.x_hist.begin());
    st.iterations = sg.iterations;
    st.converged = sg.converged;
}

}  // namespace mva
