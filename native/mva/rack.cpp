// The analytic solver's solve of one rack, compiled. The reference is
// model/solvers/analytic.py (_solve_states_numpy, _iterate, _step and the tail
// helpers) with the mechanisms of model/rack/*: this file follows them line
// for line, in the same order of operations, and names the Python function
// each piece mirrors. tests/model/test_rack_step.py holds the two together.
//
// Why compiled: a step is ~60 small numpy calls on arrays of a few dozen
// workers, 0.2-0.3 ms of interpreter and dispatch overhead for ~10 us of
// arithmetic; a rack takes 8-100 steps.
#include "rack.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "mva.hpp"
#include "special.hpp"

namespace mva {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMiB = 1024.0 * 1024.0;

double clip01(double x) { return std::min(std::max(x, 0.0), 1.0); }

// ---------------------------------------------------------------- LSM (model/rack/lsm.py)
// _level_time: fluid time for the immutable count to rise from lo to hi
double level_time(double lo, double hi, double tau, double tau_slow, double slow_from) {
    if (hi <= lo) return 0.0;
    const double a = std::max(0.0, std::min(hi, slow_from) - lo);
    const double b = std::max(0.0, hi - std::max(lo, slow_from));
    return a * tau + b * tau_slow;
}

// _rise: immutable count after dur from start, and the time stopped at cap
void rise(double start, double dur, double tau, double tau_slow, double slow_from, double cap,
          double& level, double& stopped) {
    const double t_cap = level_time(start, cap, tau, tau_slow, slow_from);
    if (dur >= t_cap) {
        level = cap;
        stopped = dur - t_cap;
        return;
    }
    const double t_norm = level_time(start, std::max(start, slow_from), tau, tau_slow, slow_from);
    stopped = 0.0;
    if (dur <= t_norm) {
        level = start + dur / tau;
        return;
    }
    level = std::max(start, slow_from) + (dur - t_norm) / tau_slow;
}

enum Cyc { STOP_US, STOP_EV, SPW, SLOW_US, WAL_US, WAL_EV, FLUSH_BUSY, FLUSH_DISK, COMP_BUSY,
           STOP_FRAC, MEM_PER_FLUSH, CYCLE_US };

// flush_cycle: the cycle map iterated to its periodic regime (the slow path)
void flush_cycle(const RackConst& c, double w, double share, double wal_event, double run,
                 double* out) {
    const double E = c.entries;
    const double rate = w / std::max(run, 1e-6);
    const double tau = E / rate;
    const double pace = E * c.entry_bytes / c.slowdown_bytes_per_us;
    const bool slowdown = c.maxnum > 3;
    const double tau_slow = slowdown ? std::max(tau, pace) : tau;
    const double slow_from = slowdown ? std::max(c.maxnum - 1.0, c.flushnum + 1.0) : kInf;
    const double cap = c.maxnum, fn = c.flushnum;
    struct Stat { double j, F, wait, stopped, slow_t; };
    Stat stats[60];
    int n = 0;
    double j = fn;
    for (int it = 0; it < 60; ++it) {
        const double F = c.flush_fixed_us + j * c.memtable_bytes * c.flush_write_factor / share;
        double imm_end, stopped;
        rise(j, F, tau, tau_slow, slow_from, cap, imm_end, stopped);
        const double left = imm_end - j;
        double wait, j_next;
        if (left >= fn) {
            wait = 0.0;
            j_next = left;
        } else {
            wait = level_time(left, fn, tau, tau_slow, slow_from);
            j_next = fn;
        }
        double slow_t = 0.0;
        if (slowdown && tau_slow > tau) {
            const double hi = std::min(imm_end, cap);
            slow_t = std::max(0.0, hi - std::max(j, slow_from)) * tau_slow;
        }
        stats[n++] = {j, F, wait, stopped, slow_t};
        if (std::abs(j_next - j) < 1e-9) break;
        j = j_next;
    }
    const int first = n < 60 ? n - 1 : n - 8;
    double mem = 0, total = 0, stop = 0, slow_t = 0, busy = 0, disk = 0;
    for (int k = first; k < n; ++k) {
        mem += stats[k].j;
        total += stats[k].F + stats[k].wait;
        stop += stats[k].stopped;
        slow_t += stats[k].slow_t;
        busy += stats[k].F;
        disk += stats[k].F - c.flush_fixed_us;
    }
    const double writes = mem * E;
    const double n_cyc = n - first;
    double comp = 0.0;
    if (c.compacts)
        comp = std::min(1.0, mem * c.memtable_bytes * (c.wamp - 1.0) / share / total);
    const double slow_per_write = tau_slow > tau ? slow_t * (1.0 - tau / tau_slow) / writes : 0.0;
    out[STOP_US] = stop / writes;
    out[STOP_EV] = stop / n_cyc;
    out[SPW] = stop > 0 ? n_cyc / writes : 0.0;
    out[SLOW_US] = slow_per_write;
    out[WAL_US] = c.wal ? wal_event / E : 0.0;
    out[WAL_EV] = c.wal ? wal_event : 0.0;
    out[FLUSH_BUSY] = std::min(1.0, busy / total);
    out[FLUSH_DISK] = std::min(1.0, disk / total);
    out[COMP_BUSY] = comp;
    out[STOP_FRAC] = stop / total;
    out[MEM_PER_FLUSH] = mem / n_cyc;
    out[CYCLE_US] = total / n_cyc;
}

// flush_cycles for one instance: the calm regime in closed form, else the
// cycle map; then the stalls a finite run can reach (memtables_per_run)
void flush_cycles(const RackConst& c, double w, double share, double wal_in, double run,
                  double n_run, double* out) {
    const double fn = c.flushnum;
    const bool live = w > 0;
    const double wal = c.wal ? wal_in : 0.0;
    const double tau = live ? c.entries * std::max(run, 1e-6) / w : kInf;
    const double F = c.flush_fixed_us + fn * c.memtable_bytes * c.flush_write_factor / share;
    const double rs = F / tau;
    const double cycle = fn * tau;
    const double slow_from = c.maxnum > 3 ? std::max(c.maxnum - 1.0, fn + 1.0) : kInf;
    const bool calm = live && rs < fn && fn + rs < std::min(c.maxnum, slow_from);
    out[STOP_US] = out[STOP_EV] = out[SPW] = out[SLOW_US] = out[STOP_FRAC] = 0.0;
    out[WAL_US] = live ? wal / c.entries : 0.0;
    out[WAL_EV] = wal;
    out[FLUSH_BUSY] = calm ? F / cycle : 0.0;
    out[FLUSH_DISK] = calm ? (F - c.flush_fixed_us) / cycle : 0.0;
    out[COMP_BUSY] = calm && c.compacts
                         ? std::min(1.0, fn * c.memtable_bytes * (c.wamp - 1.0) / share / cycle)
                         : 0.0;
    out[MEM_PER_FLUSH] = live ? fn : 0.0;
    out[CYCLE_US] = live ? cycle : kInf;
    if (live && !calm) flush_cycle(c, w, share, wal, run, out);
    const double stop_reach = n_run > 0 ? clip01(1.0 - c.maxnum / n_run) : 0.0;
    const double slow_reach = n_run > 0 ? clip01(1.0 - slow_from / n_run) : 0.0;
    out[STOP_US] *= stop_reach;
    out[SPW] *= stop_reach;
    out[STOP_FRAC] *= stop_reach;
    out[SLOW_US] *= slow_reach;
}

// lsm.pool_stalls: workers whose write rates agree within kStallPoolTol
// (relative to the first of their group, sorted by rate) share the mean of
// their stall figures, each class counted by its workers. At the flush-capacity
// limit each worker's cycle map is neutral, and how the stops divide among
// equally loaded workers drifted instead of settling.
constexpr double kStallPoolTol = 0.02;

void pool_stalls(const RackConst& c, const std::vector<double>& writes, std::vector<double>& cyc) {
    const std::size_t m = c.m;
    bool any = false;
    for (std::size_t i = 0; i < m && !any; ++i)
        any = cyc[STOP_FRAC * m + i] > 0.0 || cyc[SLOW_US * m + i] > 0.0;
    if (!any) return;
    thread_local std::vector<std::size_t> order;
    order.clear();
    for (std::size_t i = 0; i < m; ++i)
        if (writes[i] > 0.0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return writes[a] < writes[b]; });
    const int fields[] = {STOP_US, STOP_EV, SPW, SLOW_US, STOP_FRAC};
    std::size_t start = 0;
    while (start < order.size()) {
        std::size_t end = start + 1;
        const double top = writes[order[start]] * (1.0 + kStallPoolTol);
        while (end < order.size() && writes[order[end]] <= top) ++end;
        if (end - start > 1) {
            double wsum = 0.0;
            for (std::size_t j = start; j < end; ++j) wsum += c.weight(order[j]);
            for (int f : fields) {
                double acc = 0.0;
                for (std::size_t j = start; j < end; ++j)
                    acc += c.weight(order[j]) * cyc[static_cast<std::size_t>(f) * m + order[j]];
                for (std::size_t j = start; j < end; ++j)
                    cyc[static_cast<std::size_t>(f) * m + order[j]] = acc / wsum;
            }
        }
        start = end;
    }
}

// ---------------------------------------------------------------- blocks (mva_core, clients)
// mva_core.block_delay for one worker
double block_delay(double rate, double length, double arrivals, double free) {
    if (!(rate > 0 && length > 0 && arrivals > 0 && free > 0)) return 0.0;
    const double nu = arrivals / free;
    const double x = nu * length;
    const double frac = x > 1e-6 ? 1.0 - (-std::expm1(-x)) / x : x / 2.0;
    const double W = free * length * frac;
    return rate * W / arrivals;
}

// clients.free_during_block for one worker
double free_during_block(double threads, double at_worker, double asleep, double length,
                         double period) {
    const double stays = clip01(1.0 - length / period);
    return std::max(threads - at_worker - asleep * stays, 1.0);
}

// ---------------------------------------------------------------- cores (model/rack/service.py)
// _stretch_over_jobs: g[a] = sum_k pois[k] stretch(1 + a + k), a busy peers,
// k = k0, k0 + 1, ... background jobs, from two cumulative sums
void stretch_over_jobs(std::size_t n, const std::vector<double>& pois, long cores, double ctx,
                       long k0, std::vector<double>& g) {
    const std::size_t L = pois.size();
    thread_local std::vector<double> P, Mc;
    P.assign(L, 0.0);
    Mc.assign(L, 0.0);
    double sp = 0.0, sm = 0.0;
    for (std::size_t j = 0; j < L; ++j) {
        sp += pois[j];
        sm += static_cast<double>(k0 + static_cast<long>(j)) * pois[j];
        P[j] = sp;
        Mc[j] = sm;
    }
    g.assign(n, 0.0);
    for (std::size_t a = 0; a < n; ++a) {
        const long last = std::min(std::max(cores - 1 - static_cast<long>(a) - k0, -1L),
                                   static_cast<long>(L) - 1);
        const double below = last >= 0 ? P[static_cast<std::size_t>(last)] : 0.0;
        const double below_m = last >= 0 ? Mc[static_cast<std::size_t>(last)] : 0.0;
        const double over = (1.0 + static_cast<double>(a)) * (P[L - 1] - below) + (Mc[L - 1] - below_m);
        g[a] = below + over / static_cast<double>(cores) * (1.0 + ctx);
    }
}

// _peers_expectation for up to EXACT_PEERS workers: each worker's busy-peer
// distribution by elimination (_peers_by_elimination), reduced against g
void peers_by_elimination(const std::vector<double>& u, const std::vector<double>& g,
                          std::vector<double>& dot, std::vector<double>& total) {
    const std::size_t n = u.size();
    thread_local std::vector<double> dist, keep;
    dist.assign(n * n, 0.0);
    keep.assign(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) dist[i * n] = 1.0;
    for (std::size_t j = 0; j < n; ++j) {
        const double p = u[j];
        std::copy(dist.begin() + j * n, dist.begin() + (j + 1) * n, keep.begin());
        for (std::size_t i = 0; i < n; ++i) {
            double* row = &dist[i * n];
            for (std::size_t k = n - 1; k >= 1; --k) row[k] = row[k] * (1.0 - p) + row[k - 1] * p;
            row[0] *= 1.0 - p;
        }
        std::copy(keep.begin(), keep.end(), dist.begin() + j * n);
    }
    dot.assign(n, 0.0);
    total.assign(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        double d = 0.0, t = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            d += dist[i * n + k] * g[k];
            t += dist[i * n + k];
        }
        dot[i] = d;
        total[i] = t;
    }
}

constexpr std::size_t kExactPeers = 64;     // service.EXACT_PEERS

// mean_stretch: the mean CPU stretch at a service start of each worker, its
// peers busy independently with their utilisations and bg[k] background jobs
// (mean, Poisson) on machine k
void mean_stretch(const RackConst& c, const std::vector<double>& util, const std::vector<double>& bg,
                  std::vector<double>& out) {
    out.assign(c.m, 1.0);
    if (c.cores <= 0) return;
    thread_local std::vector<std::size_t> idx, first;
    thread_local std::vector<double> u, pois, g, dot, total;
    for (std::size_t k = 0; k < c.machines; ++k) {
        idx.clear();
        for (std::size_t i = 0; i < c.m; ++i)
            if (static_cast<std::size_t>(c.mach[i]) == k) idx.push_back(i);
        if (idx.empty()) continue;
        // the machine's workers, each class's as many times as it has workers
        // (its first copy stands for it)
        std::size_t n = 0;
        first.resize(idx.size());
        for (std::size_t j = 0; j < idx.size(); ++j) {
            first[j] = n;
            n += static_cast<std::size_t>(std::llround(c.weight(idx[j])));
        }
        const double b = bg[k];
        if (!std::isfinite(b) || b < 0)        // the reference raises converting it too
            throw std::domain_error("analytic solver: background jobs on a machine are not finite");
        const double spread = 10.0 * std::sqrt(b + 1.0);
        const long k0 = std::max(0L, static_cast<long>(b - spread));
        const long kmax = static_cast<long>(b + spread) + 1;
        if (static_cast<long>(n) + kmax <= c.cores) continue;   // exactly 1
        pois.assign(static_cast<std::size_t>(kmax - k0 + 1), 0.0);
        double psum = 0.0;
        for (long j = k0; j <= kmax; ++j) {
            const double v = b > 0 ? std::exp(static_cast<double>(j) * std::log(b) - b -
                                              std::lgamma(static_cast<double>(j) + 1.0))
                                   : (j == 0 ? 1.0 : 0.0);
            pois[static_cast<std::size_t>(j - k0)] = v;
            psum += v;
        }
        u.resize(n);
        for (std::size_t j = 0; j < idx.size(); ++j) {
            const std::size_t end = j + 1 < idx.size() ? first[j + 1] : n;
            std::fill(u.begin() + first[j], u.begin() + end, clip01(util[idx[j]]));
        }
        stretch_over_jobs(n, pois, c.cores, c.ctx_penalty, k0, g);
        if (n > kExactPeers) {
            dot.assign(n, 0.0);
            total.assign(n, 0.0);
            peers_expectation(u.data(), n, g.data(), dot.data(), total.data());
        } else {
            peers_by_elimination(u, g, dot, total);
        }
        for (std::size_t j = 0; j < idx.size(); ++j)
            out[idx[j]] = dot[first[j]] / (total[first[j]] * psum);
    }
}

// ---------------------------------------------------------------- queue-length tails
// The tail terms cum[k] = sum_{j<=k} log X(N - j) of one rack (_cum_logx, _significant)
struct Tails {
    std::vector<double> cum;
    std::vector<double> ratio;          // exp(cum[k] - cum[k - 1]) = X(N - k) (0 past the population)
    std::size_t width = 0;

    // _tail_at: P(an arrival finds at least k clients), log-linear between k
    double at(double logd, double k) const {
        // the reference cannot index a queue length of NaN either (it raises);
        // here it would read out of bounds
        if (std::isnan(k)) throw std::domain_error("analytic solver: a queue length is NaN");
        const double top = static_cast<double>(width) - 1.0;
        if (k <= 0) return 1.0;
        if (k > top) return 0.0;
        const double kk = std::min(std::max(k, 0.0), top);
        const double lo_f = std::floor(kk);
        const std::size_t lo = static_cast<std::size_t>(lo_f);
        const std::size_t hi = std::min(lo + 1, width - 1);
        const double f = kk - lo_f;
        const double c = cum[lo] * (1.0 - f) + (f > 0 ? cum[hi] * f : 0.0);
        const double out = std::exp(std::min(kk * logd + c, 0.0));
        return std::isnan(out) ? 0.0 : out;
    }

    // network.block_overflow, E[(queue - c)+]: tails.cpp's overflow_pairs for
    // one worker, the same terms T[k] = exp(min(k logd + cum[k], 0)) and the
    // same cut run at the top, but each term past the first from the one
    // before (T[k] = T[k - 1] D X(N - k), a multiplication where the
    // reference takes an exp: the sums of a 4,096-worker rack took 1.3M exps
    // a step). The recurrence carries the unclamped term; each is clamped at
    // 1 as the reference's, and recomputed by its exp should it leave the
    // floating range. Within about 1e-13 of the reference (rounding only).
    double overflow(double ld, double cp, double cut) const {
        if (std::isnan(cp)) return std::numeric_limits<double>::quiet_NaN();
        const double c0 = cp > 0.0 ? cp : 0.0;
        const std::size_t m0 = c0 >= static_cast<double>(width)
                                   ? width : static_cast<std::size_t>(std::floor(c0));
        auto log_term = [&](std::size_t k) { return static_cast<double>(k) * ld + cum[k]; };
        auto term = [&](double t) {
            if (std::isnan(t)) return 0.0;
            return t > 0.0 ? 1.0 : std::exp(t);
        };
        std::size_t k = width;                       // the cut run at the top: no terms
        while (k > m0 + 1) {
            if (!(log_term(k - 1) < cut)) break;
            --k;
        }
        const double base = cp < 0.0 ? -cp : 0.0;
        if (!(m0 + 1 < k)) return base;
        const double D = std::exp(ld);
        double u = std::isfinite(cum[m0 + 1]) ? std::exp(log_term(m0 + 1)) : 0.0;
        const double first = std::isfinite(cum[m0 + 1]) ? term(log_term(m0 + 1)) : 0.0;
        double suffix = 0.0;
        for (std::size_t j = m0 + 2; j < k; ++j) {
            u *= D * ratio[j];
            if (!(u < 1e300) && std::isfinite(cum[j])) u = std::exp(log_term(j));
            if (!std::isfinite(cum[j])) u = 0.0;
            suffix += u > 1.0 ? 1.0 : u;
        }
        return base + first * (static_cast<double>(m0 + 1) - c0) + suffix;
    }
};

// ---------------------------------------------------------------- late replies (_late_sums)
// the queue-length bins' edges (_k_bins): one k each up to 16, then sqrt(k)/4 wide
const std::vector<long>& k_bins(long width) {
    thread_local long cached = -1;
    thread_local std::vector<long> edges;
    if (cached != width) {
        edges.assign(1, 0);
        long k = 0;
        while (k < width) {
            long r = static_cast<long>(std::sqrt(static_cast<double>(k)));   // math.isqrt(k)
            while (r * r > k) --r;
            while ((r + 1) * (r + 1) <= k) ++r;
            k = std::min(width, k + std::max(1L, r / 4));
            edges.push_back(k);
        }
        cached = width;
    }
    return edges;
}

double late_sum(const Tails& t, double logd, double k_drop, double S, double A, double cv2,
                double dup, double budget, double period, bool every, int late_timers) {
    const double width = static_cast<double>(t.width);
    const double kd_top = std::min(std::ceil(k_drop), width - 1.0);
    const double mean_top = S + kd_top * A;
    const double g_top = std::max(S, mean_top / std::sqrt(kd_top * (1.0 + dup) + 1.0));
    if (budget > 0 && budget >= mean_top + 10.0 * std::sqrt(std::max(cv2, 1e-6)) * g_top)
        return 0.0;                                 // quiet: no term can be late
    const std::vector<long>& edges = k_bins(static_cast<long>(t.width) - 1);
    const long kd = static_cast<long>(kd_top);
    // bins that start below the drop level (at least one)
    std::size_t used = 0;
    while (used + 1 < edges.size() && edges[used] < kd) ++used;
    used = std::max<std::size_t>(used, 1);
    auto tail = [&](double c, double k) {
        double v = k * logd;
        v += c;
        v = std::min(v, 0.0);
        v = std::exp(v);
        return std::isnan(v) ? 0.0 : v;
    };
    const double at_kd = tail(t.cum[static_cast<std::size_t>(kd)], static_cast<double>(kd));
    struct Term { double kf, weight; };
    thread_local std::vector<Term> terms;
    thread_local std::vector<double> pk;
    terms.clear();
    pk.assign(used, 0.0);
    double total = 0.0;
    double at_lo = tail(t.cum[static_cast<std::size_t>(edges[0])], static_cast<double>(edges[0]));
    for (std::size_t j = 0; j < used; ++j) {
        const long lo = edges[j];
        const long hi = std::min(edges[j + 1], kd);
        const double at_next =
            tail(t.cum[static_cast<std::size_t>(edges[j + 1])], static_cast<double>(edges[j + 1]));
        const double t_hi = edges[j + 1] <= kd ? at_next : at_kd;
        double p = hi > lo ? at_lo - t_hi : 0.0;
        if (!(p > 1e-15)) p = 0.0;
        pk[j] = p;
        total += p;
        at_lo = at_next;
    }
    const double norm = total > 0 ? total : 1.0;
    double horizon = -kInf;
    struct Gam { double weight, mean, shape, scale; };
    thread_local std::vector<Gam> gam;
    gam.clear();
    const double cv = std::max(cv2, 1e-6);
    for (std::size_t j = 0; j < used; ++j) {
        if (!(pk[j] > 0)) continue;
        const long lo = edges[j];
        const long hi = std::min(edges[j + 1], kd);
        const double kf = 0.5 * (static_cast<double>(lo) + static_cast<double>(hi) - 1.0);
        const double mean = S + kf * A;
        const double shape = (kf * (1.0 + dup) + 1.0) / cv;
        const double scale = mean / shape;
        gam.push_back({pk[j] / norm, mean, shape, scale});
        horizon = std::max(horizon, mean + 10.0 * std::sqrt(shape) * scale);
    }
    if (!(total > 0)) horizon = 0.0;
    double last = budget < horizon ? (every ? std::floor((horizon - budget) / period) : 0.0) : -1.0;
    const double sure = budget <= 0 ? (every ? std::floor(-budget / period) + 1.0 : 1.0) : 0.0;
    double out = std::max(std::min(sure, last + 1.0), 0.0);
    double b = budget + (sure > 0 ? sure * period : 0.0);
    last -= sure;
    if (last >= late_timers && b > 0) {
        // many timers: Euler-Maclaurin, E[(T - b)+] / p + P(T > b) / 2 + p f(b) / 12
        for (const Gam& g : gam) {
            const double x = b / g.scale;
            const double q0 = gamma_q(g.shape, x);
            const double q1 = gamma_q(g.shape + 1.0, x);
            const double excess = std::max(g.mean * q1 - b * q0, 0.0);
            double dens = std::exp((g.shape - 1.0) * std::log(x) - x - std::lgamma(g.shape)) / g.scale;
            if (std::isnan(dens)) dens = 0.0;
            else if (std::isinf(dens)) dens = std::numeric_limits<double>::max();
            out += g.weight * (excess / period + 0.5 * q0 + period * dens / 12.0);
        }
        return out;
    }
    for (long j = 0; j <= static_cast<long>(last); ++j) {
        const double tj = b + j * period;
        if (!(tj < horizon)) continue;
        if (tj <= 0) {
            out += 1.0;
            continue;
        }
        double add = 0.0;
        for (const Gam& g : gam) add += gamma_q(g.shape, tj / g.scale) * g.weight;
        out += add;
    }
    return out;
}

// ---------------------------------------------------------------- large populations
void fill_history(const std::vector<double>& xp, const std::vector<double>& fp, long from, long N,
                  double* x_hist);

// mva_core.approximate_batch for one rack: the Schweitzer throughput at
// n = N, N - 1, N - 2, N - 4, ... (throughput_roots), X(n) interpolated
// between them, and the stations' queue and utilisation at N.
void schweitzer_history(std::size_t m, const double* v, const double* S, const double* A,
                        const double* C, const double* Uo, const double* V, double Z, long N,
                        int root_steps, double* x_hist, double* q, double* u,
                        const double* weight, long from, std::vector<double>& xp,
                        std::vector<double>& fp) {
    thread_local std::vector<double> pops, f, a0, a1, b, x, slow;
    const long top = std::max(N, 2L);
    long k = 0;
    while ((2L << k) <= top) ++k;                    // floor(log2(max(N, 2)))
    pops.assign(1, static_cast<double>(N));          // steps 0, 1, 2, 4, ..., 2^k
    for (long j = 0; j <= k; ++j) pops.push_back(static_cast<double>(std::max(N - (1L << j), 1L)));
    const std::size_t G = pops.size();
    f.resize(G);
    slow.resize(m);
    a0.resize(G * m);
    a1.resize(G * m);
    b.resize(G * m);
    x.assign(G, 0.0);
    for (std::size_t i = 0; i < m; ++i) slow[i] = 1.0 / std::max(1.0 - Uo[i], 1e-9);
    for (std::size_t g = 0; g < G; ++g) {
        f[g] = (pops[g] - 1.0) / pops[g];
        for (std::size_t i = 0; i < m; ++i) {
            b[g * m + i] = f[g] * v[i] * A[i] * slow[i];
            a0[g * m + i] = v[i] * (S[i] * slow[i] + V[i]);
            a1[g * m + i] = v[i] * C[i] * f[g] * v[i] * A[i] * slow[i];
        }
    }
    throughput_roots(1, G, m, a0.data(), a1.data(), b.data(), &Z, pops.data(), root_steps, x.data(),
                     weight);
    const double xN = x[0], f0 = f[0];
    for (std::size_t i = 0; i < m; ++i) {
        const double a_ = (S[i] + C[i] * f0 * xN * v[i] * A[i]) * slow[i] + V[i];
        q[i] = xN * v[i] * a_ / (1.0 - xN * b[i]);
        u[i] = xN * v[i] * A[i];
    }
    // the populations solved, from the smallest up; repeated populations
    // (N - 2^j clipped at 1) once
    xp.clear();
    fp.clear();
    for (std::size_t g = G; g-- > 0;) {
        if (!xp.empty() && !(pops[g] > xp.back())) continue;
        xp.push_back(pops[g]);
        fp.push_back(x[g]);
    }
    fill_history(xp, fp, from, N, x_hist);
}

// X(n) for n = from..N by linear interpolation over the populations solved
// (np.interp). A step fills only the top of the history that the queue tails
// read; the rest is filled once, for the state a solve returns: at 65,536
// clients the whole history cost more than the rest of a step.
void fill_history(const std::vector<double>& xp, const std::vector<double>& fp, long from, long N,
                  double* x_hist) {
    std::size_t j = 0;
    for (long n = std::max(from, 1L); n <= N; ++n) {
        const double nn = static_cast<double>(n);
        while (j + 1 < xp.size() && xp[j + 1] < nn) ++j;
        double val;
        if (nn <= xp.front()) val = fp.front();
        else if (nn >= xp.back()) val = fp.back();
        else {
            const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
            val = slope * (nn - xp[j]) + fp[j];
            if (nn == xp[j + 1]) val = fp[j + 1];
        }
        x_hist[n - 1] = val;
    }
}

// ---------------------------------------------------------------- one step (_step)
}  // namespace

// the closed network by Schweitzer past n_exact clients and work_exact
// client-stations (mva_core._approximate), else by the exact recursion
bool schweitzer_path(const RackConst& c, const IterParams& ip) {
    double visited = 0.0;
    for (std::size_t i = 0; i < c.m; ++i) visited += c.s[i] != 0.0 ? c.weight(i) : 0.0;
    const double Nd = static_cast<double>(c.N);
    return Nd > ip.n_exact && Nd * visited > ip.work_exact;
}

namespace {

struct Scratch {
    std::vector<double> per_machine, mbps, jobs_m, S, A, C, Uo, V, cv2w, k_drop, logd, arrivals,
        free_wal, free_stop, wal_rate, stop_rate, r_out, u_out, pkt;
    // the closed network's stations where workers are collapsed (_step's Sm,
    // Am, Cm, Uom, Vm), their resends while late and full buffers' service
    std::vector<double> Sm, Am, Cm, Uom, Vm, late, full, a0, a1, bb;
    std::vector<unsigned char> is_collapsed;
    std::vector<std::pair<double, double>> seen;     // _collapsed's excess(p), asked again
    Tails tails;
};

// ---------------------------------------------------------------- collapsed workers (_collapsed)
constexpr double kBracketStep = 1e-5;              // analytic.BRACKET_STEP

// Python's float floor division a // b (float_floor_div), which
// clients.resends_before uses: not always floor(a / b)
double py_floordiv(double a, double b) {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
    if (div == 0.0) return std::copysign(0.0, a / b);
    double fl = std::floor(div);
    if (div - fl > 0.5) fl += 1.0;
    return fl;
}

// clients.resends_before: the timers that fire before a time ``held`` at the worker
double resends_before(double budget, double period, double held) {
    if (budget >= held) return 0.0;
    double n = py_floordiv(held - budget, period) + 1.0;
    if (budget + (n - 1.0) * period >= held) n -= 1.0;
    return n;
}

// _collapsed_residence
double collapsed_residence(double p, double period, double full) {
    return p / (1.0 - p) * period + full;
}

double logit(double q) { return std::log(q / (1.0 - q)); }
double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// mva_core.throughput_at: X(N) of the closed network, by the exact recursion
// up to n_exact clients and past them by the Schweitzer root at N
double throughput_at(const RackConst& c, const double* S, const double* A, const double* C,
                     const double* Uo, const double* V, double Z, const IterParams& ip,
                     Scratch& w) {
    const std::size_t m = c.m;
    const double Nd = static_cast<double>(c.N);
    if (Nd <= ip.n_exact) return recursion(c.s, S, A, C, Uo, V, m, Z, c.N).x_hist.back();
    w.a0.assign(m, 0.0);
    w.a1.assign(m, 0.0);
    w.bb.assign(m, 0.0);
    const double f = (Nd - 1.0) / Nd;
    for (std::size_t i = 0; i < m; ++i) {
        const double v = c.s[i];
        const double slow = 1.0 / std::max(1.0 - Uo[i], 1e-9);
        w.bb[i] = f * v * A[i] * slow;
        w.a0[i] = v * (S[i] * slow + V[i]);
        w.a1[i] = v * C[i] * f * v * A[i] * slow;
    }
    double x = 0.0;
    throughput_roots(1, 1, m, w.a0.data(), w.a1.data(), w.bb.data(), &Z, &Nd, 100, &x);
    return x;
}

// _bracket: (lo, hi) with f(lo) > 0 >= f(hi) around the sign change of a
// falling f, from x0 outwards by steps that grow tenfold within [bottom, top]
template <class F>
std::pair<double, double> bracket(F&& f, double x0, double bottom, double top, double step) {
    double lo = x0, hi = x0;
    if (f(x0) > 0) {
        while (hi < top) {
            hi = std::min(lo + step, top);
            if (f(hi) <= 0) return {lo, hi};
            lo = hi;
            step *= 10.0;
        }
        return {top, top};
    }
    while (lo > bottom) {
        lo = std::max(hi - step, bottom);
        if (f(lo) > 0) return {lo, hi};
        hi = lo;
        step *= 10.0;
    }
    return {bottom, bottom};
}

// _bisect: the hi side of a sign change of a falling f (f(lo) > 0)
template <class F>
double bisect(F&& f, double lo, double hi, double xtol) {
    for (int k = 0; k < 200; ++k) {
        if (hi - lo <= xtol) break;
        const double mid = 0.5 * (lo + hi);
        if (f(mid) > 0) lo = mid;
        else hi = mid;
    }
    return hi;
}

// scipy.optimize.brentq (Charles Harris's brentq.c, the same steps) with
// rtol = 4 eps; false where scipy raises: the ends' signs agree, a NaN, or
// no convergence in maxiter steps
template <class F>
bool brentq(F&& f, double xa, double xb, double xtol, int maxiter, double& root) {
    const double rtol = 4.0 * std::numeric_limits<double>::epsilon();
    double xpre = xa, xcur = xb, xblk = 0.0, fblk = 0.0, spre = 0.0, scur = 0.0;
    double fpre = f(xpre);
    if (std::isnan(fpre)) return false;
    double fcur = f(xcur);
    if (std::isnan(fcur)) return false;
    if (fpre == 0) { root = xpre; return true; }
    if (fcur == 0) { root = xcur; return true; }
    if (std::signbit(fpre) == std::signbit(fcur)) return false;
    for (int i = 0; i < maxiter; ++i) {
        if (fpre != 0 && fcur != 0 && std::signbit(fpre) != std::signbit(fcur)) {
            xblk = xpre;
            fblk = fpre;
            spre = scur = xcur - xpre;
        }
        if (std::fabs(fblk) < std::fabs(fcur)) {
            xpre = xcur; xcur = xblk; xblk = xpre;
            fpre = fcur; fcur = fblk; fblk = fpre;
        }
        const double delta = (xtol + rtol * std::fabs(xcur)) / 2;
        const double sbis = (xblk - xcur) / 2;
        if (fcur == 0 || std::fabs(sbis) < delta) { root = xcur; return true; }
        if (std::fabs(spre) > delta && std::fabs(fcur) < std::fabs(fpre)) {
            double stry;
            if (xpre == xblk) {
                stry = -fcur * (xcur - xpre) / (fcur - fpre);             // interpolate
            } else {
                const double dpre = (fpre - fcur) / (xpre - xcur);        // extrapolate
                const double dblk = (fblk - fcur) / (xblk - xcur);
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre));
            }
            if (2 * std::fabs(stry) < std::min(std::fabs(spre), 3 * std::fabs(sbis) - delta)) {
                spre = scur;                                              // good short step
                scur = stry;
            } else {
                spre = sbis;                                              // bisect
                scur = sbis;
            }
        } else {
            spre = sbis;
            scur = sbis;
        }
        xpre = xcur;
        fpre = fcur;
        if (std::fabs(scur) > delta) xcur += scur;
        else xcur += (sbis > 0 ? delta : -delta);
        fcur = f(xcur);
        if (std::isnan(fcur)) return false;
    }
    return false;
}

// _collapsed: the drop fraction p of the rack's collapsed workers that makes
// the busiest one's request rate equal its capacity (it serves 1 + l (1 - p)
// packets per request, l resends while late); their stations become delays of
// residence p / (1 - p) period + a full buffer's service. Sets w.Sm (the
// collapsed workers' entries), w.late and w.full; returns p.
double collapsed_p(const RackConst& c, const Snap& st, const Snap& o, double Z,
                   const IterParams& ip, Scratch& w) {
    const double period = c.period, budget = c.budget, K = c.K;
    std::size_t i0 = static_cast<std::size_t>(c.collapsed[0]);
    for (std::size_t j = 0; j < c.n_collapsed; ++j) {
        const std::size_t i = static_cast<std::size_t>(c.collapsed[j]);
        w.full[i] = K * o.S_req[i];
        w.late[i] = resends_before(budget, period, w.full[i]);
        w.Am[i] = w.Cm[i] = w.Uom[i] = w.Vm[i] = 0.0;
        if (c.s[i] > c.s[i0]) i0 = i;                  // max(): the first of the largest
    }
    w.seen.clear();
    auto excess = [&](double pc) {
        for (const auto& kv : w.seen)
            if (kv.first == pc) return kv.second;
        for (std::size_t j = 0; j < c.n_collapsed; ++j) {
            const std::size_t i = static_cast<std::size_t>(c.collapsed[j]);
            w.Sm[i] = collapsed_residence(pc, period, w.full[i]);
        }
        const double x = throughput_at(c, w.Sm.data(), w.Am.data(), w.Cm.data(), w.Uom.data(),
                                       w.Vm.data(), Z, ip, w);
        const double e = x * c.s[i0] - 1.0 / (o.S_req[i0] * (1.0 + w.late[i0] * (1.0 - pc)));
        w.seen.emplace_back(pc, e);
        return e;
    };
    auto steep_f = [&](double z) { return excess(sigmoid(z)); };
    const double p_last = st.p[i0];
    auto [lo, hi] = bracket(excess, std::min(std::max(p_last, 0.0), 0.99), 0.0, 0.99, kBracketStep);
    bool steep = false;
    double xtol = 1e-10;
    if (lo == hi && hi == 0.99) {
        // even 99 % drops leave it over capacity: up to 1 - 1e-12, in the log-odds
        steep = true;
        xtol = 1e-9;
        const double bottom = logit(0.99), top = logit(1.0 - 1e-12);
        std::tie(lo, hi) = bracket(steep_f, logit(std::min(std::max(p_last, 0.99), 1.0 - 1e-12)),
                                   bottom, top, 1e-3);
        if (lo == hi && hi == top) {
            lo = hi = 1.0 - 1e-12;                       // over capacity at any drop fraction
        } else if (lo == hi) {
            lo = bottom;
            hi = top;
        }
    }
    if (hi > lo) {
        double x = 0.0;
        const bool ok = steep ? brentq(steep_f, lo, hi, xtol, 60, x)
                              : brentq(excess, lo, hi, xtol, 60, x);
        if (!ok) x = steep ? bisect(steep_f, lo, hi, xtol) : bisect(excess, lo, hi, xtol);
        hi = steep ? sigmoid(x) : x;
    }
    for (std::size_t j = 0; j < c.n_collapsed; ++j) {
        const std::size_t i = static_cast<std::size_t>(c.collapsed[j]);
        w.Sm[i] = collapsed_residence(hi, period, w.full[i]);
    }
    return hi;
}

// One evaluation of the map: the next state and its output quantities in o
// (delay, iterations and converged of o are not used).
void step(const RackConst& c, const Snap& st, double D, const IterParams& ip, Scratch& w,
          Snap& o) {
    const std::size_t m = c.m, nm = c.machines;
    const double X = st.X;
    for (auto* v : {&w.S, &w.A, &w.C, &w.Uo, &w.V, &w.cv2w, &w.k_drop, &w.logd, &w.arrivals,
                    &w.free_wal, &w.free_stop, &w.wal_rate, &w.stop_rate, &w.r_out,
                    &w.u_out, &w.pkt})
        v->assign(m, 0.0);
    w.per_machine.assign(nm, 0.0);
    w.mbps.assign(nm, 0.0);
    w.jobs_m.assign(nm, 0.0);
    // ---- service: cost x load factor x CPU stretch
    // sums over the rack's workers count each class's workers (c.weight)
    for (std::size_t i = 0; i < m; ++i) w.per_machine[c.mach[i]] += c.weight(i) * st.util[i];
    mean_stretch(c, st.util, st.bg, o.stretch);
    for (std::size_t i = 0; i < m; ++i) {
        const double peers = w.per_machine[c.mach[i]] - st.util[i];
        const double u = clip01(st.util[i]);
        const double lf = (1.0 + c.idle * (1.0 - u)) * (1.0 + c.sharep * peers);
        w.S[i] = c.cost[i] * lf * o.stretch[i] + c.floor_gap;
    }
    // ---- LSM: the flush cycle at the current write rates
    for (std::size_t i = 0; i < m; ++i) w.mbps[c.mach[i]] += c.weight(i) * (st.writes[i] * 1e6 * c.entry);
    for (std::size_t k = 0; k < nm; ++k) w.mbps[k] /= kMiB;
    for (std::size_t i = 0; i < m; ++i) w.jobs_m[c.mach[i]] += c.weight(i) * (st.fdb[i] + st.cb[i]);
    for (std::size_t i = 0; i < m; ++i) {
        const double wal = c.wal ? c.wal_base + c.wal_mbps * w.mbps[c.mach[i]] : 0.0;
        const double jobs = w.jobs_m[c.mach[i]] - st.fdb[i];
        const double share = c.disk / std::max(1.0, 1.0 + jobs);
        double* cy = &o.cyc[0] + i;                 // field f at cyc[f * m + i]
        double one[kCycFields];
        flush_cycles(c, st.writes[i], share, wal, 1.0 - st.stop[i], c.run_memtables[i], one);
        for (std::size_t f = 0; f < kCycFields; ++f) cy[f * m] = one[f];
    }
    pool_stalls(c, st.writes, o.cyc);                // equal loads, equal stalls
    auto cyc = [&](int f, std::size_t i) { return o.cyc[static_cast<std::size_t>(f) * m + i]; };
    const double period_eff = c.finite_to ? c.period : kInf;
    const double N = static_cast<double>(c.N);
    for (std::size_t i = 0; i < m; ++i) {
        const double extra = cyc(WAL_US, i) + cyc(STOP_US, i) + cyc(SLOW_US, i);
        const double wal_ev = cyc(WAL_EV, i);
        const double wal_per_write = wal_ev > 0 ? cyc(WAL_US, i) / wal_ev : 0.0;
        o.S_req[i] = w.S[i] + c.wf[i] * extra;
        w.Uo[i] = std::min(c.ev[i] * (w.S[i] + extra), 0.99);
        w.A[i] = o.S_req[i] * (1.0 + st.dup[i]);
        // service.service_scv, service.residual_excess
        const double Si = w.S[i];
        const double frac = Si > 0 ? std::max(Si - c.floor_gap, 0.0) / Si : 0.0;
        w.cv2w[i] = c.cv2 * frac * frac;
        w.C[i] = 0.5 * (w.cv2w[i] - 1.0) * Si;
        w.arrivals[i] = X * c.s[i];
        const double here = st.q[i];
        const double asleep = X * D;
        w.free_wal[i] = free_during_block(N, here, asleep, wal_ev, period_eff);
        w.free_stop[i] = free_during_block(N, here, asleep, cyc(STOP_EV, i), period_eff);
        w.wal_rate[i] = st.writes[i] * wal_per_write;
        w.stop_rate[i] = st.writes[i] * cyc(SPW, i);
        w.V[i] = block_delay(w.wal_rate[i], wal_ev, w.arrivals[i], w.free_wal[i]) +
                 block_delay(w.stop_rate[i], cyc(STOP_EV, i), w.arrivals[i], w.free_stop[i]);
        o.block[i] = cyc(WAL_US, i) + cyc(SLOW_US, i);
    }
    const double Z = c.think + D;
    // ---- the closed network (schweitzer_path); collapsed workers are delays
    // there (_collapsed), the rest of the step reads their own S, A, Uo
    const double *Sx = o.S_req.data(), *Ax = w.A.data(), *Cx = w.C.data(), *Uox = w.Uo.data(),
                 *Vx = w.V.data();
    double p_collapsed = 0.0;
    w.is_collapsed.assign(m, 0);
    if (c.n_collapsed) {
        w.Sm = o.S_req;
        w.Am = w.A;
        w.Cm = w.C;
        w.Uom = w.Uo;
        w.Vm = w.V;
        w.late.assign(m, 0.0);
        w.full.assign(m, 0.0);
        for (std::size_t j = 0; j < c.n_collapsed; ++j)
            w.is_collapsed[static_cast<std::size_t>(c.collapsed[j])] = 1;
        p_collapsed = collapsed_p(c, st, o, Z, ip, w);
        Sx = w.Sm.data();
        Ax = w.Am.data();
        Cx = w.Cm.data();
        Uox = w.Uom.data();
        Vx = w.Vm.data();
    }
    if (schweitzer_path(c, ip)) {
        // the queue tails read X(N - k) for k <= K + 2 (kmax below)
        const long from = c.N - static_cast<long>(std::ceil(c.K)) - 3;
        schweitzer_history(m, c.s, Sx, Ax, Cx, Uox, Vx, Z, c.N, ip.root_steps, o.x_hist.data(),
                           o.q.data(), w.u_out.data(), c.mult, from, o.hist_xp, o.hist_fp);
    } else {
        if (c.mult) throw std::logic_error("worker classes off the Schweitzer path");
        o.hist_xp.clear();                              // the history is whole
        o.hist_fp.clear();
        const unsigned char active_row = 1;
        recursion_batch(1, m, c.s, Sx, Ax, Cx, Uox, Vx, &Z, &c.N, &active_row, c.N,
                        o.x_hist.data(), w.r_out.data(), o.q.data(), w.u_out.data());
    }
    // never above the busiest worker's capacity (_step: Reiser's residual term
    // overshoots it where one worker holds nearly every client)
    double dmax = 0.0;
    for (std::size_t i = 0; i < m; ++i)
        dmax = std::max(dmax, c.share_cap(i) * Ax[i] / std::max(1.0 - Uox[i], 1e-9));
    const double X_new = std::min(o.x_hist[static_cast<std::size_t>(c.N - 1)],
                                  dmax > 0 ? 1.0 / dmax : kInf);
    o.X = X_new;
    for (std::size_t i = 0; i < m; ++i) w.u_out[i] = X_new * c.s[i] * Ax[i];
    double kd_max = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
        const bool act = c.s[i] > 0;
        o.util[i] = act ? std::min(w.u_out[i] + w.Uo[i], 1.0) : 0.0;
        o.demand[i] = c.s[i] * w.A[i] / std::max(1.0 - w.Uo[i], 1e-9);
        w.logd[i] = act ? std::log(std::max(o.demand[i], 1e-300)) : -kInf;
        w.k_drop[i] = c.K / (1.0 + st.dup[i]);
        kd_max = std::max(kd_max, act ? w.k_drop[i] : 0.0);
    }
    // ---- loss and retries from the queue-length distribution
    long kmax = std::min(c.N - 1, static_cast<long>(std::ceil(kd_max)) + 2);
    kmax = std::max(kmax, 1L);
    Tails& t = w.tails;
    t.cum.assign(static_cast<std::size_t>(kmax) + 1, 0.0);
    t.ratio.assign(static_cast<std::size_t>(kmax) + 1, 0.0);
    for (long k = 1; k <= kmax; ++k) {                // _cum_logx
        const long col = c.N - k - 1;
        const double x = col >= 0 ? std::max(o.x_hist[static_cast<std::size_t>(col)], 1e-300) : 0.0;
        const double lg = col >= 0 ? std::log(x) : -kInf;
        t.cum[static_cast<std::size_t>(k)] = t.cum[static_cast<std::size_t>(k) - 1] + lg;
        t.ratio[static_cast<std::size_t>(k)] = x;
    }
    t.width = t.cum.size();
    if (t.width > 64) {                               // _significant
        double top = -kInf;
        for (std::size_t i = 0; i < m; ++i)
            if (std::isfinite(w.logd[i])) top = std::max(top, w.logd[i]);
        long last_live = -1;
        if (std::isfinite(top)) {
            const double floor_log = std::log(1e-18);
            for (std::size_t k = 0; k < t.width; ++k)
                if (static_cast<double>(k) * top + t.cum[k] > floor_log) last_live = static_cast<long>(k);
        }
        const std::size_t cut = last_live >= 0 ? static_cast<std::size_t>(last_live) + 2 : 2;
        t.width = std::min(std::max<std::size_t>(cut, 2), t.width);
        t.cum.resize(t.width);
        t.ratio.resize(t.width);
    }
    for (std::size_t i = 0; i < m; ++i) {
        const bool act = c.s[i] > 0;
        o.p[i] = act ? t.at(w.logd[i], w.k_drop[i]) : 0.0;
        w.pkt[i] = X_new * c.s[i] * (1.0 + st.dup[i]) + c.ev[i];
    }
    for (int blk = 0; blk < 2; ++blk) {
        const std::vector<double>& rate = blk == 0 ? w.wal_rate : w.stop_rate;
        const std::vector<double>& f = blk == 0 ? w.free_wal : w.free_stop;
        const int len_field = blk == 0 ? WAL_EV : STOP_EV;
        for (std::size_t i = 0; i < m; ++i) {
            const double length = cyc(len_field, i);
            const bool hit = c.s[i] > 0 && rate[i] > 0 && length > 0 && w.pkt[i] > 0;
            if (!hit) continue;
            const double a_blk = f[i] * -std::expm1(-w.pkt[i] / f[i] * length) / (1.0 + st.dup[i]);
            const double cc = w.k_drop[i] - a_blk;
            double dropped = std::max(0.0, -cc);
            if (t.at(w.logd[i], std::max(cc, 0.0)) > 1e-14)     // network.block_overflow
                dropped = t.overflow(w.logd[i], cc, ip.tail_cut);
            o.p[i] += rate[i] * dropped * (1.0 + st.dup[i]) / w.pkt[i];
        }
    }
    for (std::size_t i = 0; i < m; ++i) {
        o.p[i] = std::min(o.p[i] + c.loss * (c.s[i] > 0 ? 1.0 : 0.0), 0.99);
        o.dup[i] = 0.0;
    }
    // ---- late replies (clients resend while late, or the attempt fails)
    double implied = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
        double fail = o.p[i];
        const double spread = w.A[i] * (1.0 + 10.0 * std::sqrt(w.cv2w[i]));
        const double k_late = spread > 0 ? c.budget / spread - 1.0 : kInf;
        // a collapsed worker's timeouts are in its residence (_step)
        bool check = c.s[i] > 0 && c.finite_to && k_late < w.k_drop[i] && !w.is_collapsed[i];
        if (check)
            check = t.at(w.logd[i], std::min(std::max(k_late, 0.0), static_cast<double>(kmax) + 1.0)) >
                    ip.late_eps;
        if (check) {
            const double ls = late_sum(t, w.logd[i], w.k_drop[i], o.S_req[i], w.A[i], w.cv2w[i],
                                       st.dup[i], c.budget, c.period, c.farreach, ip.late_timers);
            const double p0 = o.p[i];
            const double f_other = std::min(p0 + (1.0 - p0) * ls, 0.99);
            if (c.farreach) {
                o.dup[i] = ls * (1.0 - p0);
            } else {
                fail = f_other;
                o.dup[i] = (1.0 - p0) * ls / (1.0 - f_other);
            }
        }
        o.wait_extra[i] = c.finite_to ? fail / (1.0 - fail) * c.period : 0.0;
        if (w.is_collapsed[i]) {
            o.p[i] = p_collapsed;
            o.dup[i] = w.late[i] * (1.0 - p_collapsed);
            o.util[i] = 1.0;
            o.wait_extra[i] = 0.0;
        }
        implied += c.weight(i) * (c.s[i] * o.wait_extra[i]);
    }
    o.implied = implied;
    std::fill(o.bg.begin(), o.bg.end(), 0.0);
    for (std::size_t i = 0; i < m; ++i) {
        o.writes[i] = (X_new * c.s[i] * (1.0 + st.dup[i]) + c.ev[i]) * c.wf[i] + c.ev[i] * (1.0 - c.wf[i]);
        o.bg[c.mach[i]] += c.weight(i) * (cyc(FLUSH_BUSY, i) + cyc(COMP_BUSY, i));
        o.fdb[i] = cyc(FLUSH_DISK, i);
        o.cb[i] = cyc(COMP_BUSY, i);
        o.stop[i] = cyc(STOP_FRAC, i);
    }
}

}  // namespace

RackConst rack_const(const double* k, std::size_t machines, const double* s,
                     const double* wf, const double* ev, const double* cost,
                     const double* run_memtables, const long* mach) {
    RackConst c;
    // the rack's own workers: a batch's padding (share 0, no load, no writes)
    // changes nothing but the path from the reference's first guess
    c.m = static_cast<std::size_t>(k[RK_workers]);
    c.machines = machines;
    c.s = s; c.wf = wf; c.ev = ev; c.cost = cost; c.run_memtables = run_memtables; c.mach = mach;
    c.floor_gap = k[RK_floor_gap]; c.idle = k[RK_idle]; c.sharep = k[RK_sharep]; c.cv2 = k[RK_cv2];
    c.think = k[RK_think]; c.period = k[RK_period]; c.budget = k[RK_budget];
    c.finite_to = k[RK_finite_to] != 0; c.farreach = k[RK_farreach] != 0;
    c.N = static_cast<long>(k[RK_N]); c.K = k[RK_K]; c.loss = k[RK_loss];
    c.wal_base = k[RK_wal_base]; c.wal_mbps = k[RK_wal_mbps]; c.wal = k[RK_wal] != 0;
    c.entry = k[RK_entry]; c.disk = k[RK_disk];
    c.entries = k[RK_entries]; c.entry_bytes = k[RK_entry_bytes]; c.memtable_bytes = k[RK_memtable_bytes];
    c.flush_fixed_us = k[RK_flush_fixed_us]; c.flush_write_factor = k[RK_flush_write_factor];
    c.wamp = k[RK_wamp]; c.flushnum = k[RK_flushnum]; c.maxnum = k[RK_maxnum];
    c.slowdown_bytes_per_us = k[RK_slowdown_bytes_per_us]; c.compacts = k[RK_compacts] != 0;
    c.cores = static_cast<long>(k[RK_cores]); c.ctx_penalty = k[RK_ctx_penalty];
    return c;
}

// ---------------------------------------------------------------- the damped loop (_iterate)
void Snap::size(std::size_t m, std::size_t machines, long N) {
    for (auto* v : {&util, &p, &dup, &writes, &fdb, &cb, &stop, &q, &S_req, &wait_extra, &demand,
                    &block})
        v->assign(m, 0.0);
    stretch.assign(m, 1.0);
    bg.assign(machines, 0.0);
    // not cleared: every entry is written before it is read (the exact
    // recursion writes all, Schweitzer's steps the top, solve_rack the rest)
    x_hist.resize(static_cast<std::size_t>(std::max(N, 1L)));
    cyc.assign(kCycFields * m, 0.0);
}

void Snap::blend(double w, const Snap& z) {
    auto f = [w](double x, double y) { return w * x + (1.0 - w) * y; };
    auto fv = [&](std::vector<double>& a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) a[i] = f(a[i], b[i]);
    };
    X = f(X, z.X);
    implied = f(implied, z.implied);
    delay = f(delay, z.delay);
    for (auto [a, b] : {std::pair{&util, &z.util}, {&p, &z.p}, {&dup, &z.dup}, {&writes, &z.writes},
                        {&bg, &z.bg}, {&fdb, &z.fdb}, {&cb, &z.cb}, {&stop, &z.stop}, {&q, &z.q},
                        {&S_req, &z.S_req}, {&stretch, &z.stretch}, {&wait_extra, &z.wait_extra},
                        {&demand, &z.demand},
                        {&block, &z.block}, {&x_hist, &z.x_hist}, {&hist_fp, &z.hist_fp},
                        {&cyc, &z.cyc}})
        fv(*a, *b);
    iterations = std::max(iterations, z.iterations);
    converged = converged && z.converged;
}

void iterate_rack(const RackConst& c, Snap& st, double D, const IterParams& ip) {
    const std::size_t m = c.m, nm = c.machines;
    thread_local Scratch w;
    thread_local Snap o;
    o.size(m, nm, c.N);
    double a = 1.0, last = kInf;
    bool done = false;
    long iterations = 0;
    double map_X = st.X;
    std::vector<double> map_util(st.util);
    for (int it = 1; it <= ip.max_iter; ++it) {
        step(c, st, D, ip, w, o);
        const double X0 = st.X;
        const bool fresh = X0 <= 0;
        double du = 0, dp = 0, dd = 0, d0 = 0;
        for (std::size_t i = 0; i < m; ++i) {
            du = std::max(du, std::abs(o.util[i] - st.util[i]));
            dp = std::max(dp, std::abs(o.p[i] - st.p[i]));
            dd = std::max(dd, std::abs(o.dup[i] - st.dup[i]));
            d0 = std::max(d0, st.dup[i]);
        }
        const double delta = std::abs(o.X - X0) / std::max(o.X, 1e-12) + du + dp + dd / (1.0 + d0);
        if (it > 1) a = delta >= last ? std::max(0.05, a * 0.6) : std::min(ip.damp_max, a * 1.2);
        last = delta;
        map_X = o.X;
        map_util = o.util;
        st.X = fresh ? o.X : a * o.X + (1.0 - a) * X0;
        bool any_w = false;
        for (std::size_t i = 0; i < m; ++i) any_w = any_w || st.writes[i] != 0.0;
        for (std::size_t i = 0; i < m; ++i) {
            st.util[i] = a * o.util[i] + (1.0 - a) * st.util[i];
            st.p[i] = a * o.p[i] + (1.0 - a) * st.p[i];
            st.dup[i] = a * o.dup[i] + (1.0 - a) * st.dup[i];
            st.writes[i] = any_w ? a * o.writes[i] + (1.0 - a) * st.writes[i] : o.writes[i];
        }
        // the flush state is damped like the load: at the flush-capacity limit
        // the stop fraction jumps with the write rate, and taken whole it
        // swings exchangeable workers onto different sides of the cliff
        for (std::size_t i = 0; i < m; ++i) {
            st.fdb[i] = a * o.fdb[i] + (1.0 - a) * st.fdb[i];
            st.cb[i] = a * o.cb[i] + (1.0 - a) * st.cb[i];
            st.stop[i] = a * o.stop[i] + (1.0 - a) * st.stop[i];
        }
        for (std::size_t k = 0; k < nm; ++k) st.bg[k] = a * o.bg[k] + (1.0 - a) * st.bg[k];
        st.implied = o.implied;
        ++iterations;
        if (it >= ip.min_steps && delta < ip.tol && !fresh) {
            done = true;
            break;
        }
    }
    // the map's own last output (operational laws hold on it), as the reference
    st.X = map_X;
    st.util = map_util;
    st.iterations = iterations;
    st.converged = done;
    st.delay = D;
    st.S_req = o.S_req;
    st.stretch = o.stretch;
    st.wait_extra = o.wait_extra;
    st.demand = o.demand;
    st.q = o.q;
    st.block = o.block;
    // the history: whole from the exact recursion; from Schweitzer its
    // populations, filled in when the solve returns (solve_rack)
    st.hist_xp = o.hist_xp;
    st.hist_fp = o.hist_fp;
    if (o.hist_xp.empty()) st.x_hist.assign(o.x_hist.begin(), o.x_hist.begin() + c.N);
    else st.x_hist.clear();
    st.cyc = o.cyc;
}

// ---------------------------------------------------------------- the delay search (_solve_states)
namespace {

// _consistency: |g| relative to the delay (plus a thousandth of a period)
double consistency(double g, double D, double period) {
    return std::abs(g) / (D + 1e-3 * period);
}

}  // namespace

void solve_rack(const RackConst& c, Snap& st, double D0, const IterParams& ip0) {
    const bool warm = !std::isnan(D0);
    double D = warm ? D0 : 0.0;
    IterParams ip = ip0;
    ip.min_steps = warm ? 2 : 4;
    iterate_rack(c, st, D, ip);
    long total = st.iterations;
    const double period = c.period;
    const double g0 = st.implied - D;
    bool need = g0 > 1e-6 * (period + 1.0);
    const double all_asleep = st.X > 0 ? static_cast<double>(c.N) / st.X : kInf;
    double lo = D;
    double hi = need ? (all_asleep > lo ? std::min(st.implied, all_asleep) : st.implied) : D;
    double g_lo = g0, g_hi = std::numeric_limits<double>::quiet_NaN();
    if (warm) {
        const bool settled = consistency(g0, D, period) <= ip.root_tol;
        const bool below = g0 < 0 && !settled;
        if (below) {
            lo = 0.0;
            hi = D;
            g_lo = st.implied;
            g_hi = g0;
        }
        need = (need || below) && !settled;
    }
    int side = 0;
    // the bracket's end states (g > 0 at lo, g < 0 at hi), for a bracket that
    // closes on a jump of g
    Snap end_pos, end_neg;
    bool have_pos = false, have_neg = false;
    if (need) {
        (g0 > 0 ? end_pos : end_neg) = st;
        (g0 > 0 ? have_pos : have_neg) = true;
    }
    double g_last = g0;
    int failed = 0;
    bool done = !need;
    for (int rnd = 0; rnd < ip.rounds && !done; ++rnd) {
        // next trial: the top of the bracket first, then regula falsi
        double Dn;
        if (std::isnan(g_hi)) Dn = hi;
        else if (std::isfinite(g_hi) && g_lo - g_hi > 0)
            Dn = lo + g_lo * (hi - lo) / std::max(g_lo - g_hi, 1e-300);
        else Dn = 0.5 * (lo + hi);
        // inexact rounds far from the root, the full tolerance near it
        const double rel = std::abs(g_last) / (Dn + period);
        ip.tol = std::min(std::max(0.1 * rel, ip0.tol), 1e-3);
        ip.min_steps = 2;
        st.converged = false;
        iterate_rack(c, st, Dn, ip);
        total += st.iterations;
        const double g = st.implied - Dn;
        g_last = g;
        const bool pos = g > 0;
        double new_lo = pos ? Dn : lo;
        double new_hi = pos ? hi : Dn;
        // a top below the root (the implied delay rose with D) moves up
        if (pos && std::isnan(g_hi) && Dn >= hi) new_hi = std::max(st.implied, 2.0 * Dn);
        const double glo = pos ? g : g_lo * (side == -1 ? 0.5 : 1.0);
        double ghi = pos ? (side == 1 ? 0.5 : 1.0) * (std::isnan(g_hi) ? 0.0 : g_hi) : g;
        if (std::isnan(g_hi) && pos) ghi = std::numeric_limits<double>::quiet_NaN();
        side = pos ? 1 : -1;
        lo = new_lo;
        hi = new_hi;
        g_lo = glo;
        g_hi = ghi;
        const double width = hi - lo;
        (pos ? end_pos : end_neg) = st;
        (pos ? have_pos : have_neg) = true;
        failed += st.converged ? 0 : 1;
        done = consistency(g, Dn, period) <= ip.root_tol || width <= 1e-5 * (hi + 1.0) ||
               (!st.converged && (total >= ip.step_budget || failed >= ip.unsettled_rounds));
    }
    // a bracket closed on a jump of g: the mixture of its two end states
    // whose delays agree on average (w g_lo + (1 - w) g_hi = 0)
    if (need && consistency(st.implied - st.delay, st.delay, period) > ip.mix_tol && have_pos &&
        have_neg) {
        const double ga = end_pos.implied - end_pos.delay, gz = end_neg.implied - end_neg.delay;
        if (ga > 0 && 0 > gz) {
            const double w = -gz / (ga - gz);
            st = end_pos;
            st.blend(w, end_neg);
        }
    }
    st.iterations = total;
    if (!st.hist_xp.empty()) {
        st.x_hist.resize(static_cast<std::size_t>(std::max(c.N, 1L)));
        fill_history(st.hist_xp, st.hist_fp, 1, c.N, st.x_hist.data());
    }
}

}  // namespace mva
