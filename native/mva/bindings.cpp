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

using Arr2 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using LArr = py::array_t<long, py::array::c_style | py::array::forcecast>;
using BArr = py::array_t<unsigned char, py::array::c_style | py::array::forcecast>;

py::tuple run_batch(Arr2 v, Arr2 S, Arr2 A, Arr2 C, Arr2 Uo, Arr2 V, Arr Z, LArr N, BArr active,
                    py::array_t<double, py::array::c_style> x_hist,
                    py::array_t<double, py::array::c_style> r, py::array_t<double, py::array::c_style> q,
                    py::array_t<double, py::array::c_style> u) {
    if (v.ndim() != 2) throw py::value_error("v must be 2-d (racks x stations)");
    const std::size_t R = static_cast<std::size_t>(v.shape(0)), m = static_cast<std::size_t>(v.shape(1));
    for (const Arr2* a : {&S, &A, &C, &Uo, &V})
        if (a->ndim() != 2 || static_cast<std::size_t>(a->shape(0)) != R ||
            static_cast<std::size_t>(a->shape(1)) != m)
            throw py::value_error("station arrays must all be racks x stations");
    if (static_cast<std::size_t>(Z.shape(0)) != R || static_cast<std::size_t>(N.shape(0)) != R ||
        static_cast<std::size_t>(active.shape(0)) != R)
        throw py::value_error("Z, N and active need one entry per rack");
    const long Nmax = static_cast<long>(x_hist.shape(1));
    for (std::size_t k = 0; k < R; ++k)
        if (N.data()[k] > Nmax) throw py::value_error("x_hist is narrower than a population");
    {
        py::gil_scoped_release release;
        mva::recursion_batch(R, m, v.data(), S.data(), A.data(), C.data(), Uo.data(), V.data(),
                             Z.data(), N.data(), active.data(), Nmax, x_hist.mutable_data(),
                             r.mutable_data(), q.mutable_data(), u.mutable_data());
    }
    return py::make_tuple(x_hist, r, q, u);
}

py::tuple run_peers(Arr u, Arr g) {
    if (u.ndim() != 1 || g.ndim() != 1 || g.shape(0) != u.shape(0))
        throw py::value_error("u and g must be 1-d arrays of the same length");
    const std::size_t n = static_cast<std::size_t>(u.shape(0));
    py::array_t<double> dot(static_cast<py::ssize_t>(n)), total(static_cast<py::ssize_t>(n));
    {
        py::gil_scoped_release release;
        mva::peers_expectation(u.data(), n, g.data(), dot.mutable_data(), total.mutable_data());
    }
    return py::make_tuple(dot, total);
}

py::array_t<double> run_overflow(Arr2 cum, Arr logd, Arr c, LArr rows, double cut) {
    if (cum.ndim() != 2) throw py::value_error("cum must be 2-d (racks x queue lengths)");
    const std::size_t R = static_cast<std::size_t>(cum.shape(0));
    const std::size_t width = static_cast<std::size_t>(cum.shape(1));
    const std::size_t P = static_cast<std::size_t>(logd.shape(0));
    if (logd.ndim() != 1 || c.ndim() != 1 || rows.ndim() != 1 ||
        static_cast<std::size_t>(c.shape(0)) != P || static_cast<std::size_t>(rows.shape(0)) != P)
        throw py::value_error("logd, c and rows must be 1-d arrays of the same length");
    for (std::size_t p = 0; p < P; ++p)
        if (rows.data()[p] < 0 || static_cast<std::size_t>(rows.data()[p]) >= R)
            throw py::value_error("rows must index rows of cum");
    py::array_t<double> out(static_cast<py::ssize_t>(P));
    {
        py::gil_scoped_release release;
        mva::overflow_pairs(cum.data(), width, logd.data(), c.data(), rows.data(), P, cut,
                            out.mutable_data());
    }
    return out;
}

py::array_t<double> run_throughput(Arr a0, Arr a1, Arr b, Arr Z, Arr n, int max_steps) {
    if (a0.ndim() != 3 || a1.ndim() != 3 || b.ndim() != 3)
        throw py::value_error("a0, a1 and b must be 3-d (networks x populations x stations)");
    const std::size_t R = static_cast<std::size_t>(a0.shape(0)), G = static_cast<std::size_t>(a0.shape(1)),
                      m = static_cast<std::size_t>(a0.shape(2));
    for (const Arr* a : {&a1, &b})
        if (static_cast<std::size_t>(a->shape(0)) != R || static_cast<std::size_t>(a->shape(1)) != G ||
            static_cast<std::size_t>(a->shape(2)) != m)
            throw py::value_error("a0, a1 and b must have the same shape");
    if (Z.ndim() != 1 || static_cast<std::size_t>(Z.shape(0)) != R)
        throw py::value_error("Z needs one entry per network");
    if (n.ndim() != 2 || static_cast<std::size_t>(n.shape(0)) != R ||
        static_cast<std::size_t>(n.shape(1)) != G)
        throw py::value_error("n must be networks x populations");
    py::array_t<double> out({static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(G)});
    {
        py::gil_scoped_release release;
        mva::throughput_roots(R, G, m, a0.data(), a1.data(), b.data(), Z.data(), n.data(),
                              max_steps, out.mutable_data());
    }
    return out;
}

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
    mod.def("recursion_batch", &run_batch,
            "Many racks at once; fills x_hist (R x Nmax), r, q, u (R x m) in place",
            py::arg("v"), py::arg("S"), py::arg("A"), py::arg("C"), py::arg("Uo"), py::arg("V"),
            py::arg("Z"), py::arg("N"), py::arg("active"), py::arg("x_hist"), py::arg("r"),
            py::arg("q"), py::arg("u"));
    mod.def("peers_expectation", &run_peers,
            "Per worker: (sum_k q_i[k] g[k], sum_k q_i[k]) over the busy-peer distribution",
            py::arg("u"), py::arg("g"));
    mod.def("overflow_pairs", &run_overflow,
            "Per station: E[(queue - c)+] from its rack's log tail terms (analytic._overflow_pairs)",
            py::arg("cum"), py::arg("logd"), py::arg("c"), py::arg("rows"), py::arg("cut"));
    mod.def("throughput_roots", &run_throughput,
            "Schweitzer throughput per network and population (mva_core._throughput)",
            py::arg("a0"), py::arg("a1"), py::arg("b"), py::arg("Z"), py::arg("n"),
            py::arg("max_steps"));
}
