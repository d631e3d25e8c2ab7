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
    std::vector<double> slow(m), vA(m);
    for (std::size_t i = 0; i < m; ++i) {
        slow[i] = 1.0 / std::max(1.0 - Uo[i], 1e-9);
        vA[i] = v[i] * A[i];
        res.r[i] = S[i] * slow[i];
    }
    for (long n = 1; n <= N; ++n) {
        double cycle = Z;
        for (std::size_t i = 0; i < m; ++i) {
            res.r[i] = (S[i] + A[i] * res.q[i] + C[i] * res.u[i]) * slow[i] + V[i];
            cycle += v[i] * res.r[i];
        }
        const double x = static_cast<double>(n) / cycle;
        for (std::size_t i = 0; i < m; ++i) {
            res.q[i] = x * v[i] * res.r[i];
            res.u[i] = x * vA[i];
        }
        res.x_hist[static_cast<std::size_t>(n - 1)] = x;
    }
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

void recursion_batch(std::size_t R, std::size_t m, const double* v, const double* S,
                     const double* A, const double* C, const double* Uo, const double* V,
                     const double* Z, const long* N, const unsigned char* active, long Nmax,
                     double* x_hist, double* r_out, double* q, double* u) {
    std::vector<double> slow(m), vA(m);
    std::vector<std::size_t> visited;     // stations this rack visits (the rest is padding or idle)
    visited.reserve(m);
    for (std::size_t row = 0; row < R; ++row) {
        if (!active[row]) continue;
        const std::size_t o = row * m;
        double* rr = r_out + o;
        double* qq = q + o;
        double* uu = u + o;
        visited.clear();
        for (std::size_t i = 0; i < m; ++i) {
            slow[i] = 1.0 / std::max(1.0 - Uo[o + i], 1e-9);
            vA[i] = v[o + i] * A[o + i];
            qq[i] = 0.0;
            uu[i] = 0.0;
            // an unvisited station never holds a client: its residence stays S/(1-Uo) + V
            rr[i] = S[o + i] * slow[i] + V[o + i];
            if (v[o + i] != 0.0) visited.push_back(i);
        }
        double* xh = x_hist + row * static_cast<std::size_t>(Nmax);
        for (long n = 1; n <= N[row]; ++n) {
            double cycle = Z[row];
            for (std::size_t i : visited) {
                rr[i] = (S[o + i] + A[o + i] * qq[i] + C[o + i] * uu[i]) * slow[i] + V[o + i];
                cycle += v[o + i] * rr[i];
            }
            const double x = static_cast<double>(n) / cycle;
            for (std::size_t i : visited) {
                qq[i] = x * v[o + i] * rr[i];
                uu[i] = x * vA[i];
            }
            xh[n - 1] = x;
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
