// Readers written in Python: CNTK's UserMinibatchSource (a Python class delivering whole minibatches)
// as a MinibatchSource the training session can drive, and CNTK's UserDeserializer (a Python class
// delivering chunks) as a Deserializer under the MinibatchSource's randomizer, reader threads and
// checkpoints. Both call Python with the GIL taken on whatever thread needs the data.
#pragma once

#include "convert.h"

namespace ctk::python {

// The C++ side of a Python subclass of MinibatchSource (cntk.io.UserMinibatchSource): every virtual
// call goes to the Python method of CNTK's name (stream_infos, next_minibatch(num_samples,
// number_of_workers, worker_rank, device), get_checkpoint_state, restore_from_checkpoint, is_infinite).
class PyMinibatchSource : public MinibatchSource {
public:
    PyMinibatchSource() = default;
    const std::vector<StreamInformation>& stream_infos() const override;
    std::unordered_map<std::string, MinibatchData> next_minibatch(int64_t minibatch_size_in_samples,
                                                                  int64_t num_partitions,
                                                                  int64_t partition_index,
                                                                  Device device) override;
    int64_t total_samples_delivered() const override { return samples_; }
    int64_t sweeps_completed() const override { return sweeps_; }
    bool repeats_forever() const override;
    Dictionary checkpoint_state() const override;
    void restore_from_checkpoint(const Dictionary& state) override;

private:
    py::function method(const char* name) const;
    mutable std::vector<StreamInformation> infos_;
    // Counted from what next_minibatch delivered (a Python source keeps its own position).
    int64_t samples_ = 0, sweeps_ = 0;
};

// A Python dict of str keys (values: None, bool, int, float, str, NumPy arrays, lists and dicts of them) as a
// Dictionary, and back. TypeError naming the key whose value cannot be stored.
Dictionary dictionary_from_python(const py::handle& obj, const std::string& what);
py::dict dictionary_to_python(const Dictionary& d);

// The Deserializer over a cntk.io.UserDeserializer instance.
DeserializerPtr user_deserializer(const py::object& user);

// Registers StreamInformation's Python constructor helpers and the module functions of this file.
void bind_user_io(py::module_& io);

}  // namespace ctk::python
