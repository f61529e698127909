// P/Invoke declarations of ctk's C ABI (include/ctk/c/ctk.h), one to one. The library is named "ctk_c"
// without prefix or extension so that both mono and .NET resolve libctk_c.so (CNTK's versioned
// "Cntk.Core.CSBinding-2.x.dll" name is what broke .NET on Linux). Strings cross as NUL-terminated UTF-8
// bytes; single handles as SafeHandles (kept alive for the call), arrays of handles as IntPtr[].
using System;
using System.Runtime.InteropServices;

namespace CNTK.Interop
{
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeDevice
    {
        public int type;
        public int index;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeLearnerOptions
    {
        public double l1;
        public double l2;
        public double noise;
        public double clipping;
        public int clippingWithTruncation;
        public int useMeanGradient;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeStreamDef
    {
        public IntPtr name;
        public IntPtr field;
        public long dim;
        public int isSparse;
        public int definesMbSize;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeSourceConfig
    {
        public long maxSamples;
        public long maxSweeps;
        public int randomize;
        public long windowInChunks;
        public long windowInSamples;
        public ulong seed;
        public int readerThreads;
    }

    internal static class Native
    {
        const string Lib = "ctk_c";

        public const int AbiVersion = 1;

        [DllImport(Lib)] public static extern int ctk_abi_version();
        [DllImport(Lib)] public static extern IntPtr ctk_version_string();
        [DllImport(Lib)] public static extern IntPtr ctk_last_error();
        [DllImport(Lib)] public static extern int ctk_last_error_code();

        [DllImport(Lib)] public static extern int ctk_all_devices([Out] NativeDevice[] devices, long capacity, out long count);
        [DllImport(Lib)] public static extern int ctk_default_device(out NativeDevice device);
        [DllImport(Lib)] public static extern int ctk_set_default_device(NativeDevice device);
        [DllImport(Lib)] public static extern int ctk_device_available(NativeDevice device, out int available);
        [DllImport(Lib)] public static extern int ctk_set_fixed_random_seed(ulong seed);
        [DllImport(Lib)] public static extern int ctk_reset_random_seed(ulong seed);
        [DllImport(Lib)] public static extern int ctk_force_deterministic_algorithms(int on);
        [DllImport(Lib)] public static extern int ctk_deterministic_algorithms_forced(out int on);
        [DllImport(Lib)] public static extern int ctk_set_max_num_cpu_threads(int threads);
        [DllImport(Lib)] public static extern int ctk_max_num_cpu_threads(out int threads);
        [DllImport(Lib)] public static extern int ctk_info_report(byte[] buf, long capacity, out long length);

        // ---- variables ----
        [DllImport(Lib)] public static extern int ctk_input_variable(long[] shape, int rank, int dtype, int dynamicAxes, int isSparse, int needsGradient, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern int ctk_parameter(long[] shape, int rank, int dtype, InitializerHandle init, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern int ctk_parameter_from_data(long[] shape, int rank, int dtype, IntPtr data, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern int ctk_constant_from_data(long[] shape, int rank, int dtype, IntPtr data, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern int ctk_constant(long[] shape, int rank, int dtype, double value, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern int ctk_placeholder(long[] shape, int rank, int dynamicAxes, byte[] name, out VariableHandle result);
        [DllImport(Lib)] public static extern void ctk_variable_release(IntPtr v);
        [DllImport(Lib)] public static extern int ctk_variable_kind(VariableHandle v, out int kind);
        [DllImport(Lib)] public static extern int ctk_variable_name(VariableHandle v, out IntPtr name);
        [DllImport(Lib)] public static extern int ctk_variable_uid(VariableHandle v, out IntPtr uid);
        [DllImport(Lib)] public static extern int ctk_variable_dtype(VariableHandle v, out int dtype);
        [DllImport(Lib)] public static extern int ctk_variable_shape(VariableHandle v, [Out] long[] dims, int capacity, out int rank);
        [DllImport(Lib)] public static extern int ctk_variable_dynamic_axes(VariableHandle v, out int axes);
        [DllImport(Lib)] public static extern int ctk_variable_is_sparse(VariableHandle v, out int sparse);
        [DllImport(Lib)] public static extern int ctk_variable_needs_gradient(VariableHandle v, out int needsGradient);
        [DllImport(Lib)] public static extern int ctk_variable_equals(VariableHandle a, VariableHandle b, out int equal);
        [DllImport(Lib)] public static extern int ctk_variable_owner(VariableHandle v, out FunctionHandle owner);
        [DllImport(Lib)] public static extern int ctk_variable_as_function(VariableHandle v, out FunctionHandle f);
        [DllImport(Lib)] public static extern int ctk_variable_get_value(VariableHandle v, int dtype, IntPtr data, long count);
        [DllImport(Lib)] public static extern int ctk_variable_set_value(VariableHandle v, int dtype, IntPtr data, long count);
        [DllImport(Lib)] public static extern int ctk_variable_to_string(VariableHandle v, byte[] buf, long capacity, out long length);

        [DllImport(Lib)] public static extern int ctk_initializer_create(int kind, double scale, int outputRank, int filterRank, ulong seed, out InitializerHandle init);
        [DllImport(Lib)] public static extern int ctk_initializer_bilinear(long width, long height, out InitializerHandle init);
        [DllImport(Lib)] public static extern void ctk_initializer_release(IntPtr init);

        // ---- values ----
        [DllImport(Lib)] public static extern int ctk_value_create(int dtype, long[] shape, int rank, IntPtr data, int copyMode, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern int ctk_value_create(int dtype, long[] shape, int rank, float[] data, int copyMode, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern int ctk_value_create(int dtype, long[] shape, int rank, double[] data, int copyMode, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern int ctk_value_create_sequences(int dtype, long[] sampleShape, int sampleRank, IntPtr data, long[] lengths, long numSequences, int[] continues, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern int ctk_value_create_one_hot(long numClasses, long[] indices, long count, long[] lengths, long numSequences, int[] continues, int dtype, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern int ctk_value_create_sparse_csc(int dtype, long dim, long numColumns, long[] colStarts, long[] rowIndices, IntPtr values, long[] lengths, long numSequences, int[] continues, NativeDevice device, out ValueHandle value);
        [DllImport(Lib)] public static extern void ctk_value_release(IntPtr value);
        [DllImport(Lib)] public static extern int ctk_value_dtype(ValueHandle value, out int dtype);
        [DllImport(Lib)] public static extern int ctk_value_shape(ValueHandle value, [Out] long[] dims, int capacity, out int rank);
        [DllImport(Lib)] public static extern int ctk_value_device(ValueHandle value, out NativeDevice device);
        [DllImport(Lib)] public static extern int ctk_value_is_one_hot(ValueHandle value, out int oneHot);
        [DllImport(Lib)] public static extern int ctk_value_sequence_lengths(ValueHandle value, [Out] long[] lengths, long capacity, out long count);
        [DllImport(Lib)] public static extern int ctk_value_copy_data(ValueHandle value, int dtype, IntPtr data, long count);
        [DllImport(Lib)] public static extern int ctk_value_copy_sequence(ValueHandle value, long i, int dtype, IntPtr data, long capacity, out long frames);
        [DllImport(Lib)] public static extern int ctk_value_assign(ValueHandle dst, IntPtr src);
        [DllImport(Lib)] public static extern int ctk_value_one_hot_indices(ValueHandle value, [Out] long[] indices, long count);

        // ---- functions ----
        [DllImport(Lib)] public static extern int ctk_function_load(byte[] path, int format, out FunctionHandle f);
        [DllImport(Lib)] public static extern int ctk_function_load_buffer(byte[] bytes, long size, out FunctionHandle f);
        [DllImport(Lib)] public static extern int ctk_function_save(FunctionHandle f, byte[] path, int format);
        [DllImport(Lib)] public static extern int ctk_function_save_buffer(FunctionHandle f, byte[] buf, long capacity, out long size);
        [DllImport(Lib)] public static extern void ctk_function_release(IntPtr f);
        [DllImport(Lib)] public static extern int ctk_function_name(FunctionHandle f, out IntPtr name);
        [DllImport(Lib)] public static extern int ctk_function_set_name(FunctionHandle f, byte[] name);
        [DllImport(Lib)] public static extern int ctk_function_uid(FunctionHandle f, out IntPtr uid);
        [DllImport(Lib)] public static extern int ctk_function_op_name(FunctionHandle f, out IntPtr opName);
        [DllImport(Lib)] public static extern int ctk_function_variables(FunctionHandle f, int which, [Out] IntPtr[] result, long capacity, out long count);
        [DllImport(Lib)] public static extern int ctk_function_output(FunctionHandle f, out VariableHandle output);
        [DllImport(Lib)] public static extern int ctk_function_find_by_name(FunctionHandle f, byte[] name, int nested, out FunctionHandle found);
        [DllImport(Lib)] public static extern int ctk_function_find_all_with_name(FunctionHandle f, byte[] name, int nested, [Out] IntPtr[] result, long capacity, out long count);
        [DllImport(Lib)] public static extern int ctk_function_clone(FunctionHandle f, int method, IntPtr[] from, IntPtr[] to, long n, out FunctionHandle clone);
        [DllImport(Lib)] public static extern int ctk_function_replace_placeholders(FunctionHandle f, IntPtr[] placeholders, IntPtr[] replacements, long n);
        [DllImport(Lib)] public static extern int ctk_function_call(FunctionHandle f, IntPtr[] args, long n, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_combine(IntPtr[] outputs, long n, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_function_as_composite(FunctionHandle f, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_function_evaluate(FunctionHandle f, IntPtr[] inputs, IntPtr[] values, long nIn, IntPtr[] outputs, long nOut, NativeDevice device, [Out] IntPtr[] results);
        [DllImport(Lib)] public static extern int ctk_function_to_string(FunctionHandle f, byte[] buf, long capacity, out long length);

        // ---- ops ----
        [DllImport(Lib)] public static extern int ctk_unary(byte[] op, VariableHandle x, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_unary_alpha(byte[] op, VariableHandle x, double alpha, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_binary(byte[] op, VariableHandle a, VariableHandle b, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_clip(VariableHandle x, double min, double max, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_element_select(VariableHandle condition, VariableHandle thenValue, VariableHandle elseValue, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_times(VariableHandle x, VariableHandle w, int outputRank, int inferInputRankToMap, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_axis_op(byte[] op, VariableHandle x, int axis, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_reduce(byte[] op, VariableHandle x, int[] axes, int n, int keepdims, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_classification_error(VariableHandle output, VariableHandle target, long topN, int axis, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_reshape(VariableHandle x, long[] shape, int rank, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_transpose(VariableHandle x, int[] perm, int rank, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_splice(IntPtr[] operands, long n, int axis, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_slice(VariableHandle x, int[] axes, long[] begin, long[] end, long[] strides, int n, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_sum(IntPtr[] operands, long n, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_cast(VariableHandle x, int dtype, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_dropout(VariableHandle x, double rate, ulong seed, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_convolution(VariableHandle w, VariableHandle x, long[] strides, int nStrides, int[] autoPadding, int nPadding, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_pooling(VariableHandle x, int type, long[] window, int nWindow, long[] strides, int nStrides, int[] autoPadding, int nPadding, int ceilOutDim, int includePad, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_batch_normalization(VariableHandle x, VariableHandle scale, VariableHandle bias, VariableHandle runningMean, VariableHandle runningVar, VariableHandle runningCount, int spatial, double normalizationTimeConstant, double blendTimeConstant, double epsilon, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_past_value(VariableHandle x, VariableHandle initialState, long timeStep, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_future_value(VariableHandle x, VariableHandle initialState, long timeStep, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_sequence_op(byte[] op, VariableHandle x, byte[] name, out FunctionHandle result);
        [DllImport(Lib)] public static extern int ctk_sequence_broadcast_as(VariableHandle x, VariableHandle like, byte[] name, out FunctionHandle result);

        // ---- schedules, learners, trainer ----
        [DllImport(Lib)] public static extern int ctk_schedule_create(double[] values, long[] counts, long n, long epochSize, long minibatchSize, out ScheduleHandle schedule);
        [DllImport(Lib)] public static extern int ctk_momentum_as_time_constant_schedule(double timeConstant, long epochSize, out ScheduleHandle schedule);
        [DllImport(Lib)] public static extern int ctk_schedule_at(ScheduleHandle s, long samplesSeen, out double value);
        [DllImport(Lib)] public static extern void ctk_schedule_release(IntPtr s);
        [DllImport(Lib)] public static extern int ctk_learner_options_default(out NativeLearnerOptions options);
        [DllImport(Lib)] public static extern int ctk_learner_sgd(IntPtr[] parameters, long n, ScheduleHandle lr, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_momentum_sgd(IntPtr[] parameters, long n, ScheduleHandle lr, ScheduleHandle momentum, int unitGain, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_nesterov(IntPtr[] parameters, long n, ScheduleHandle lr, ScheduleHandle momentum, int unitGain, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_adagrad(IntPtr[] parameters, long n, ScheduleHandle lr, int needAveMultiplier, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_fsadagrad(IntPtr[] parameters, long n, ScheduleHandle lr, ScheduleHandle momentum, int unitGain, ScheduleHandle varianceMomentum, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_adam(IntPtr[] parameters, long n, ScheduleHandle lr, ScheduleHandle momentum, int unitGain, ScheduleHandle varianceMomentum, double epsilon, int adamax, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_rmsprop(IntPtr[] parameters, long n, ScheduleHandle lr, double gamma, double inc, double dec, double max, double min, int needAveMultiplier, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern int ctk_learner_adadelta(IntPtr[] parameters, long n, ScheduleHandle lr, double rho, double epsilon, ref NativeLearnerOptions options, out LearnerHandle learner);
        [DllImport(Lib)] public static extern void ctk_learner_release(IntPtr learner);
        [DllImport(Lib)] public static extern int ctk_learner_learning_rate(LearnerHandle learner, out double lr);
        [DllImport(Lib)] public static extern int ctk_learner_reset_learning_rate(LearnerHandle learner, ScheduleHandle lr);
        [DllImport(Lib)] public static extern int ctk_learner_samples_seen(LearnerHandle learner, out long samples);

        [DllImport(Lib)] public static extern int ctk_trainer_create(FunctionHandle model, FunctionHandle loss, FunctionHandle metric, IntPtr[] learners, long n, long progressFrequency, out TrainerHandle trainer);
        [DllImport(Lib)] public static extern void ctk_trainer_release(IntPtr trainer);
        [DllImport(Lib)] public static extern int ctk_trainer_train_minibatch(TrainerHandle trainer, IntPtr[] inputs, IntPtr[] values, long n, int sweepEnd, NativeDevice device, out int updated);
        [DllImport(Lib)] public static extern int ctk_trainer_test_minibatch(TrainerHandle trainer, IntPtr[] inputs, IntPtr[] values, long n, NativeDevice device, out double average);
        [DllImport(Lib)] public static extern int ctk_trainer_previous_minibatch_loss_average(TrainerHandle trainer, out double loss);
        [DllImport(Lib)] public static extern int ctk_trainer_previous_minibatch_evaluation_average(TrainerHandle trainer, out double metric);
        [DllImport(Lib)] public static extern int ctk_trainer_previous_minibatch_sample_count(TrainerHandle trainer, out long count);
        [DllImport(Lib)] public static extern int ctk_trainer_total_samples_seen(TrainerHandle trainer, out long count);
        [DllImport(Lib)] public static extern int ctk_trainer_summarize_training_progress(TrainerHandle trainer);
        [DllImport(Lib)] public static extern int ctk_trainer_summarize_test_progress(TrainerHandle trainer);
        [DllImport(Lib)] public static extern int ctk_trainer_save_checkpoint(TrainerHandle trainer, byte[] path);
        [DllImport(Lib)] public static extern int ctk_trainer_restore_from_checkpoint(TrainerHandle trainer, byte[] path);

        // ---- readers ----
        [DllImport(Lib)] public static extern int ctk_ctf_deserializer(byte[] path, NativeStreamDef[] streams, long n, out DeserializerHandle d);
        [DllImport(Lib)] public static extern int ctk_idx_deserializer(byte[] images, byte[] labels, long numClasses, out DeserializerHandle d);
        [DllImport(Lib)] public static extern int ctk_image_crop(byte[] cropType, long width, long height, double sideMin, double sideMax, double areaMin, double areaMax, double aspectMin, double aspectMax, byte[] jitterType, int hflip, uint seed, out ImageTransformHandle t);
        [DllImport(Lib)] public static extern int ctk_image_scale(long width, long height, long channels, byte[] interpolations, byte[] scaleMode, long padValue, out ImageTransformHandle t);
        [DllImport(Lib)] public static extern int ctk_image_mean(byte[] meanFile, out ImageTransformHandle t);
        [DllImport(Lib)] public static extern int ctk_image_color(double brightness, double contrast, double saturation, uint seed, out ImageTransformHandle t);
        [DllImport(Lib)] public static extern void ctk_image_transform_release(IntPtr t);
        [DllImport(Lib)] public static extern int ctk_image_deserializer(byte[] mapFile, byte[] labelStream, long numClasses, byte[] imageStream, IntPtr[] transforms, long n, int grayscale, int base64, out DeserializerHandle d);
        [DllImport(Lib)] public static extern void ctk_deserializer_release(IntPtr d);
        [DllImport(Lib)] public static extern int ctk_source_config_default(out NativeSourceConfig config);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_create(IntPtr[] deserializers, long n, ref NativeSourceConfig config, out SourceHandle source);
        [DllImport(Lib)] public static extern void ctk_minibatch_source_release(IntPtr source);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_stream_count(SourceHandle source, out long count);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_stream_info(SourceHandle source, long i, out IntPtr name, [Out] long[] dims, int capacity, out int rank, out int dtype, out int isSparse);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_next(SourceHandle source, long samples, long numPartitions, long partitionIndex, NativeDevice device, out MinibatchHandle mb);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_get_state(SourceHandle source, byte[] buf, long capacity, out long size);
        [DllImport(Lib)] public static extern int ctk_minibatch_source_set_state(SourceHandle source, byte[] bytes, long size);
        [DllImport(Lib)] public static extern void ctk_minibatch_release(IntPtr mb);
        [DllImport(Lib)] public static extern int ctk_minibatch_stream_count(MinibatchHandle mb, out long count);
        [DllImport(Lib)] public static extern int ctk_minibatch_stream(MinibatchHandle mb, byte[] stream, out ValueHandle value, out long numSamples, out long numSequences, out int sweepEnd);
    }
}
