// pybind11 bindings: module native._core. The only file that includes
// pybind11; everything it exposes is plain data (dicts, lists, bytes).
//
// Options cross the boundary as dicts (built by the Python dataclasses in
// native/options.py), and are converted field by field here so a wrong type
// raises OptionError naming the field.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "loadgen.hpp"
#include "options.hpp"
#include "protocol.hpp"
#include "rawbench.hpp"
#include "server.hpp"
#include "ycsb.hpp"

namespace py = pybind11;
using namespace kv;

namespace {

template <class T>
void take(py::dict& d, const char* name, T& out) {
    if (!d.contains(name)) return;
    py::object v = d[name];
    try {
        out = v.cast<T>();
    } catch (const py::cast_error&) {
        throw OptionError(name, "wrong type: " + std::string(py::str(py::type::of(v).attr("__name__"))));
    }
    PyDict_DelItemString(d.ptr(), name);
}

void no_leftovers(const py::dict& d) {
    for (auto item : d) throw OptionError(py::str(item.first), "unknown option");
}

ServerOptions server_options(const py::dict& in) {
    py::dict d(in);  // copy: consumed keys are removed to detect unknown ones
    d = py::dict(d);
    ServerOptions o;
    std::string seq = seq_check_name(o.seq_check);
    take(d, "datadir", o.datadir);
    take(d, "bind_address", o.bind_address);
    take(d, "base_port", o.base_port);
    take(d, "workers", o.workers);
    take(d, "pin_cpus", o.pin_cpus);
    take(d, "rcvbuf_bytes", o.rcvbuf_bytes);
    take(d, "max_value", o.max_value);
    take(d, "idle_poll_ms", o.idle_poll_ms);
    take(d, "memtable_mb", o.memtable_mb);
    take(d, "flushnum", o.flushnum);
    take(d, "maxnum", o.maxnum);
    take(d, "wal", o.wal);
    take(d, "sync", o.sync);
    take(d, "wal_bytes_per_sync", o.wal_bytes_per_sync);
    take(d, "flush_threads", o.flush_threads);
    take(d, "compaction_threads", o.compaction_threads);
    take(d, "bg_write_rate", o.bg_write_rate);
    take(d, "delayed_write_rate", o.delayed_write_rate);
    take(d, "level0_file_num_compaction_trigger", o.level0_file_num_compaction_trigger);
    take(d, "level0_slowdown_writes_trigger", o.level0_slowdown_writes_trigger);
    take(d, "level0_stop_writes_trigger", o.level0_stop_writes_trigger);
    take(d, "preload_records", o.preload_records);
    take(d, "preload_value_bytes", o.preload_value_bytes);
    take(d, "preload_partition", o.preload_partition);
    take(d, "transaction_db", o.transaction_db);
    take(d, "seq_check", seq);
    o.seq_check = parse_seq_check(seq);
    no_leftovers(d);
    return o;
}

LoadOptions load_options(const py::dict& in) {
    py::dict d = py::dict(in);
    d = py::dict(d);
    LoadOptions o;
    take(d, "targets", o.targets);
    take(d, "partition", o.partition);
    take(d, "threads", o.threads);
    take(d, "duration_s", o.duration_s);
    take(d, "max_requests", o.max_requests);
    take(d, "read_ratio", o.read_ratio);
    take(d, "distribution", o.distribution);
    take(d, "records", o.records);
    take(d, "value_size", o.value_size);
    take(d, "timeout_ms", o.timeout_ms);
    take(d, "seed", o.seed);
    take(d, "max_value", o.max_value);
    no_leftovers(d);
    return o;
}

py::dict hist_dict(const Histogram& h) {
    py::dict d;
    for (auto& kv : summarize(h)) d[py::str(kv.first)] = kv.second;
    py::list buckets;  // non-empty buckets as (low_ns, count)
    for (int b = 0; b < Histogram::kBuckets; ++b)
        if (h.buckets()[size_t(b)]) buckets.append(py::make_tuple(Histogram::bucket_low(b), h.buckets()[size_t(b)]));
    d["buckets_ns"] = buckets;
    return d;
}

py::dict worker_dict(const WorkerStats& s) {
    py::dict d;
#define KV_OUT(name) d[#name] = s.name;
    KV_SERVER_COUNTERS(KV_OUT)
#undef KV_OUT
    d["wait"] = hist_dict(s.wait);
    d["process"] = hist_dict(s.process);
    d["active_s"] = double(s.active_ns) / 1e9;
    d["idle_s"] = double(s.idle_ns) / 1e9;
    d["cpu_s"] = double(s.cpu_ns) / 1e9;
    return d;
}

py::dict client_dict(const ClientStats& s) {
    py::dict d;
#define KV_OUT(name) d[#name] = s.name;
    KV_CLIENT_COUNTERS(KV_OUT)
#undef KV_OUT
    d["send"] = hist_dict(s.send);
    d["response"] = hist_dict(s.response);
    d["per_second"] = s.per_second;
    d["busy_s"] = double(s.busy_ns) / 1e9;
    return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "Native KV server (RocksDB, UDP) and closed-loop load generator; see docs/native.md";
    py::register_exception<OptionError>(m, "OptionError", PyExc_ValueError);

    m.attr("HEADER_SIZE") = kHeaderSize;
    m.attr("KEY_SIZE") = kKeySize;
    m.attr("SERVER_COUNTERS") = std::vector<std::string>{
#define KV_NAME(name) #name,
        KV_SERVER_COUNTERS(KV_NAME)
#undef KV_NAME
    };
    m.attr("CLIENT_COUNTERS") = std::vector<std::string>{
#define KV_NAME(name) #name,
        KV_CLIENT_COUNTERS(KV_NAME)
#undef KV_NAME
    };

    py::class_<Server>(m, "Server")
        .def(py::init([](const py::dict& d) {
                 ServerOptions o = server_options(d);
                 py::gil_scoped_release nogil;
                 return std::make_unique<Server>(o);
             }),
             py::arg("options"))
        .def("start", &Server::start)
        .def("stop", &Server::stop, py::call_guard<py::gil_scoped_release>())
        .def_property_readonly("running", &Server::running)
        .def("ports", &Server::ports)
        .def("collect", [](Server& s, bool reset) {
                 std::vector<WorkerStats> v;
                 {
                     py::gil_scoped_release nogil;
                     v = s.collect(reset);
                 }
                 py::list workers;
                 WorkerStats total;
                 for (auto& w : v) {
                     workers.append(worker_dict(w));
                     total.merge(w);
                 }
                 py::dict out;
                 out["workers"] = workers;
                 out["total"] = worker_dict(total);
                 return out;
             }, py::arg("reset") = false)
        .def("rocksdb_stats", [](Server& s, bool reset) {
                 std::vector<RocksSnapshot> v = s.rocksdb_stats(reset);
                 py::list out;
                 for (auto& r : v) {
                     py::dict d;
                     for (auto& kv : r.values) d[py::str(kv.first)] = kv.second;
                     if (!r.values.empty()) {
                         d["files_at_level"] = r.files_at_level;
                         py::list tr;
                         for (auto& t : r.stall_transitions) tr.append(py::make_tuple(t.first, t.second));
                         d["stall_transitions"] = tr;
                     }
                     out.append(d);
                 }
                 return out;
             }, py::arg("reset") = false)
        .def_property_readonly("preload_s", &Server::preload_s)
        .def("preloaded", &Server::preloaded);

    m.def("run_load", [](const py::dict& d) {
        LoadOptions o = load_options(d);
        LoadResult r;
        {
            py::gil_scoped_release nogil;
            r = run_load(o);
        }
        py::dict out = client_dict(r.total);
        py::list threads;
        for (auto& t : r.per_thread) threads.append(client_dict(t));
        out["threads"] = threads;
        out["elapsed_s"] = r.elapsed_s;
        out["abandoned"] = r.abandoned;
        return out;
    }, py::arg("options"));

    m.def("raw_rocksdb_bench", [](const py::dict& d, const std::string& path, uint64_t n, int value_size,
                                  const std::string& distribution, int64_t records, uint64_t seed) {
        ServerOptions o = server_options(d);
        RawBenchResult r;
        {
            py::gil_scoped_release nogil;
            r = raw_rocksdb_bench(o, path, n, value_size, distribution, records, seed);
        }
        py::dict out;
        out["puts"] = r.puts;
        out["gets"] = r.gets;
        out["found"] = r.found;
        out["put_mean_us"] = r.put_mean_ns / 1e3;
        out["get_mean_us"] = r.get_mean_ns / 1e3;
        return out;
    }, py::arg("options"), py::arg("path"), py::arg("n"), py::arg("value_size") = 128,
       py::arg("distribution") = "zipfian", py::arg("records") = 1000000, py::arg("seed") = 1,
       "in-process RocksDB Put then Get loop through the server's Store (baseline for overhead)");
    m.def("fnvhash64", &fnvhash64, py::arg("x"), "YCSB Utils.fnvhash64 (signed, Math.abs applied)");
    m.def("record_key", [](int64_t i) {
        uint8_t k[kKeySize];
        record_key(i, k);
        return py::bytes(reinterpret_cast<const char*>(k), kKeySize);
    }, py::arg("i"));
    m.def("zipf_ranks", [](py::array_t<double, py::array::c_style | py::array::forcecast> u) {
        Zipfian z;
        auto in = u.unchecked<1>();
        py::array_t<int64_t> out(in.shape(0));
        auto o = out.mutable_unchecked<1>();
        for (py::ssize_t i = 0; i < in.shape(0); ++i) o(i) = z.rank(in(i));
        return out;
    }, py::arg("u"), "YCSB ZipfianGenerator(0, 1e10, .99, zetan) ranks for the given uniforms u in [0,1)");
    m.def("ycsb_ranks", [](py::array_t<double, py::array::c_style | py::array::forcecast> u, int64_t records) {
        if (records < 1) throw OptionError("records", "must be >= 1");
        Zipfian z;
        auto in = u.unchecked<1>();
        py::array_t<int64_t> out(in.shape(0));
        auto o = out.mutable_unchecked<1>();
        for (py::ssize_t i = 0; i < in.shape(0); ++i) o(i) = scrambled_zipfian(z, in(i), records);
        return out;
    }, py::arg("u"), py::arg("records"), "scrambled zipfian record numbers for uniforms u");
    m.def("key_stream", [](const std::string& dist, int64_t records, uint64_t seed, int64_t n) {
        KeyGen g(parse_key_dist(dist), records, seed, 0, 1);
        py::array_t<int64_t> out(n);
        auto o = out.mutable_unchecked<1>();
        for (int64_t i = 0; i < n; ++i) o(i) = g.next();
        return out;
    }, py::arg("distribution"), py::arg("records"), py::arg("seed"), py::arg("n"),
       "record numbers as one load-generator thread draws them");
    m.def("range_partition", [](py::bytes key, uint32_t n) {
        std::string k = key;
        if (k.size() != kKeySize) throw OptionError("key", "must be 16 bytes");
        return range_partition(reinterpret_cast<const uint8_t*>(k.data()), n);
    }, py::arg("key"), py::arg("n"));
    m.def("hash_partition", [](py::bytes key, uint32_t n) {
        std::string k = key;
        if (k.size() != kKeySize) throw OptionError("key", "must be 16 bytes");
        return hash_partition(reinterpret_cast<const uint8_t*>(k.data()), n);
    }, py::arg("key"), py::arg("n"));
    m.def("parse_request", [](py::bytes data, std::size_t max_value) {
        std::string s = data;
        Packet p;
        switch (parse_request(reinterpret_cast<const uint8_t*>(s.data()), s.size(), max_value, p)) {
            case ParseResult::Ok: return std::string("ok");
            case ParseResult::TooShort: return std::string("too_short");
            case ParseResult::BadOp: return std::string("bad_op");
            case ParseResult::TooLong: return std::string("too_long");
            case ParseResult::LengthMismatch: return std::string("length_mismatch");
        }
        return std::string("?");
    }, py::arg("data"), py::arg("max_value") = 128, "classify a request datagram as the server does");
}
