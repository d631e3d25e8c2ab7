// Closed-network mean value analysis for the analytic solver (model/solvers/mva_core.py
// holds the reference implementation and the equations; this is the same recursion,
// compiled). No Python headers here: bindings.cpp wraps it.
#pragma once
#include <cstddef>
#include <vector>

namespace mva {

struct Result {
    std::vector<double> x_hist;   // throughput at populations 1..N
    std::vector<double> r;        // residence per visit at population N
    std::vector<double> q;        // mean clients per station at N
    std::vector<double> u;        // utilisation per station at N
};

// r_i(n) = (S_i + A_i Q_i(n-1) + C_i U_i(n-1)) / (1 - Uo_i) + V_i
// X(n)   = n / (Z + sum_i v_i r_i(n)),  Q_i(n) = X(n) v_i r_i(n),  U_i(n) = X(n) v_i A_i
Result recursion(const double* v, const double* S, const double* A, const double* C,
                 const double* Uo, const double* V, std::size_t m, double Z, long N);

// Schweitzer-Bard approximation of the same network at population N only:
// Q_i(N-1) ~ (N-1)/N Q_i(N), iterated to a fixed point. x_hist holds X(N) alone.
Result schweitzer(const double* v, const double* S, const double* A, const double* C,
                  const double* Uo, const double* V, std::size_t m, double Z, long N,
                  double tol, int max_iter);

// Many networks at once (row r: m stations, population N[r]); arrays are row-major
// (R x m). Rows with active[r] == 0 are skipped (their outputs are left as given).
// x_hist is R x Nmax (entries past N[r] are not written); r_out, q, u are R x m.
void recursion_batch(std::size_t R, std::size_t m, const double* v, const double* S,
                     const double* A, const double* C, const double* Uo, const double* V,
                     const double* Z, const long* N, const unsigned char* active, long Nmax,
                     double* x_hist, double* r_out, double* q, double* u);

// CPU contention of one machine's n workers, busy independently with
// probabilities u: for each worker i, the distribution q_i of how many of the
// other n - 1 are busy (Poisson-binomial of u without u_i), reduced against g
// (n entries, k = 0..n-1): dot[i] = sum_k max(q_i[k], 0) g[k] and
// total[i] = sum_k max(q_i[k], 0). q_i comes from dividing worker i out of the
// distribution of all n, forward from k = 0 where u_i <= 1/2 and backward
// where not (model/rack/service.py, _peers_by_division, is the reference).
void peers_expectation(const double* u, std::size_t n, const double* g, double* dot,
                       double* total);

// Block overflow of P stations at once (tails.cpp): station p is in rack
// rows[p] (a row of cum, R x width, the log product-form tail terms), its
// queue-length tail is T[k] = exp(min(k logd[p] + cum[rows[p], k], 0)), and
// out[p] = max(0, -c) + T[m0 + 1] (m0 + 1 - c0) + sum_{k >= m0 + 2} T[k] with
// c0 = max(c[p], 0), m0 = floor(c0): E[(queue - c)+], the clients left over
// when a room of c clients fills. The top run of columns whose
// k logd[p] + cum[rows[p], k] is below ``cut`` counts as T = 0.
void overflow_pairs(const double* cum, std::size_t width, const double* logd, const double* c,
                    const long* rows, std::size_t P, double cut, double* out);

// The Schweitzer throughput of R networks at G populations each (throughput.cpp):
// for row (r, g), the root of X Z[r] + sum_i p_i(X) / (1 - X b_i) - n[r, g] below
// 1 / max_i b_i, p_i = X (a0_i + a1_i X), by Newton on the pole-free form with a
// bracket (model/solvers/mva_core.py, _throughput_numpy, is the reference).
// a0, a1, b are R x G x m, n and out are R x G (row-major). weight (m, or
// nullptr for one each): the number of identical stations each one stands for.
void throughput_roots(std::size_t R, std::size_t G, std::size_t m, const double* a0,
                      const double* a1, const double* b, const double* Z, const double* n,
                      int max_steps, double* out, const double* weight = nullptr);

}  // namespace mva
