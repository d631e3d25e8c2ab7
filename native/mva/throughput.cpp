// Schweitzer throughput root of the analytic solver (model/solvers/mva_core.py,
// _throughput_numpy, is the reference and holds the equations and the reasons).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "mva.hpp"

namespace mva {

void throughput_roots(std::size_t R, std::size_t G, std::size_t m, const double* a0,
                      const double* a1, const double* b, const double* Z, const double* n,
                      int max_steps, double* out, const double* weight) {
    // weight[i]: how many identical stations station i stands for (worker
    // classes, lump.cpp); nullptr: one each
    const double inf = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < R; ++r) {
        const double z = Z[r];
        for (std::size_t g = 0; g < G; ++g) {
            const std::size_t row = r * G + g;
            const double* A0 = a0 + row * m;
            const double* A1 = a1 + row * m;
            const double* B = b + row * m;
            const double nn = n[row];
            double bs = -inf, sum_a0 = 0.0;
            for (std::size_t i = 0; i < m; ++i) {
                bs = std::max(bs, B[i]);
                sum_a0 += (weight ? weight[i] : 1.0) * A0[i];
            }
            const double sat = bs > 0.0 ? 1.0 / bs : inf;
            double lo = 0.0;
            double hi = std::min(sat, nn / (z + sum_a0));
            double x = hi;
            for (int step = 0; step < max_steps; ++step) {
                // h(X) = (1 - X b*) g(X): g's sign below the bound, no pole there
                const double e = 1.0 - x * bs;
                double pr = 0.0, dsum = 0.0;
                for (std::size_t i = 0; i < m; ++i) {
                    const double p = x * (A0[i] + A1[i] * x);
                    double d, rr;
                    if (B[i] >= bs) {           // the station(s) whose pole h removes
                        d = 0.0;
                        rr = 1.0;
                    } else {
                        d = 1.0 / (1.0 - x * B[i]);
                        rr = (1.0 - x * bs) * d;
                    }
                    const double wi = weight ? weight[i] : 1.0;
                    pr += wi * p * rr;
                    dsum += wi * ((A0[i] + 2.0 * A1[i] * x) * rr + p * (B[i] - bs) * d * d);
                }
                const double h = e * (x * z - nn) + pr;
                const double dh = -bs * (x * z - nn) + e * z + dsum;
                if (!(h <= 0.0))                // NaN only at a pole: above the root
                    hi = std::min(hi, x);
                else
                    lo = std::max(lo, x);
                const double dx = h / dh;
                const double xn = x - dx;
                const bool tiny = std::fabs(dx) <= 4e-16 * x;
                const bool root = tiny && std::fabs(h) <= 1e-9 * (e * (x * z + nn) + pr);
                const bool newton = root || (std::isfinite(xn) && xn > lo && xn < hi && !tiny);
                x = newton ? xn : 0.5 * (lo + hi);
                if (root || hi - lo <= 4e-16 * hi) break;
            }
            out[row] = x;
        }
    }
}

}  // namespace mva
