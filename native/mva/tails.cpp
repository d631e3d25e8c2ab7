// Queue-length tail sums of the analytic solver (model/solvers/analytic.py,
// _overflow_pairs, is the reference and holds the equations).
#include <cmath>
#include <cstddef>
#include <limits>

#include "mva.hpp"

namespace mva {

void overflow_pairs(const double* cum, std::size_t width, const double* logd, const double* c,
                    const long* rows, std::size_t P, double cut, double* out) {
    for (std::size_t p = 0; p < P; ++p) {
        const double cp = c[p];
        if (std::isnan(cp)) {
            out[p] = std::numeric_limits<double>::quiet_NaN();
            continue;
        }
        const double c0 = cp > 0.0 ? cp : 0.0;
        // m0 = floor(c0), at most width (a room past the last column overflows nothing)
        const std::size_t m0 = c0 >= static_cast<double>(width)
                                   ? width
                                   : static_cast<std::size_t>(std::floor(c0));
        const double* row = cum + static_cast<std::size_t>(rows[p]) * width;
        const double ld = logd[p];
        // T[k] = P(at least k there) = exp(min(k log D + cum[k], 0)); 0 where
        // cum[k] is not finite or the sum is NaN (0 x inf), as numpy's where/nan_to_num
        auto tail = [&](std::size_t k) {
            const double ck = row[k];
            if (!std::isfinite(ck)) return 0.0;
            const double t = static_cast<double>(k) * ld + ck;
            if (std::isnan(t)) return 0.0;
            return t > 0.0 ? 1.0 : std::exp(t);
        };
        // sum_{k >= m0 + 2} T[k], added from the last column down as the
        // reference's reversed cumulative sum does (same rounding). The run of
        // columns at the top whose log tail k log D + cum[k] is below ``cut``
        // counts as 0 without an exp: most of a deep queue's columns, and a
        // third of the plan's solving time went to their exps.
        std::size_t k = width;
        while (k > m0 + 1) {
            const double t = static_cast<double>(k - 1) * ld + row[k - 1];
            if (!(t < cut)) break;          // NaN too: the reference keeps it (as 0)
            --k;
        }
        // columns m0 + 1 .. k - 1 are summed; k .. width - 1 are the cut run
        double suffix = 0.0;
        for (std::size_t j = k; j > m0 + 2; --j) suffix += tail(j - 1);
        const double first = m0 + 1 < k ? tail(m0 + 1) : 0.0;
        const double base = cp < 0.0 ? -cp : 0.0;
        out[p] = base + first * (static_cast<double>(m0 + 1) - c0) + suffix;
    }
}

}  // namespace mva
