// CNTK's training surface: schedules, AdditionalLearningOptions, Learner and Trainer over the C ABI.
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK.Interop;

namespace CNTK
{
    // CNTK's TrainingParameterScheduleDouble: a value per `minibatchSize` samples (1: per sample, 0: per
    // minibatch), constant or changing every epochSize samples.
    public class TrainingParameterScheduleDouble
    {
        internal readonly ScheduleHandle Handle;

        TrainingParameterScheduleDouble(ScheduleHandle handle) { Handle = handle; }

        public TrainingParameterScheduleDouble(double value) : this(value, 0) { }

        public TrainingParameterScheduleDouble(double value, uint minibatchSize) : this(Make(new[] { value }, null, 0, minibatchSize)) { }

        // values[i] holds for one epoch of epochSize samples; the last holds on.
        public TrainingParameterScheduleDouble(IList<double> values, uint epochSize, uint minibatchSize = 0)
            : this(Make(values.ToArray(), null, epochSize, minibatchSize)) { }

        // (count, value) pairs: each value holds for `count` epochs of epochSize samples.
        public TrainingParameterScheduleDouble(IList<KeyValuePair<uint, double>> schedule, uint epochSize, uint minibatchSize = 0)
            : this(Make(schedule.Select(p => p.Value).ToArray(), schedule.Select(p => (long)p.Key).ToArray(), epochSize, minibatchSize)) { }

        static ScheduleHandle Make(double[] values, long[] counts, long epochSize, long minibatchSize)
        {
            Status.EnsureAbi();
            ScheduleHandle h;
            Status.Check(Native.ctk_schedule_create(values, counts, values.Length, epochSize, minibatchSize, out h));
            return h;
        }

        internal static TrainingParameterScheduleDouble MomentumAsTimeConstant(double timeConstant)
        {
            Status.EnsureAbi();
            ScheduleHandle h;
            Status.Check(Native.ctk_momentum_as_time_constant_schedule(timeConstant, 0, out h));
            return new TrainingParameterScheduleDouble(h);
        }

        public double this[uint count] { get { double v; Status.Check(Native.ctk_schedule_at(Handle, count, out v)); return v; } }
    }

    public class AdditionalLearningOptions
    {
        public double l1RegularizationWeight = 0.0;
        public double l2RegularizationWeight = 0.0;
        public double gaussianNoiseInjectionStdDev = 0.0;
        public double gradientClippingThresholdPerSample = double.PositiveInfinity;
        public bool gradientClippingWithTruncation = true;

        internal static NativeLearnerOptions ToNative(AdditionalLearningOptions o)
        {
            NativeLearnerOptions n;
            Status.EnsureAbi();
            Status.Check(Native.ctk_learner_options_default(out n));
            if (o == null) return n;
            n.l1 = o.l1RegularizationWeight;
            n.l2 = o.l2RegularizationWeight;
            n.noise = o.gaussianNoiseInjectionStdDev;
            n.clipping = o.gradientClippingThresholdPerSample;
            n.clippingWithTruncation = o.gradientClippingWithTruncation ? 1 : 0;
            return n;
        }
    }

    public class Learner
    {
        internal readonly LearnerHandle Handle;
        readonly IList<Parameter> parameters;

        Learner(LearnerHandle handle, IList<Parameter> parameters) { Handle = handle; this.parameters = parameters; }

        delegate int Make(IntPtr[] raw, long n, ref NativeLearnerOptions options, out LearnerHandle learner);

        static Learner Create(IList<Parameter> parameters, AdditionalLearningOptions options, Make make)
        {
            NativeLearnerOptions o = AdditionalLearningOptions.ToNative(options);
            List<Variable> vars = parameters.Cast<Variable>().ToList();
            LearnerHandle h;
            Status.Check(make(Interop.Handles.Of(vars), vars.Count, ref o, out h));
            GC.KeepAlive(vars);
            return new Learner(h, parameters.ToList());
        }

        public static Learner SGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                         AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_sgd(p, n, learningRateSchedule.Handle, ref o, out l));
        }

        public static Learner MomentumSGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                                 TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                                 AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_momentum_sgd(p, n, learningRateSchedule.Handle, momentumSchedule.Handle, unitGain ? 1 : 0, ref o, out l));
        }

        public static Learner NesterovLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                              TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                              AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_nesterov(p, n, learningRateSchedule.Handle, momentumSchedule.Handle, unitGain ? 1 : 0, ref o, out l));
        }

        public static Learner AdaGradLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                             bool needAveMultiplier = true, AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_adagrad(p, n, learningRateSchedule.Handle, needAveMultiplier ? 1 : 0, ref o, out l));
        }

        public static Learner Adam(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                   TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                   TrainingParameterScheduleDouble varianceMomentumSchedule = null, double epsilon = 1e-8,
                                   bool adamax = false, AdditionalLearningOptions additionalOptions = null)
        {
            ScheduleHandle variance = varianceMomentumSchedule == null ? ScheduleHandle.Null : varianceMomentumSchedule.Handle;
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_adam(p, n, learningRateSchedule.Handle, momentumSchedule.Handle, unitGain ? 1 : 0, variance, epsilon,
                                        adamax ? 1 : 0, ref o, out l));
        }

        public static Learner FSAdaGradLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                               TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                               TrainingParameterScheduleDouble varianceMomentumSchedule = null,
                                               AdditionalLearningOptions additionalOptions = null)
        {
            ScheduleHandle variance = varianceMomentumSchedule == null ? ScheduleHandle.Null : varianceMomentumSchedule.Handle;
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_fsadagrad(p, n, learningRateSchedule.Handle, momentumSchedule.Handle, unitGain ? 1 : 0, variance, ref o, out l));
        }

        public static Learner RMSPropLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule, double gamma,
                                             double inc, double dec, double max, double min, bool needAveMultiplier = true,
                                             AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_rmsprop(p, n, learningRateSchedule.Handle, gamma, inc, dec, max, min, needAveMultiplier ? 1 : 0, ref o, out l));
        }

        public static Learner AdaDeltaLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                              double rho = 0.95, double epsilon = 1e-8, AdditionalLearningOptions additionalOptions = null)
        {
            return Create(parameters, additionalOptions, (IntPtr[] p, long n, ref NativeLearnerOptions o, out LearnerHandle l) =>
                Native.ctk_learner_adadelta(p, n, learningRateSchedule.Handle, rho, epsilon, ref o, out l));
        }

        public IList<Parameter> Parameters() { return parameters; }
        public double LearningRate() { double lr; Status.Check(Native.ctk_learner_learning_rate(Handle, out lr)); return lr; }
        public void ResetLearningRate(TrainingParameterScheduleDouble learningRateSchedule)
        {
            Status.Check(Native.ctk_learner_reset_learning_rate(Handle, learningRateSchedule.Handle));
        }
        public ulong TotalNumberOfSamplesSeen() { long n; Status.Check(Native.ctk_learner_samples_seen(Handle, out n)); return (ulong)n; }
    }

    public class Trainer
    {
        internal readonly TrainerHandle Handle;
        readonly Function model, loss, evaluation;
        readonly IList<Learner> learners;

        Trainer(TrainerHandle handle, Function model, Function loss, Function evaluation, IList<Learner> learners)
        {
            Handle = handle;
            this.model = model;
            this.loss = loss;
            this.evaluation = evaluation;
            this.learners = learners;
        }

        public static Trainer CreateTrainer(Function model, Function lossFunction, Function evaluationFunction, IList<Learner> parameterLearners)
        {
            return CreateTrainer(model, lossFunction, evaluationFunction, parameterLearners, 0);
        }

        // ctk's addition: progressFrequency > 0 prints CNTK's training log every that many minibatches.
        public static Trainer CreateTrainer(Function model, Function lossFunction, Function evaluationFunction, IList<Learner> parameterLearners,
                                            int progressFrequency)
        {
            Status.EnsureAbi();
            if (lossFunction == null) throw new ArgumentNullException("lossFunction");
            IntPtr[] raw = parameterLearners.Select(l => l.Handle.DangerousGetHandle()).ToArray();
            TrainerHandle h;
            Status.Check(Native.ctk_trainer_create(model == null ? FunctionHandle.Null : model.Handle, lossFunction.Handle,
                                                   evaluationFunction == null ? FunctionHandle.Null : evaluationFunction.Handle, raw, raw.Length,
                                                   progressFrequency, out h));
            GC.KeepAlive(parameterLearners);
            return new Trainer(h, model, lossFunction, evaluationFunction, parameterLearners.ToList());
        }

        [Obsolete("TrainMinibatch() without isSweepEndInArguments will be deprecated soon. Please use TrainMinibatch() with isSweepEndInArguments.", false)]
        public bool TrainMinibatch(IDictionary<Variable, Value> arguments, DeviceDescriptor computeDevice)
        {
            return TrainMinibatch(arguments, false, computeDevice);
        }

        public bool TrainMinibatch(IDictionary<Variable, Value> arguments, bool isSweepEndInArguments, DeviceDescriptor computeDevice)
        {
            List<Variable> vars = arguments.Keys.ToList();
            List<Value> values = vars.Select(v => arguments[v]).ToList();
            int updated;
            Status.Check(Native.ctk_trainer_train_minibatch(Handle, Interop.Handles.Of(vars), Value.HandlesOf(values), vars.Count,
                                                            isSweepEndInArguments ? 1 : 0, DeviceDescriptor.Native_(computeDevice), out updated));
            GC.KeepAlive(vars);
            GC.KeepAlive(values);
            return updated != 0;
        }

        public bool TrainMinibatch(IDictionary<Variable, MinibatchData> arguments, DeviceDescriptor computeDevice)
        {
            Dictionary<Variable, Value> values = arguments.ToDictionary(p => p.Key, p => p.Value.data);
            return TrainMinibatch(values, arguments.Values.Any(d => d.sweepEnd), computeDevice);
        }

        public double TestMinibatch(IDictionary<Variable, Value> arguments, DeviceDescriptor computeDevice)
        {
            List<Variable> vars = arguments.Keys.ToList();
            List<Value> values = vars.Select(v => arguments[v]).ToList();
            double average;
            Status.Check(Native.ctk_trainer_test_minibatch(Handle, Interop.Handles.Of(vars), Value.HandlesOf(values), vars.Count,
                                                           DeviceDescriptor.Native_(computeDevice), out average));
            GC.KeepAlive(vars);
            GC.KeepAlive(values);
            return average;
        }

        public double TestMinibatch(IDictionary<Variable, MinibatchData> arguments, DeviceDescriptor computeDevice)
        {
            return TestMinibatch(arguments.ToDictionary(p => p.Key, p => p.Value.data), computeDevice);
        }

        public double PreviousMinibatchLossAverage() { double v; Status.Check(Native.ctk_trainer_previous_minibatch_loss_average(Handle, out v)); return v; }
        public double PreviousMinibatchEvaluationAverage() { double v; Status.Check(Native.ctk_trainer_previous_minibatch_evaluation_average(Handle, out v)); return v; }
        public ulong PreviousMinibatchSampleCount() { long n; Status.Check(Native.ctk_trainer_previous_minibatch_sample_count(Handle, out n)); return (ulong)n; }
        public ulong TotalNumberOfSamplesSeen() { long n; Status.Check(Native.ctk_trainer_total_samples_seen(Handle, out n)); return (ulong)n; }
        public void SummarizeTrainingProgress() { Status.Check(Native.ctk_trainer_summarize_training_progress(Handle)); }
        public void SummarizeTestProgress() { Status.Check(Native.ctk_trainer_summarize_test_progress(Handle)); }
        public void SaveCheckpoint(string filePath) { Status.Check(Native.ctk_trainer_save_checkpoint(Handle, Utf8.Bytes(filePath))); }
        public void RestoreFromCheckpoint(string filePath) { Status.Check(Native.ctk_trainer_restore_from_checkpoint(Handle, Utf8.Bytes(filePath))); }
        public Function Model() { return model; }
        public Function LossFunction() { return loss; }
        public Function EvaluationFunction() { return evaluation; }
        public IList<Learner> ParameterLearners() { return learners; }
    }
}
