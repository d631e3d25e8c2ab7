#include "mva.hpp"

#include <algorithm>
#include <cmath>

namespace mva {

Result recursion(const double* v, const double* S, const double* A, const double* C,
                 const double* Uo, const double* V, std::size_t m, double Z, long N) {
    Result res;
    res.x_hist.assign(static_cast<std::size_t>(std::max(N, 0L)), 0.0);
    res.r.assign(m, 0.0);
    res.q.assign(m, 0.0);
    res.u.assign(m, 0.0);
    const unsigned char active = 1;
    recursion_batch(1, m, v, S, A, C, Uo, V, &Z, &N, &active, std::max(N, 0L),
                    res.x_hist.data(), res.r.data(), res.q.data(), res.u.data());
    return res;
}

Result schweitzer(const double* v, const double* S, const double* A, const double* C,
                  const double* Uo, const double* V, std::size_t m, double Z, long N,
                  double tol, int max_iter) {
    Result res;
    res.x_hist.assign(1, 0.0);
    res.r.assign(m, 0.0);
    res.q.assign(m, 0.0);
    res.u.assign(m, 0.0);
    if (N <= 0) return res;
    std::vector<double> slow(m);
    const double n = static_cast<double>(N);
    const double f = (n - 1.0) / n;
    for (std::size_t i = 0; i < m; ++i) {
        slow[i] = 1.0 / std::max(1.0 - Uo[i], 1e-9);
        res.q[i] = n / static_cast<double>(m);          // spread the clients to start
    }
    double x = 0.0;
    for (int it = 0; it < max_iter; ++it) {
        double cycle = Z;
        for (std::size_t i = 0; i < m; ++i) {
            const double q_seen = f * res.q[i];
            const double u_seen = f * x * v[i] * A[i];
            res.r[i] = (S[i] + A[i] * q_seen + C[i] * u_seen) * slow[i] + V[i];
            cycle += v[i] * res.r[i];
        }
        const double x_new = n / cycle;
        double worst = std::abs(x_new - x) / x_new;
        for (std::size_t i = 0; i < m; ++i) {
            const double q_new = x_new * v[i] * res.r[i];
            worst = std::max(worst, std::abs(q_new - res.q[i]) / n);
            res.q[i] = q_new;
            res.u[i] = x_new * v[i] * A[i];
        }
        x = x_new;
        if (worst < tol) break;
    }
    res.x_hist[0] = x;
    return res;
}

namespace {

// One rack's recursion over its k visited stations, packed contiguously so
// the station loop vectorises (AVX2 where the CPU has it, chosen at load
// time; the sum into the cycle time is reassociated, -fopenmp-simd: results
// differ from the plain loop in the last bits only). With w_j = v_j r_j(n-1),
// Q_j(n-1) = X(n-1) w_j and U_j(n-1) = X(n-1) v_j A_j, so one pass per
// population gives the reference's r_j(n) = (S + A Q + C U)_j / (1 - Uo_j) + V_j:
//   r_j(n) = S'_j + X(n-1) (A'_j w_j + CvA'_j),
// S' = S/(1-Uo) + V, A' = A/(1-Uo), CvA' = C v A/(1-Uo). Twice as fast as
// the station-by-station loop over the 1,000-row plan's solves.
// On return qq holds Q_j(N), rr r_j(N), xh X(1..N).
__attribute__((target_clones("avx2", "default")))
void one_rack(std::size_t k, const double* s1, const double* a1, const double* c1,
              const double* vv, double* rr, double* qq, double z, long N, double* xh) {
    double x = 0.0;
    for (std::size_t j = 0; j < k; ++j) qq[j] = 0.0;      // w_j until the end
    for (long n = 1; n <= N; ++n) {
        double cycle = z;
#pragma omp simd reduction(+ : cycle)
        for (std::size_t j = 0; j < k; ++j) {
            const double r = s1[j] + x * (a1[j] * qq[j] + c1[j]);
            rr[j] = r;
            const double w = vv[j] * r;
            qq[j] = w;
            cycle += w;
        }
        x = static_cast<double>(n) / cycle;
        xh[n - 1] = x;
    }
    for (std::size_t j = 0; j < k; ++j) qq[j] *= x;
}

}  // namespace

void recursion_batch(std::size_t R, std::size_t m, const double* v, const double* S,
                     const double* A, const double* C, const double* Uo, const double* V,
                     const double* Z, const long* N, const unsigned char* active, long Nmax,
                     double* x_hist, double* r_out, double* q, double* u) {
    std::vector<double> s1(m), a1(m), c1(m), vv(m), rr(m), qq(m);
    std::vector<std::size_t> visited;     // stations this rack visits (the rest is padding or idle)
    visited.reserve(m);
    for (std::size_t row = 0; row < R; ++row) {
        if (!active[row]) continue;
        const std::size_t o = row * m;
        double* ro = r_out + o;
        double* qo = q + o;
        double* uo = u + o;
        visited.clear();
        for (std::size_t i = 0; i < m; ++i) {
            const double slow = 1.0 / std::max(1.0 - Uo[o + i], 1e-9);
            qo[i] = 0.0;
            uo[i] = 0.0;
            // an unvisited station never holds a client: its residence stays S/(1-Uo) + V
            ro[i] = S[o + i] * slow + V[o + i];
            if (v[o + i] != 0.0) {
                const std::size_t j = visited.size();
                visited.push_back(i);
                s1[j] = S[o + i] * slow + V[o + i];
                a1[j] = A[o + i] * slow;
                c1[j] = C[o + i] * v[o + i] * A[o + i] * slow;
                vv[j] = v[o + i];
                qq[j] = 0.0;
            }
        }
        const std::size_t k = visited.size();
        double* xh = x_hist + row * static_cast<std::size_t>(Nmax);
        if (N[row] <= 0) continue;
        one_rack(k, s1.data(), a1.data(), c1.data(), vv.data(), rr.data(), qq.data(), Z[row],
                 N[row], xh);
        const double x = xh[N[row] - 1];
        for (std::size_t j = 0; j < k; ++j) {
            const std::size_t i = visited[j];
            ro[i] = rr[j];
            qo[i] = qq[j];
            uo[i] = x * v[o + i] * A[o + i];
        }
    }
}

void peers_expectation(const double* u, std::size_t n, const double* g, double* dot,
                       double* total) {
    // f: how many of all n workers are busy (the numpy reference's update,
    // f[j] = f[j] (1 - p) + f[j - 1] p, from the top so f[j - 1] is the old one)
    std::vector<double> f(n + 1, 0.0);
    f[0] = 1.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double p = u[i];
        for (std::size_t j = i + 1; j >= 1; --j) f[j] = f[j] * (1.0 - p) + f[j - 1] * p;
        f[0] *= 1.0 - p;
    }
    // Workers divided forward (u <= 1/2) and backward; k outer, workers inner,
    // so each step is one pass over independent workers (vectorised), not a
    // chain of dependent divisions per worker.
    std::vector<std::size_t> lo_i, hi_i;
    for (std::size_t i = 0; i < n; ++i) (u[i] <= 0.5 ? lo_i : hi_i).push_back(i);
    for (int side = 0; side < 2; ++side) {
        const std::vector<std::size_t>& who = side == 0 ? lo_i : hi_i;
        const std::size_t w = who.size();
        if (w == 0) continue;
        std::vector<double> p(w), q(w), d(w, 0.0), t(w, 0.0);
        for (std::size_t j = 0; j < w; ++j) p[j] = u[who[j]];
        for (std::size_t step = 0; step < n; ++step) {
            if (side == 0) {            // f[k] = (1 - p) q[k] + p q[k - 1], k = step
                const std::size_t k = step;
                const double fk = f[k], gk = g[k];
                for (std::size_t j = 0; j < w; ++j) {
                    const double qk = (fk - (k > 0 ? p[j] * q[j] : 0.0)) / (1.0 - p[j]);
                    q[j] = qk;
                    const double c = qk > 0.0 ? qk : 0.0;
                    d[j] += c * gk;
                    t[j] += c;
                }
            } else {                    // the same from the top: q[k] from q[k + 1], k = n - 1 - step
                const std::size_t k = n - 1 - step;
                const double fk = f[k + 1], gk = g[k];
                for (std::size_t j = 0; j < w; ++j) {
                    const double qk = (fk - (step > 0 ? (1.0 - p[j]) * q[j] : 0.0)) / p[j];
                    q[j] = qk;
                    const double c = qk > 0.0 ? qk : 0.0;
                    d[j] += c * gk;
                    t[j] += c;
                }
            }
        }
        for (std::size_t j = 0; j < w; ++j) {
            dot[who[j]] = d[j];
            total[who[j]] = t[j];
        }
    }
}

}  // namespace mva
