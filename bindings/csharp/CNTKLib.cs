// CNTKLib: CNTK's ops, initializers and process-wide switches, with CNTK's C# argument order. CNTK's C#
// shapes and static axes are column-major; Times(W, x) in that order is ctk's times(x, W).
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK.Interop;

namespace CNTK
{
    public static partial class CNTKLib
    {
        public const double DefaultParamInitScale = 1.0;
        public const int SentinelValueForInferParamInitRank = int.MaxValue;
        public const ulong SentinelValueForAutoSelectRandomSeed = ulong.MaxValue - 2;

        static Function Made(int status, FunctionHandle f)
        {
            Status.Check(status);
            return new Function(f);
        }

        static Function Unary(string op, Variable x, string name)
        {
            FunctionHandle f;
            return Made(Native.ctk_unary(Utf8.Bytes(op), x.Handle, Utf8.Bytes(name), out f), f);
        }

        static Function Binary(string op, Variable a, Variable b, string name)
        {
            FunctionHandle f;
            return Made(Native.ctk_binary(Utf8.Bytes(op), a.Handle, b.Handle, Utf8.Bytes(name), out f), f);
        }

        // ---- inputs ----
        public static Variable InputVariable(NDShape shape, DataType dataType, string name = "", IList<Axis> dynamicAxes = null)
        {
            return Variable.InputVariable(shape, dataType, name, dynamicAxes);
        }

        public static Variable InputVariable(NDShape shape, bool isSparse, DataType dataType, string name = "", IList<Axis> dynamicAxes = null)
        {
            return Variable.InputVariable(shape, dataType, name, dynamicAxes, isSparse);
        }

        public static Variable InputVariable(NDShape shape, DataType dataType, bool needsGradient, string name = "")
        {
            return Variable.InputVariable(shape, dataType, name, null, false, needsGradient);
        }

        public static Variable PlaceholderVariable(NDShape shape, IList<Axis> dynamicAxes) { return Variable.PlaceholderVariable(shape, dynamicAxes); }
        public static Variable PlaceholderVariable(string name = "") { return Variable.PlaceholderVariable(name); }

        // ---- element-wise ----
        public static Function Negate(Variable x, string name = "") { return Unary("negate", x, name); }
        public static Function Sigmoid(Variable x, string name = "") { return Unary("sigmoid", x, name); }
        public static Function Tanh(Variable x, string name = "") { return Unary("tanh", x, name); }
        public static Function Asin(Variable x, string name = "") { return Unary("asin", x, name); }
        public static Function Acos(Variable x, string name = "") { return Unary("acos", x, name); }
        public static Function Atan(Variable x, string name = "") { return Unary("atan", x, name); }
        public static Function Sin(Variable x, string name = "") { return Unary("sin", x, name); }
        public static Function Cos(Variable x, string name = "") { return Unary("cos", x, name); }
        public static Function Tan(Variable x, string name = "") { return Unary("tan", x, name); }
        public static Function Sinh(Variable x, string name = "") { return Unary("sinh", x, name); }
        public static Function Cosh(Variable x, string name = "") { return Unary("cosh", x, name); }
        public static Function Asinh(Variable x, string name = "") { return Unary("asinh", x, name); }
        public static Function Atanh(Variable x, string name = "") { return Unary("atanh", x, name); }
        public static Function ReLU(Variable x, string name = "") { return Unary("relu", x, name); }
        public static Function ELU(Variable x, string name = "") { return Unary("elu", x, name); }
        public static Function SELU(Variable x, string name = "") { return Unary("selu", x, name); }
        public static Function Softplus(Variable x, string name = "") { return Unary("softplus", x, name); }
        public static Function Softsign(Variable x, string name = "") { return Unary("softsign", x, name); }
        public static Function HardSigmoid(Variable x, string name = "") { return Unary("hard_sigmoid", x, name); }
        public static Function Exp(Variable x, string name = "") { return Unary("exp", x, name); }
        public static Function Log(Variable x, string name = "") { return Unary("log", x, name); }
        public static Function Square(Variable x, string name = "") { return Unary("square", x, name); }
        public static Function Sqrt(Variable x, string name = "") { return Unary("sqrt", x, name); }
        public static Function Abs(Variable x, string name = "") { return Unary("abs", x, name); }
        public static Function Floor(Variable x, string name = "") { return Unary("floor", x, name); }
        public static Function Ceil(Variable x, string name = "") { return Unary("ceil", x, name); }
        public static Function Round(Variable x, string name = "") { return Unary("round", x, name); }
        public static Function Reciprocal(Variable x, string name = "") { return Unary("reciprocal", x, name); }
        public static Function ElementNot(Variable x, string name = "") { return Unary("element_not", x, name); }
        public static Function Alias(Variable x, string name = "") { return Unary("alias", x, name); }
        public static Function StopGradient(Variable x, string name = "") { return Unary("stop_gradient", x, name); }

        public static Function LeakyReLU(Variable x, double alpha = 0.01, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_unary_alpha(Utf8.Bytes("leaky_relu"), x.Handle, alpha, Utf8.Bytes(name), out f), f);
        }

        public static Function Plus(Variable left, Variable right, string name = "") { return Binary("plus", left, right, name); }
        public static Function Minus(Variable left, Variable right, string name = "") { return Binary("minus", left, right, name); }
        public static Function ElementTimes(Variable left, Variable right, string name = "") { return Binary("element_times", left, right, name); }
        public static Function ElementDivide(Variable left, Variable right, string name = "") { return Binary("element_divide", left, right, name); }
        public static Function Pow(Variable left, Variable right, string name = "") { return Binary("pow", left, right, name); }
        public static Function ElementMax(Variable left, Variable right, string name = "") { return Binary("element_max", left, right, name); }
        public static Function ElementMin(Variable left, Variable right, string name = "") { return Binary("element_min", left, right, name); }
        public static Function LogAddExp(Variable left, Variable right, string name = "") { return Binary("log_add_exp", left, right, name); }
        public static Function Equal(Variable left, Variable right, string name = "") { return Binary("equal", left, right, name); }
        public static Function NotEqual(Variable left, Variable right, string name = "") { return Binary("not_equal", left, right, name); }
        public static Function Less(Variable left, Variable right, string name = "") { return Binary("less", left, right, name); }
        public static Function LessEqual(Variable left, Variable right, string name = "") { return Binary("less_equal", left, right, name); }
        public static Function Greater(Variable left, Variable right, string name = "") { return Binary("greater", left, right, name); }
        public static Function GreaterEqual(Variable left, Variable right, string name = "") { return Binary("greater_equal", left, right, name); }

        public static Function ElementSelect(Variable condition, Variable thenOperand, Variable elseOperand, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_element_select(condition.Handle, thenOperand.Handle, elseOperand.Handle, Utf8.Bytes(name), out f), f);
        }

        // CNTK's Clip takes its bounds as variables; ctk's as numbers, read from the constants given.
        public static Function Clip(Variable operand, Variable min, Variable max, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_clip(operand.Handle, ScalarOf(min, "min"), ScalarOf(max, "max"), Utf8.Bytes(name), out f), f);
        }

        static double ScalarOf(Variable v, string what)
        {
            if (!v.IsConstant || v.Shape.TotalSize != 1)
                throw new ArgumentException("Clip: '" + what + "' must be a scalar constant here");
            return Convert.ToDouble(new Constant(v.Handle).GetValue().GetData<double>()[0]);
        }

        // ---- products ----
        public static Function Times(Variable leftOperand, Variable rightOperand, string name = "")
        {
            return Times(leftOperand, rightOperand, 1, name);
        }

        public static Function Times(Variable leftOperand, Variable rightOperand, uint outputRank, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_times(rightOperand.Handle, leftOperand.Handle, (int)outputRank, -1, Utf8.Bytes(name), out f), f);
        }

        // ---- along axes ----
        public static Function Softmax(Variable x, string name = "") { return AxisOp("softmax", x, null, name); }
        public static Function Softmax(Variable x, Axis axis, string name = "") { return AxisOp("softmax", x, axis, name); }
        public static Function LogSoftmax(Variable x, string name = "") { return AxisOp("log_softmax", x, null, name); }
        public static Function LogSoftmax(Variable x, Axis axis, string name = "") { return AxisOp("log_softmax", x, axis, name); }
        public static Function Hardmax(Variable x, string name = "") { return AxisOp("hardmax", x, null, name); }
        public static Function Argmax(Variable x, Axis axis, string name = "") { return AxisOp("argmax", x, axis, name); }
        public static Function Argmin(Variable x, Axis axis, string name = "") { return AxisOp("argmin", x, axis, name); }

        static Function AxisOp(string op, Variable x, Axis axis, string name)
        {
            int code = axis == null ? 2147483647 : axis.ToNative(x.StaticRank);
            FunctionHandle f;
            return Made(Native.ctk_axis_op(Utf8.Bytes(op), x.Handle, code, Utf8.Bytes(name), out f), f);
        }

        public static Function ReduceSum(Variable x, Axis axis, string name = "") { return Reduce("reduce_sum", x, new[] { axis }, true, name); }
        public static Function ReduceSum(Variable x, AxisVector axes, bool keepDims = true, string name = "") { return Reduce("reduce_sum", x, axes, keepDims, name); }
        public static Function ReduceMean(Variable x, Axis axis, string name = "") { return Reduce("reduce_mean", x, new[] { axis }, true, name); }
        public static Function ReduceMean(Variable x, AxisVector axes, bool keepDims = true, string name = "") { return Reduce("reduce_mean", x, axes, keepDims, name); }
        public static Function ReduceMax(Variable x, Axis axis, string name = "") { return Reduce("reduce_max", x, new[] { axis }, true, name); }
        public static Function ReduceMin(Variable x, Axis axis, string name = "") { return Reduce("reduce_min", x, new[] { axis }, true, name); }
        public static Function ReduceProd(Variable x, Axis axis, string name = "") { return Reduce("reduce_prod", x, new[] { axis }, true, name); }
        public static Function ReduceLogSum(Variable x, Axis axis, string name = "") { return Reduce("reduce_log_sum_exp", x, new[] { axis }, true, name); }

        static Function Reduce(string op, Variable x, IList<Axis> axes, bool keepDims, string name)
        {
            int rank = axes.Any(a => a.IsStatic) ? x.StaticRank : 0;
            int[] codes = axes.Select(a => a.ToNative(rank)).ToArray();
            FunctionHandle f;
            return Made(Native.ctk_reduce(Utf8.Bytes(op), x.Handle, codes, codes.Length, keepDims ? 1 : 0, Utf8.Bytes(name), out f), f);
        }

        public static Function Reshape(Variable x, NDShape newShape, string name = "")
        {
            long[] dims = newShape.RowMajor();
            FunctionHandle f;
            return Made(Native.ctk_reshape(x.Handle, dims, dims.Length, Utf8.Bytes(name), out f), f);
        }

        public static Function Splice(IList<Variable> operands, Axis axis, string name = "")
        {
            int rank = operands.Count > 0 ? operands[0].StaticRank : 0;
            FunctionHandle f;
            Function result = Made(Native.ctk_splice(Interop.Handles.Of(operands), operands.Count, axis.ToNative(rank), Utf8.Bytes(name), out f), f);
            GC.KeepAlive(operands);
            return result;
        }

        public static Function Slice(Variable x, AxisVector axis, IntVector beginIndex, IntVector endIndex, string name = "")
        {
            return Slice(x, axis, beginIndex, endIndex, null, name);
        }

        public static Function Slice(Variable x, AxisVector axis, IntVector beginIndex, IntVector endIndex, IntVector strides, string name = "")
        {
            int n = axis.Count;
            if (beginIndex.Count != n || endIndex.Count != n || (strides != null && strides.Count != n))
                throw new ArgumentException("Slice: one begin, end (and stride) per axis");
            int rank = x.StaticRank;
            int[] axes = axis.Select(a => a.ToNative(rank)).ToArray();
            long[] steps = strides == null ? null : strides.Select(v => (long)v).ToArray();
            FunctionHandle f;
            return Made(Native.ctk_slice(x.Handle, axes, beginIndex.Select(v => (long)v).ToArray(), endIndex.Select(v => (long)v).ToArray(),
                                         steps, n, Utf8.Bytes(name), out f), f);
        }

        public static Function Dropout(Variable x, double dropoutRate, ulong seed = SentinelValueForAutoSelectRandomSeed, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_dropout(x.Handle, dropoutRate, Seed(seed), Utf8.Bytes(name), out f), f);
        }

        public static Function Combine(IList<Variable> operands, string name = "") { return Function.Combine(operands, name); }
        public static Function AsComposite(Function rootFunction, string name = "") { return Function.AsComposite(rootFunction, name); }

        // ---- losses ----
        public static Function CrossEntropyWithSoftmax(Variable prediction, Variable labels, string name = "")
        {
            return Binary("cross_entropy_with_softmax", prediction, labels, name);
        }

        public static Function ClassificationError(Variable prediction, Variable labels, string name = "")
        {
            return ClassificationError(prediction, labels, 1, name);
        }

        public static Function ClassificationError(Variable prediction, Variable labels, uint topN, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_classification_error(prediction.Handle, labels.Handle, topN, 2147483647, Utf8.Bytes(name), out f), f);
        }

        public static Function SquaredError(Variable prediction, Variable targets, string name = "") { return Binary("squared_error", prediction, targets, name); }
        public static Function BinaryCrossEntropy(Variable prediction, Variable targets, string name = "") { return Binary("binary_cross_entropy", prediction, targets, name); }
        public static Function CosineDistance(Variable x, Variable y, string name = "") { return Binary("cosine_distance", x, y, name); }

        // ---- images ----
        public static Function Convolution(Variable convolutionMap, Variable operand)
        {
            return Convolution(convolutionMap, operand, new NDShape(new[] { 1 }), new[] { true }, new[] { true });
        }

        public static Function Convolution(Variable convolutionMap, Variable operand, NDShape strides)
        {
            return Convolution(convolutionMap, operand, strides, new[] { true }, new[] { true });
        }

        public static Function Convolution(Variable convolutionMap, Variable operand, NDShape strides, IEnumerable<bool> sharing,
                                           IEnumerable<bool> autoPadding, string name = "")
        {
            if (sharing.Any(shared => !shared)) throw new NotSupportedException("Convolution: sharing false is not supported");
            long[] steps = strides.RowMajor();
            int[] pad = autoPadding.Reverse().Select(p => p ? 1 : 0).ToArray();
            FunctionHandle f;
            return Made(Native.ctk_convolution(convolutionMap.Handle, operand.Handle, steps, steps.Length, pad, pad.Length, Utf8.Bytes(name), out f), f);
        }

        public static Function Pooling(Variable operand, PoolingType poolingType, NDShape poolingWindowShape, string name = "")
        {
            return Pooling(operand, poolingType, poolingWindowShape, new NDShape(new[] { 1 }), new[] { false }, false, false, name);
        }

        public static Function Pooling(Variable operand, PoolingType poolingType, NDShape poolingWindowShape, NDShape strides,
                                       IEnumerable<bool> autoPadding = null, bool ceilOutDim = false, bool includePad = false, string name = "")
        {
            if (autoPadding == null) autoPadding = new[] { false };
            long[] window = poolingWindowShape.RowMajor();
            long[] s = strides.RowMajor();
            int[] pad = autoPadding.Reverse().Select(p => p ? 1 : 0).ToArray();
            FunctionHandle f;
            return Made(Native.ctk_pooling(operand.Handle, poolingType == PoolingType.Max ? 0 : 1, window, window.Length, s, s.Length, pad,
                                           pad.Length, ceilOutDim ? 1 : 0, includePad ? 1 : 0, Utf8.Bytes(name), out f), f);
        }

        public static Function BatchNormalization(Variable operand, Variable scale, Variable bias, Variable runningMean, Variable runningInvStd,
                                                  Variable runningCount, bool spatial, double normalizationTimeConstant = 0,
                                                  double blendTimeConstant = 0, double epsilon = 0.00001, bool useCuDNNEngine = true,
                                                  bool disableRegularization = false, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_batch_normalization(operand.Handle, scale.Handle, bias.Handle, runningMean.Handle, runningInvStd.Handle,
                                                       runningCount.Handle, spatial ? 1 : 0, normalizationTimeConstant, blendTimeConstant,
                                                       epsilon, Utf8.Bytes(name), out f), f);
        }

        // ---- sequences ----
        public static Function PastValue(Variable operand, uint offset = 1, string name = "") { return Delay(true, operand, null, offset, name); }
        public static Function PastValue(Variable operand, Variable initialState, uint offset = 1, string name = "") { return Delay(true, operand, initialState, offset, name); }
        public static Function FutureValue(Variable operand, uint offset = 1, string name = "") { return Delay(false, operand, null, offset, name); }
        public static Function FutureValue(Variable operand, Variable initialState, uint offset = 1, string name = "") { return Delay(false, operand, initialState, offset, name); }

        static Function Delay(bool past, Variable operand, Variable initialState, uint offset, string name)
        {
            VariableHandle init = initialState == null ? VariableHandle.Null : initialState.Handle;
            FunctionHandle f;
            int status = past ? Native.ctk_past_value(operand.Handle, init, offset, Utf8.Bytes(name), out f)
                              : Native.ctk_future_value(operand.Handle, init, offset, Utf8.Bytes(name), out f);
            return Made(status, f);
        }

        public static Function SequenceFirst(Variable x, string name = "") { return SequenceOp("first", x, name); }
        public static Function SequenceLast(Variable x, string name = "") { return SequenceOp("last", x, name); }
        public static Function SequenceIsFirst(Variable x, string name = "") { return SequenceOp("is_first", x, name); }
        public static Function SequenceIsLast(Variable x, string name = "") { return SequenceOp("is_last", x, name); }
        public static Function SequenceReduceSum(Variable x, string name = "") { return SequenceOp("reduce_sum", x, name); }
        public static Function SequenceReduceMax(Variable x, string name = "") { return SequenceOp("reduce_max", x, name); }
        public static Function SequenceSoftmax(Variable x, string name = "") { return SequenceOp("softmax", x, name); }

        public static Function SequenceBroadcastAs(Variable operand, Variable broadcastAs, string name = "")
        {
            FunctionHandle f;
            return Made(Native.ctk_sequence_broadcast_as(operand.Handle, broadcastAs.Handle, Utf8.Bytes(name), out f), f);
        }

        static Function SequenceOp(string op, Variable x, string name)
        {
            FunctionHandle f;
            return Made(Native.ctk_sequence_op(Utf8.Bytes(op), x.Handle, Utf8.Bytes(name), out f), f);
        }

        // ---- initializers ----
        static ulong Seed(ulong seed) { return seed == SentinelValueForAutoSelectRandomSeed ? ulong.MaxValue : seed; }

        static CNTKDictionary Init(int kind, double scale, int outputRank, int filterRank, ulong seed)
        {
            Status.EnsureAbi();
            InitializerHandle h;
            Status.Check(Native.ctk_initializer_create(kind, scale, outputRank, filterRank, Seed(seed), out h));
            return new CNTKDictionary(h);
        }

        public static CNTKDictionary ConstantInitializer(double value = 0.0) { return Init(0, value, SentinelValueForInferParamInitRank, SentinelValueForInferParamInitRank, SentinelValueForAutoSelectRandomSeed); }
        public static CNTKDictionary UniformInitializer(double scale, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(1, scale, SentinelValueForInferParamInitRank, SentinelValueForInferParamInitRank, seed); }
        public static CNTKDictionary NormalInitializer(double scale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(2, scale, outputRank, filterRank, seed); }
        public static CNTKDictionary TruncatedNormalInitializer(double scale = DefaultParamInitScale, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(3, scale, SentinelValueForInferParamInitRank, SentinelValueForInferParamInitRank, seed); }
        public static CNTKDictionary XavierInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(4, scale, outputRank, filterRank, seed); }
        public static CNTKDictionary GlorotUniformInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(5, scale, outputRank, filterRank, seed); }
        public static CNTKDictionary GlorotNormalInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(6, scale, outputRank, filterRank, seed); }
        public static CNTKDictionary HeUniformInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(7, scale, outputRank, filterRank, seed); }
        public static CNTKDictionary HeNormalInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, ulong seed = SentinelValueForAutoSelectRandomSeed) { return Init(8, scale, outputRank, filterRank, seed); }

        public static CNTKDictionary BilinearInitializer(uint kernelWidth, uint kernelHeight)
        {
            Status.EnsureAbi();
            InitializerHandle h;
            Status.Check(Native.ctk_initializer_bilinear(kernelWidth, kernelHeight, out h));
            return new CNTKDictionary(h);
        }

        // ---- process-wide switches ----
        static ulong randomSeed;
        static bool randomSeedFixed;

        public static void SetFixedRandomSeed(uint value)
        {
            Status.EnsureAbi();
            Status.Check(Native.ctk_set_fixed_random_seed(value));
            randomSeed = value;
            randomSeedFixed = true;
        }

        public static void ResetRandomSeed(uint value)
        {
            Status.EnsureAbi();
            Status.Check(Native.ctk_reset_random_seed(value));
            randomSeed = value;
            randomSeedFixed = false;
        }

        public static bool IsRandomSeedFixed() { return randomSeedFixed; }
        public static ulong GetRandomSeed() { return randomSeed; }

        public static void ForceDeterministicAlgorithms()
        {
            Status.EnsureAbi();
            Status.Check(Native.ctk_force_deterministic_algorithms(1));
        }

        public static bool ShouldForceDeterministicAlgorithms()
        {
            int on;
            Status.Check(Native.ctk_deterministic_algorithms_forced(out on));
            return on != 0;
        }

        public static void SetMaxNumCPUThreads(int numCPUThreads) { Utils.SetMaxNumCPUThreads(numCPUThreads); }
        public static int GetMaxNumCPUThreads() { return Utils.GetMaxNumCPUThreads(); }

        // The learners, as CNTKLib named them.
        public static Learner SGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                         AdditionalLearningOptions additionalOptions = null)
        {
            return Learner.SGDLearner(parameters, learningRateSchedule, additionalOptions);
        }

        public static Learner MomentumSGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                                 TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                                 AdditionalLearningOptions additionalOptions = null)
        {
            return Learner.MomentumSGDLearner(parameters, learningRateSchedule, momentumSchedule, unitGain, additionalOptions);
        }

        public static Learner AdamLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
                                          TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true,
                                          TrainingParameterScheduleDouble varianceMomentumSchedule = null, double epsilon = 1e-8,
                                          bool adamax = false, AdditionalLearningOptions additionalOptions = null)
        {
            return Learner.Adam(parameters, learningRateSchedule, momentumSchedule, unitGain, varianceMomentumSchedule, epsilon, adamax,
                                additionalOptions);
        }

        public static TrainingParameterScheduleDouble MomentumAsTimeConstantSchedule(double timeConstant)
        {
            return TrainingParameterScheduleDouble.MomentumAsTimeConstant(timeConstant);
        }
    }

    public static class Utils
    {
        public static void SetMaxNumCPUThreads(int numCPUThreads)
        {
            Status.EnsureAbi();
            Status.Check(Native.ctk_set_max_num_cpu_threads(numCPUThreads));
        }

        public static int GetMaxNumCPUThreads()
        {
            int n;
            Status.Check(Native.ctk_max_num_cpu_threads(out n));
            return n;
        }

        // ctk logs through its progress writers; the trace level is accepted for CNTK's signature.
        public static void SetTraceLevel(TraceLevel value) { }

        // ctk's build, devices and CPU report (what `ctk info` prints).
        public static string InfoReport()
        {
            Status.EnsureAbi();
            return Utf8.Text((byte[] b, long c, out long n) => Native.ctk_info_report(b, c, out n));
        }

        public static string VersionString()
        {
            return Utf8.FromNative(Native.ctk_version_string());
        }
    }
}
