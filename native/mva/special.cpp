// Regularized upper incomplete gamma function Q(a, x) for the late-reply sums
// of the compiled analytic step (the reference is scipy.special.gammaincc).
//
// The usual pair: below x = a + 1 the series of P(a, x) and Q = 1 - P, above
// it Lentz's continued fraction of Q. Both carry the factor x^a e^-x / Gamma(a),
// whose logarithm a ln x - x - ln Gamma(a) loses ~1e-11 to cancellation when
// computed as written for a shape of 10^4 (the three terms are ~10^5 each).
// For a >= 10 it is taken instead from Stirling's series, as
//   a (ln(1 + u) - u) + ln(a / 2 pi) / 2 - sigma(a),   u = (x - a) / a,
// whose terms are small where Q is not (x near a): relative error ~1e-14.
// Past a = 10^4 both need O(sqrt(a)) terms (a deterministic service over a
// deep queue has shapes of 10^8), and Temme's uniform expansion takes over:
//   Q = erfc(eta sqrt(a/2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) (c0(eta) + c1(eta) / a),
// eta^2 / 2 = lambda - 1 - ln lambda, lambda = x / a, sign of lambda - 1; the
// next term is O(a^-2) = 1e-8 of the last, below 1e-12 of Q.
#include "special.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mva {

namespace {

constexpr double kEps = 1e-16;
constexpr double kTiny = 1e-300;
constexpr double kLn2Pi = 1.8378770664093454836;

// ln(1 + u) - u without the cancellation of the two near u = 0
double log1p_minus(double u) {
    if (std::abs(u) > 0.1) return std::log1p(u) - u;
    // -u^2/2 + u^3/3 - u^4/4 + ...
    double term = -u * u, sum = 0.0;
    for (int n = 2; n < 60; ++n) {
        const double add = term / n;
        sum += add;
        if (std::abs(add) <= kEps * std::abs(sum)) break;
        term *= -u;
    }
    return sum;
}

// sigma(a) = ln Gamma(a) - ((a - 1/2) ln a - a + ln(2 pi) / 2), Stirling's remainder
double stirling_rest(double a) {
    const double r = 1.0 / a, r2 = r * r;
    return r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (1.0 / 1680.0 -
                r2 * (1.0 / 1188.0 - r2 * (691.0 / 360360.0))))));
}

// ln(x^a e^-x / Gamma(a))
double log_prefactor(double a, double x) {
    if (a >= 10.0) {
        const double u = (x - a) / a;
        return a * log1p_minus(u) + 0.5 * (std::log(a) - kLn2Pi) - stirling_rest(a);
    }
    return a * std::log(x) - x - std::lgamma(a);
}

// P(a, x) by its series, x < a + 1; f = exp(log_prefactor(a, x))
double series_p(double a, double x, double f) {
    double term = 1.0 / a, sum = term, ap = a;
    for (int n = 0; n < 100000; ++n) {
        ap += 1.0;
        term *= x / ap;
        sum += term;
        if (term <= sum * kEps) break;
    }
    return sum * f;
}

// Q(a, x) by Lentz's continued fraction, x >= a + 1; f = exp(log_prefactor(a, x))
double fraction_q(double a, double x, double f) {
    double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 100000; ++i) {
        const double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (std::abs(d) < kTiny) d = kTiny;
        c = b + an / c;
        if (std::abs(c) < kTiny) c = kTiny;
        d = 1.0 / d;
        const double del = d * c;
        h *= del;
        if (std::abs(del - 1.0) <= kEps) break;
    }
    return f * h;
}

// Temme's uniform asymptotic expansion, two terms (DLMF 8.12.3, 8.12.8)
double temme_q(double a, double x) {
    const double lam = x / a, d = lam - 1.0;
    const double eta2 = -2.0 * log1p_minus(d);                  // 2 (lambda - 1 - ln lambda)
    const double eta = std::copysign(std::sqrt(std::max(eta2, 0.0)), d);
    double c0, c1;
    if (std::abs(eta) < 1e-3) {
        // the series about eta = 0: the closed forms below cancel there
        c0 = -1.0 / 3.0 + eta / 12.0 - eta * eta * 2.0 / 135.0;
        c1 = -1.0 / 540.0 - eta / 288.0;
    } else {
        c0 = 1.0 / d - 1.0 / eta;
        c1 = 1.0 / (eta * eta * eta) - 1.0 / (d * d * d) - 1.0 / (d * d) - 1.0 / (12.0 * d);
    }
    const double lead = 0.5 * std::erfc(eta * std::sqrt(0.5 * a));
    return lead + std::exp(-0.5 * a * eta2) / std::sqrt(2.0 * M_PI * a) * (c0 + c1 / a);
}

}  // namespace

double gamma_q(double a, double x) {
    if (std::isnan(a) || std::isnan(x) || a <= 0.0 || x < 0.0)
        return std::numeric_limits<double>::quiet_NaN();
    if (x == 0.0) return 1.0;
    if (std::isinf(x)) return 0.0;
    if (a > 1e4) return temme_q(a, x);
    // Far in either tail the answer is known before any series is summed (the
    // late-reply sums ask mostly there: each timer meets every queue-length
    // bin, and only the bins whose wait is near the timer matter):
    // with f = x^a e^-x / Gamma(a), the factor both sums need anyway:
    // * x >= a + 1: Q <= f / (x - a + 1) <= f / 2 (the continued fraction's
    //   first convergent bounds it), so f < 1e-30 leaves Q below 5e-31: 0,
    //   an absolute error no sum can see;
    // * x < a + 1: P <= f (a + 1) / (a (a + 1 - x)) (the series' terms fall
    //   at least geometrically), and below 1e-17 the difference 1 - P rounds
    //   to 1 exactly: the same double as summing it.
    const double f = std::exp(log_prefactor(a, x));
    if (x < a + 1.0) {
        if (f * (a + 1.0) < 1e-17 * a * (a + 1.0 - x)) return 1.0;
        return 1.0 - series_p(a, x, f);
    }
    if (f < 1e-30) return 0.0;
    return fraction_q(a, x, f);
}

}  // namespace mva
