// CNTK's DeviceDescriptor and the process-wide default device (cntk.device): a descriptor is ctk's
// Device; the default is ctk::default_device(), which graph evaluation and training use when a call names
// no device.
#include "convert.h"
#include "ctk/kernels/cpu_info.h"

namespace ctk::python {

Device device_from(const py::handle& device) {
    if (device.is_none()) return default_device();
    CTK_CHECK(py::isinstance<Device>(device), TypeError,
              "device: expected a DeviceDescriptor (cntk.device.cpu() or ", "gpu(n)), got ",
              std::string(py::str(py::type::of(device))));
    return device.cast<Device>();
}

namespace {

// CNTK's DeviceDescriptor::AsString: "CPU" or "GPU[n]" (ctk's logical CPU devices: "CPU:n").
std::string descriptor_string(const Device& d) {
    return d.is_cuda() ? "GPU[" + std::to_string(d.index) + "]" : d.to_string();
}

py::object verdict_dict(const std::optional<CompatibilityVerdict>& v) {
    if (!v) return py::none();
    py::dict out;
    out["kind"] = to_string(v->kind);
    out["runnable"] = v->runnable();
    out["reason"] = v->reason;
    out["fix"] = v->fix;
    return out;
}

// The CPU doctor's facts: the processor, each math library's kernels, the f32 GEMM route and the verdict.
py::dict cpu_dict() {
    const CpuIsa cpu = query_cpu_isa();
    const MathLibraries libs = query_math_libraries();
    const CpuGemm setting = cpu_gemm_setting();
    const GemmChoice choice = choose_cpu_gemm(cpu, libs, setting);
    const CpuVerdict verdict = check_cpu_gemm(cpu, libs, setting);
    py::list isa;
    for (const auto& [has, name] : {std::pair{cpu.avx, "avx"},
                                    {cpu.avx2, "avx2"},
                                    {cpu.avx512, "avx512"},
                                    {cpu.avx512_bf16, "avx512_bf16"},
                                    {cpu.avx512_fp16, "avx512_fp16"},
                                    {cpu.amx_bf16, "amx_bf16"}})
        if (has) isa.append(name);
    py::dict out;
    out["vendor"] = cpu.vendor;
    out["model_name"] = cpu.model_name;
    out["family"] = cpu.family;
    out["model"] = cpu.model;
    out["isa"] = std::move(isa);
    out["level"] = to_string(isa_level(cpu));
    out["openblas_config"] = libs.openblas_config;
    out["openblas_core"] = libs.openblas_core;
    out["openblas_coretype"] = libs.openblas_coretype;
    out["openblas_level"] = to_string(openblas_core_level(libs.openblas_core));
    out["onednn_version"] = libs.onednn_version;
    out["onednn_isa"] = libs.onednn_isa;
    out["gemm_setting"] = to_string(setting);
    out["gemm"] = to_string(choice.library);
    out["gemm_reason"] = choice.reason;
    out["gemm_min_work"] = choice.min_work;
    out["below_machine"] = verdict.below_machine;
    out["verdict"] = verdict.verdict;
    out["fix"] = verdict.fix;
    return out;
}

// What `ctk info` prints, as data: the build, the driver and runtime, and each GPU with its verdict.
py::dict info_dict() {
    const BuildInfo b = build_info();
    const CudaSystem cuda = query_cuda_system();
    py::dict build;
    build["version"] = b.version;
    build["git_sha"] = b.git_sha;
    build["build_type"] = b.build_type;
    build["build_target"] = b.build_target;
    build["math_lib"] = b.math_lib;
    build["built_time"] = b.built_time;
    build["cuda_version"] = b.cuda_version;
    build["cudnn_version"] = b.cudnn_version;
    build["nccl_version"] = b.nccl_version;
    build["mpi_distribution"] = b.mpi_distribution;
    build["mpi_version"] = b.mpi_version;
    build["cuda_architectures"] = b.cuda_architectures;
    py::list gpus;
    for (const cuda::DeviceProperties& d : cuda.devices) {
        py::dict g;
        g["device_id"] = d.index;
        g["name"] = d.name;
        g["compute_capability"] = py::make_tuple(d.major, d.minor);
        g["multiprocessors"] = d.multiprocessors;
        g["total_memory"] = d.total_memory >> 20;  // MB, as the report prints them
        g["free_memory"] = d.free_memory >> 20;
        g["verdict"] = verdict_dict(device_verdict(b, cuda, d));
        gpus.append(std::move(g));
    }
    py::dict out;
    out["build"] = std::move(build);
    out["driver_version"] = cuda.driver_version;
    out["runtime_version"] = cuda.runtime_version;
    out["gpus"] = std::move(gpus);
    out["unavailable_reason"] = cuda.unavailable_reason;
    out["driver_verdict"] = verdict_dict(driver_verdict(b, cuda));
    out["cpu"] = cpu_dict();
    out["report"] = format_info_report(b, cuda) + cpu_report();
    return out;
}

}  // namespace

void bind_device(py::module_& m) {
    py::class_<Device>(m, "DeviceDescriptor")
        .def("type", [](const Device& d) { return d.is_cuda() ? 1 : 0; })  // CNTK's DeviceKind: CPU 0, GPU 1
        .def("id", [](const Device& d) { return d.index; })
        // CNTK locked a GPU per process on request; ctk shares devices and never locks.
        .def("is_locked", [](const Device&) { return false; })
        .def("__eq__", [](const Device& a,
                          const py::object& b) { return py::isinstance<Device>(b) && a == b.cast<Device>(); })
        .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; })
        .def("__repr__", &descriptor_string)
        .def("__str__", &descriptor_string);
    m.def("_cpu_device", [] { return Device::cpu(); });
    m.def("_gpu_device", [](int index) {
        const int n = cuda::device_count();
        CTK_CHECK(index >= 0 && index < n, ValueError, "gpu(", index, "): there is no GPU ", index, " here (",
                  n, " found", n ? "" : ": " + cuda::unavailable_reason(), ")");
        return Device::cuda(index);
    });
    m.def("_all_devices", &all_devices);
    m.def("_default_device", &default_device);
    m.def("_try_set_default_device", &try_set_default_device, py::arg("device"));
    m.def("_info", &info_dict);
    m.def("_set_cpu_gemm",
          [](const std::string& name) { set_cpu_gemm(parse_cpu_gemm(name, "set_cpu_gemm")); });
    m.def("_cpu_gemm", [] { return std::string(to_string(cpu_gemm_choice().library)); });
    m.def("_set_cpu_channels_last", &set_cpu_channels_last, py::arg("on"));
    m.def("_cpu_channels_last", &cpu_channels_last);
    m.def("_gpu_properties", [](const Device& d) {
        CTK_CHECK(d.is_cuda(), ValueError, "get_gpu_properties: ", descriptor_string(d), " is not a GPU");
        const cuda::DeviceProperties p = cuda::properties(d.index);
        py::dict out;
        out["device_id"] = p.index;
        out["name"] = p.name;
        out["version_major"] = p.major;
        out["version_minor"] = p.minor;
        out["multiprocessors"] = p.multiprocessors;
        out["total_memory"] = p.total_memory / (1024 * 1024);  // MB, as CNTK reported it
        return out;
    });
}

}  // namespace ctk::python
