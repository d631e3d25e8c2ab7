// Special functions of the compiled analytic step (rack.cpp). scipy.special is
// the reference (gammaincc, gammaln); tests/model/test_rack_step.py holds the
// two together. No Python headers here.
#pragma once

namespace mva {

// Q(a, x) = Gamma(a, x) / Gamma(a), the regularized upper incomplete gamma
// function (scipy.special.gammaincc), for a > 0, x >= 0.
double gamma_q(double a, double x);

}  // namespace mva
