// CNTK's DeviceDescriptor and the process-wide default device (cntk.device): a descriptor is ctk's
// Device; the default is ctk::default_device(), which graph evaluation and training use when a call names
// no device.
#include "convert.h"

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
