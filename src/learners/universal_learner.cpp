// CNTK's universal learner (LearnerUniversal): the update rule is a graph built by the user from the
// parameters and one gradient input per parameter; each update binds the gradients and evaluates it once,
// and the assign ops inside write the new values. No learning rate or options of its own (CNTK gives it a
// fixed per-minibatch rate of 1, which it only reports).
#include <algorithm>

#include "ctk/graph/function.h"
#include "learners/learner_impl.h"

namespace ctk {

namespace {

class UniversalLearner final : public Learner {
public:
    UniversalLearner(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients,
                     const FunctionPtr& update)
        : Learner(parameters, TrainingParameterSchedule(1.0), LearnerOptions{}, "universal"),
          gradients_(gradients),
          update_func_(update) {
        check_shapes_known(parameters_);
        CTK_CHECK(update_func_ != nullptr, ValueError, name_, ": the update function is null");
        CTK_CHECK(gradients_.size() == parameters_.size(), ValueError, name_, ": ", gradients_.size(),
                  " gradient variables for ", parameters_.size(), " parameters");
        for (size_t i = 0; i < gradients_.size(); ++i)
            CTK_CHECK(gradients_[i].shape() == parameters_[i].shape(), ShapeError, name_,
                      ": gradient variable ", gradients_[i].to_string(), " does not have the shape of ",
                      parameters_[i].to_string());
        check_update();
    }

    static void check_shapes_known(const std::vector<Variable>& parameters) {
        for (const Variable& p : parameters)
            CTK_CHECK(!p.has_inferred_dims(), ValueError, "universal: parameter ", p.to_string(),
                      " has inferred dimensions; create the learner once every parameter's shape is known");
    }
    // The gradients made here: inputs without dynamic axes, named after their parameters.
    static std::vector<Variable> gradient_inputs(const std::vector<Variable>& parameters) {
        std::vector<Variable> gradients;
        for (const Variable& p : parameters) {
            const std::string label = p.name().empty() ? p.uid() : p.name();
            gradients.push_back(input_variable(p.shape(), p.dtype(), false, false, {}, label + "_grad"));
        }
        return gradients;
    }

    // The protocol's steps (ctk/learners/learner.h): the base's takes_step (the count checked, the fixed
    // rate reported), every parameter's gradient checked, no scalars to prepare, one evaluation.
    void check_gradients(const GradientMap& gradients) const override {
        for (const Variable& p : parameters_) {
            auto it = gradients.find(p);
            CTK_CHECK(it != gradients.end(), ValueError, name_, ": no gradient for ", p.to_string(),
                      " (the update function updates every parameter at once)");
            const Tensor& g = it->second;
            CTK_CHECK(g.defined(), ValueError, name_, ": the gradient of ", p.to_string(), " is undefined");
            CTK_CHECK(g.shape() == Shape(p.shape()), ShapeError, name_, ": the gradient of ", p.to_string(),
                      " has shape ", g.shape().to_string(), ", expected ", Shape(p.shape()).to_string());
        }
    }
    void prepare_step(int64_t /*mb_size*/) override {}
    bool apply_step(const GradientMap& gradients, int64_t /*mb_size*/) override {
        ValueMap args;
        for (size_t i = 0; i < parameters_.size(); ++i) {
            const Tensor& g = gradients.at(parameters_[i]);
            if (bound_[i])
                args.emplace(gradients_[i], Value(g));
            else if (gradients_[i].is_constant() || gradients_[i].is_parameter())
                gradients_[i].set_value(g);
        }
        // Inference-mode evaluation where the parameters live: the assigns take effect when it returns.
        update_func_->eval(args, {}, parameters_.front().value().device());
        return true;
    }

    Dictionary checkpoint_state() const override {
        Dictionary d = Learner::checkpoint_state();
        DictionaryValue::List vars;
        for (const Variable& v : state_vars_) {
            Dictionary e;
            e.set("name", v.name());
            e.set("value", v.value().to(Device::cpu()).clone());
            vars.emplace_back(e);
        }
        d.set("update_function_state", std::move(vars));
        return d;
    }

    void restore_from_checkpoint(const Dictionary& state) override {
        CTK_CHECK(state.contains("update_function_state"), ValueError, name_,
                  ": restore_from_checkpoint: the state holds no update function state");
        const auto& saved = state.at("update_function_state").as_list();
        CTK_CHECK(saved.size() == state_vars_.size(), ValueError, name_,
                  ": restore_from_checkpoint: the state ", "holds ", saved.size(),
                  " constants and parameters of the update function, this one has ", state_vars_.size());
        // Positional (the update function is rebuilt, so uids differ); check everything before changing it.
        for (size_t i = 0; i < saved.size(); ++i) {
            const Dictionary& e = saved[i].as_dictionary();
            const Tensor& t = e.at("value").as_tensor();
            const Variable& v = state_vars_[i];
            CTK_CHECK(t.shape() == Shape(v.shape()), ValueError, name_,
                      ": restore_from_checkpoint: ", v.to_string(), " has shape ",
                      Shape(v.shape()).to_string(), " but the saved '", e.at("name").as_string(),
                      "' has shape ", t.shape().to_string());
        }
        Learner::restore_from_checkpoint(state);
        for (size_t i = 0; i < saved.size(); ++i)
            state_vars_[i].set_value(saved[i].as_dictionary().at("value").as_tensor());
    }

protected:
    void update_parameter(const Variable& p, Tensor&, const Tensor&, std::vector<Tensor>&, int64_t) override {
        CTK_THROW(Error, name_, ": no per-parameter update (", p.to_string(), "): update() evaluates the ",
                  "update function");
    }

private:
    void check_update() {
        const std::vector<Variable> fn_params = update_func_->parameters();
        for (const Variable& p : parameters_)
            CTK_CHECK(std::find(fn_params.begin(), fn_params.end(), p) != fn_params.end(), ValueError, name_,
                      ": the update function ", update_func_->to_string(), " does not use parameter ",
                      p.to_string());
        const std::vector<Variable> args = update_func_->arguments();
        for (const Variable& a : args)
            CTK_CHECK(std::find(gradients_.begin(), gradients_.end(), a) != gradients_.end(), ValueError,
                      name_, ": the update function has argument ", a.to_string(),
                      " besides the gradients; it can only read parameters, constants and gradients");
        // A gradient input the Function does not read cannot be bound (forward rejects foreign arguments);
        // a constant or parameter standing for a gradient is set instead.
        for (const Variable& g : gradients_)
            bound_.push_back(std::find(args.begin(), args.end(), g) != args.end());

        // The update's own state: its constants and the parameters that are not the learner's, except
        // those standing for gradients.
        auto is_gradient = [&](const Variable& v) {
            return std::find(gradients_.begin(), gradients_.end(), v) != gradients_.end();
        };
        for (const Variable& c : update_func_->constants())
            if (!is_gradient(c)) state_vars_.push_back(c);
        for (const Variable& p : fn_params)
            if (std::find(parameters_.begin(), parameters_.end(), p) == parameters_.end() && !is_gradient(p))
                state_vars_.push_back(p);
    }

    std::vector<Variable> gradients_;
    std::vector<bool> bound_;
    FunctionPtr update_func_;
    std::vector<Variable> state_vars_;
};

}  // namespace

LearnerPtr universal(const UniversalUpdateFunction& update_func, const std::vector<Variable>& parameters) {
    CTK_CHECK(update_func != nullptr, ValueError, "universal: update_func is empty");
    UniversalLearner::check_shapes_known(parameters);
    std::vector<Variable> gradients = UniversalLearner::gradient_inputs(parameters);
    FunctionPtr update = update_func(parameters, gradients);
    CTK_CHECK(update != nullptr, ValueError, "universal: update_func returned a null Function");
    return std::make_shared<UniversalLearner>(parameters, gradients, update);
}

LearnerPtr universal(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients,
                     const FunctionPtr& update) {
    return std::make_shared<UniversalLearner>(parameters, gradients, update);
}

}  // namespace ctk
