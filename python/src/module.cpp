// The _ctk extension: registers the bindings of each area and maps ctk's errors to Python's exceptions
// (ShapeError and ValueError -> ValueError, TypeError -> TypeError, IOError -> OSError, IndexError ->
// IndexError, NotImplementedError -> NotImplementedError, OutOfMemoryError -> MemoryError, the rest ->
// RuntimeError; messages kept, as valid UTF-8).
#include "convert.h"

PYBIND11_MODULE(_ctk, m) {
    using namespace ctk;
    m.doc() = "ctk: CNTK 2.7's API over ctk's C++ library";
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ShapeError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const ValueError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const TypeError& e) {
            PyErr_SetString(PyExc_TypeError, e.what());
        } catch (const IOError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const IndexError& e) {
            PyErr_SetString(PyExc_IndexError, e.what());
        } catch (const NotImplementedError& e) {
            PyErr_SetString(PyExc_NotImplementedError, e.what());
        } catch (const OutOfMemoryError& e) {
            PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
        } catch (const std::exception& e) {
            // Another library's exception (protobuf, ONNX) may quote file bytes that are not UTF-8, which
            // Python would turn into an exception with no text; others keep pybind11's own translation.
            const std::string text = escape_invalid_utf8(e.what());
            if (text == e.what()) throw;
            PyErr_SetString(PyExc_RuntimeError, text.c_str());
        }
    });
    python::bind_device(m);
    python::bind_user_function(m);
    python::bind_graph(m);
    python::bind_ops(m);
    python::bind_layers_learners(m);
    python::bind_io(m);
    python::bind_train(m);
    python::bind_distributed(m);
    m.attr("__version__") = build_info().version;
    // ctk's own: the threads of the CPU kernels (oneDNN, OpenBLAS and ctk's loops), as ctk::set_num_threads.
    m.def("set_num_threads", &set_num_threads, py::arg("n"));
    m.def("num_threads", &num_threads);
    // CNTK's force_deterministic_algorithms (cntk.debugging): GPU algorithms that are not bit-reproducible
    // are skipped; ctk's CPU kernels are deterministic for a given thread count already.
    m.def("_set_deterministic", &cuda::set_deterministic, py::arg("value"));
    // Recurrent loops as one fused CPU kernel (ctk/graph/program.h): on unless turned off, for comparing
    // paths.
    m.def("set_fused_recurrence", &set_fused_recurrence, py::arg("on"));
    m.def("fused_recurrence", &fused_recurrence);
    m.def("_deterministic", &cuda::deterministic);
    // CNTK's profiler (cntk.debugging.start_profiler ...; ctk/train/profiler.h) over ctk's op profile.
    m.def("_start_profiler", &start_profiler, py::arg("dir"), py::arg("sync_gpu"), py::arg("reserve_mem"));
    m.def("_enable_profiler", &enable_profiler);
    m.def("_disable_profiler", &disable_profiler);
    m.def("_stop_profiler", &stop_profiler);
    // CNTK's set_node_timing / print_node_timing over the same op profile.
    m.def("_node_timing_start", [] {
        reset_op_profile();
        set_op_profile(true);
    });
    m.def("_node_timing_stop", [] { set_op_profile(false); });
    m.def("_node_timing_report", [] {
        std::string table = op_profile().empty() ? std::string() : op_profile_table(1);
        reset_op_profile();
        return table;
    });
}
