// pybind11 bindings of native/mva: module native._mva.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "mva.hpp"

namespace py = pybind11;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace {

py::array_t<double> to_array(const std::vector<double>& v) {
    py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

void check(const Arr& a, std::size_t m, const char* name) {
    if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != m)
        throw py::value_error(std::string(name) + " must be a 1-d array as long as v");
}

py::tuple run(bool exact, Arr v, Arr S, Arr A, Arr C, Arr Uo, Arr V, double Z, long N,
              double tol, int max_iter) {
    const std::size_t m = static_cast<std::size_t>(v.shape(0));
    check(S, m, "S"); check(A, m, "A"); check(C, m, "C"); check(Uo, m, "Uo"); check(V, m, "V");
    mva::Result r;
    {
        py::gil_scoped_release release;
        r = exact ? mva::recursion(v.data(), S.data(), A.data(), C.data(), Uo.data(), V.data(), m, Z, N)
                  : mva::schweitzer(v.data(), S.data(), A.data(), C.data(), Uo.data(), V.data(), m, Z,
                                    N, tol, max_iter);
    }
    return py::make_tuple(to_array(r.x_hist), to_array(r.r), to_array(r.q), to_array(r.u));
}

}  // namespace

PYBIND11_MODULE(_mva, mod) {
    mod.doc() = "Closed-network MVA recursion of the analytic solver (model/solvers/mva_core.py)";
    mod.def("recursion",
            [](Arr v, Arr S, Arr A, Arr C, Arr Uo, Arr V, double Z, long N) {
                return run(true, v, S, A, C, Uo, V, Z, N, 0.0, 0);
            },
            py::arg("v"), py::arg("S"), py::arg("A"), py::arg("C"), py::arg("Uo"), py::arg("V"),
            py::arg("Z"), py::arg("N"));
    mod.def("schweitzer",
            [](Arr v, Arr S, Arr A, Arr C, Arr Uo, Arr V, double Z, long N, double tol, int max_iter) {
                return run(false, v, S, A, C, Uo, V, Z, N, tol, max_iter);
            },
            py::arg("v"), py::arg("S"), py::arg("A"), py::arg("C"), py::arg("Uo"), py::arg("V"),
            py::arg("Z"), py::arg("N"), py::arg("tol") = 1e-10, py::arg("max_iter") = 100000);
}
