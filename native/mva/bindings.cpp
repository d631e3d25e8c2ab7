// pybind11 bindings of native/mva: module native._mva.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "mva.hpp"
#include "rack.hpp"
#include "special.hpp"

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


// ---------------------------------------------------------------- the compiled rack step
// Arrays come in dicts keyed by the _Batch / _State field names
// (model/solvers/rack_step.py builds them); state and out arrays are
// written in place, so they must already be C-contiguous float64 (int64 /
// uint8 where noted) of the right size: nothing is copied silently.
namespace {

template <typename T>
py::array_t<T> field(const py::dict& d, const char* key, std::size_t size, bool check_size = true) {
    if (!d.contains(key)) throw py::key_error(std::string("missing array ") + key);
    py::object o = d[key];
    if (!py::isinstance<py::array>(o) || !py::array(o).dtype().is(py::dtype::of<T>()))
        throw py::type_error(std::string(key) + ": expected an array of " +
                             std::string(py::str(py::dtype::of<T>())));
    auto a = py::reinterpret_borrow<py::array_t<T>>(o);
    if (!(a.flags() & py::array::c_style))
        throw py::value_error(std::string(key) + " must be C-contiguous");
    if (check_size && static_cast<std::size_t>(a.size()) != size)
        throw py::value_error(std::string(key) + ": expected " + std::to_string(size) + " entries, got " +
                              std::to_string(a.size()));
    return a;
}

}  // namespace

// The racks ``racks`` of a batch solved (mva::solve_rack), their state read
// from and written back to the arrays of ``st`` (R x M per worker, R per
// rack, R x mach_per per machine, R x Nmax for x_hist, kCycFields x R x M
// for cyc); D0: one per rack run, NaN to start cold.
void run_solve(py::dict consts, py::dict st, py::array_t<long> racks, py::array_t<double> D0,
               py::dict params) {
    auto s = field<double>(consts, "s", 0, false);
    if (s.ndim() != 2) throw py::value_error("s must be 2-d (racks x workers)");
    const std::size_t R = static_cast<std::size_t>(s.shape(0)), M = static_cast<std::size_t>(s.shape(1));
    const std::size_t RM = R * M;
    const std::size_t mach_per = consts["mach_per"].cast<std::size_t>();
    auto x_hist = field<double>(st, "x_hist", 0, false);
    if (x_hist.ndim() != 2 || static_cast<std::size_t>(x_hist.shape(0)) != R)
        throw py::value_error("x_hist must be racks x populations");
    const std::size_t Nmax = static_cast<std::size_t>(x_hist.shape(1));
    auto wf = field<double>(consts, "wf", RM), ev = field<double>(consts, "ev", RM),
         cost = field<double>(consts, "cost", RM), runm = field<double>(consts, "run_memtables", RM),
         rk = field<double>(consts, "rack", R * mva::kRackFields);
    auto mach = field<long>(consts, "mach", RM);
    // per worker (R x M; the order of Snap::workers), per rack (R), per machine
    const char* worker_keys[] = {"util", "p_drop", "dup", "writes", "fdb", "cb", "stop", "q",
                                 "S_req", "stretch", "wait_extra", "demand", "block"};
    static_assert(sizeof(worker_keys) / sizeof(worker_keys[0]) ==
                  std::tuple_size_v<decltype(std::declval<mva::Snap&>().workers())>);
    std::vector<py::array_t<double>> wk;
    for (const char* k : worker_keys) wk.push_back(field<double>(st, k, RM));
    auto X = field<double>(st, "X", R), implied = field<double>(st, "implied", R),
         delay = field<double>(st, "delay", R), bg = field<double>(st, "bg", R * mach_per),
         cyc = field<double>(st, "cyc", mva::kCycFields * RM);
    auto iters = field<long>(st, "iterations", R);
    // the collapsed workers of each rack, in the chain's order, -1 after them
    auto collapsed = field<long>(st, "collapsed", RM);
    auto conv = field<unsigned char>(st, "converged", R);
    const std::size_t P = static_cast<std::size_t>(racks.size());
    if (static_cast<std::size_t>(D0.size()) != P) throw py::value_error("D0 needs one entry per rack run");
    for (std::size_t j = 0; j < P; ++j) {
        const long r = racks.data()[j];
        if (r < 0 || static_cast<std::size_t>(r) >= R) throw py::value_error("racks must index rows");
        const double N = rk.data()[static_cast<std::size_t>(r) * mva::kRackFields + mva::RK_N];
        if (!(N >= 1) || N > static_cast<double>(Nmax))
            throw py::value_error("x_hist is narrower than a population");
        const double m = rk.data()[static_cast<std::size_t>(r) * mva::kRackFields + mva::RK_workers];
        if (!(m >= 1) || m > static_cast<double>(M)) throw py::value_error("workers out of range");
        for (std::size_t i = 0; i < M; ++i) {
            const long g = mach.data()[static_cast<std::size_t>(r) * M + i];
            if (g < 0 || static_cast<std::size_t>(g) >= mach_per) throw py::value_error("mach out of range");
            const long k = collapsed.data()[static_cast<std::size_t>(r) * M + i];
            if (k >= static_cast<long>(m)) throw py::value_error("collapsed worker out of range");
        }
    }
    mva::IterParams ip;
    ip.tol = params["tol"].cast<double>();
    ip.max_iter = params["max_iter"].cast<int>();
    ip.damp_max = params["damp_max"].cast<double>();
    ip.late_eps = params["late_eps"].cast<double>();
    ip.tail_cut = params["tail_cut"].cast<double>();
    ip.late_timers = params["late_timers"].cast<int>();
    ip.root_tol = params["root_tol"].cast<double>();
    ip.mix_tol = params["mix_tol"].cast<double>();
    ip.step_budget = params["step_budget"].cast<int>();
    ip.unsettled_rounds = params["unsettled_rounds"].cast<int>();
    ip.rounds = params["rounds"].cast<int>();
    ip.n_exact = params["n_exact"].cast<double>();
    ip.work_exact = params["work_exact"].cast<double>();
    ip.lump_tol = params["lump_tol"].cast<double>();
    ip.lump_min = params["lump_min"].cast<long>();
    std::vector<double*> wp;
    for (auto& a : wk) wp.push_back(a.mutable_data());
    {
        py::gil_scoped_release release;
        thread_local mva::Snap snap;                   // its memory kept between calls
        for (std::size_t j = 0; j < P; ++j) {
            const std::size_t r = static_cast<std::size_t>(racks.data()[j]);
            const std::size_t o = r * M;
            mva::RackConst c = mva::rack_const(rk.data() + r * mva::kRackFields, mach_per,
                                               s.data() + o, wf.data() + o, ev.data() + o,
                                               cost.data() + o, runm.data() + o, mach.data() + o);
            const std::size_t m = c.m;
            const long* cs = collapsed.data() + o;
            std::size_t n_cs = 0;
            while (n_cs < M && cs[n_cs] >= 0) ++n_cs;
            c.collapsed = n_cs ? cs : nullptr;
            c.n_collapsed = n_cs;
            snap.size(m, mach_per, c.N);
            const auto sv = snap.workers();            // in the order of worker_keys
            for (std::size_t k = 0; k < wp.size(); ++k) std::copy(wp[k] + o, wp[k] + o + m, sv[k]->begin());
            snap.X = X.data()[r];
            snap.implied = implied.data()[r];
            snap.delay = delay.data()[r];
            std::copy(bg.data() + r * mach_per, bg.data() + (r + 1) * mach_per, snap.bg.begin());
            mva::solve_rack_classes(c, snap, D0.data()[j], ip);
            // the padding workers as the reference leaves them: no load, no loss
            for (std::size_t k = 0; k < wp.size(); ++k) {
                std::copy(sv[k]->begin(), sv[k]->end(), wp[k] + o);
                std::fill(wp[k] + o + m, wp[k] + o + M, 0.0);
            }
            X.mutable_data()[r] = snap.X;
            implied.mutable_data()[r] = snap.implied;
            delay.mutable_data()[r] = snap.delay;
            std::copy(snap.bg.begin(), snap.bg.end(), bg.mutable_data() + r * mach_per);
            std::copy(snap.x_hist.begin(), snap.x_hist.begin() + c.N, x_hist.mutable_data() + r * Nmax);
            for (std::size_t f = 0; f < mva::kCycFields; ++f)
                std::copy(snap.cyc.begin() + f * m, snap.cyc.begin() + (f + 1) * m,
                          cyc.mutable_data() + f * RM + o);
            iters.mutable_data()[r] = snap.iterations;
            conv.mutable_data()[r] = snap.converged ? 1 : 0;
        }
    }
}

py::list rack_fields() {
    py::list names;
#define MVA_RACK_NAME(name) names.append(#name);
    MVA_RACK_FIELDS(MVA_RACK_NAME)
#undef MVA_RACK_NAME
    return names;
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
    mod.def("solve_racks", &run_solve,
            "The fixed point and timeout delay of the racks ``racks``, their state in place "
            "(analytic._solve_states; model/solvers/rack_step.py builds the dicts)",
            py::arg("consts"), py::arg("state"), py::arg("racks"), py::arg("D0"), py::arg("params"));
    mod.def("rack_fields", &rack_fields, "Names of the per-rack scalars of solve_racks, in order");
    mod.def("gamma_q", py::vectorize(mva::gamma_q),
            "Regularized upper incomplete gamma Q(a, x) (scipy.special.gammaincc)",
            py::arg("a"), py::arg("x"));
}
