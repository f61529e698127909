// CNTK's value types of the C# API: devices, data types, shapes in CNTK's column-major order (the reverse
// of the C ABI's row-major dims), axes, the enums, and the SWIG-era vector types code still names.
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK.Interop;

namespace CNTK
{
    public enum DataType { Unknown = 0, Float = 1, Double = 2, UChar = 3, Float16 = 4, Int8 = 5, Int16 = 6 }

    public enum DeviceKind { CPU, GPU }

    public enum ParameterCloningMethod { Share, Clone, Freeze }

    public enum ModelFormat { CNTKv2, ONNX, CNTKv1 }

    public enum PoolingType { Max, Average }

    public enum VariableKind { Input = 0, Output = 1, Parameter = 2, Constant = 3, Placeholder = 4 }

    public enum StorageFormat { Dense, SparseCSC, SparseBlockCol }

    public enum TraceLevel { Error = 0, Warning = 1, Info = 2 }

    internal static class DataTypes
    {
        // ctk_dtype codes.
        public static int ToNative(DataType t)
        {
            switch (t)
            {
                case DataType.Float: return 0;
                case DataType.Double: return 1;
                case DataType.Float16: return 2;
                default: throw new ArgumentException("DataType " + t + " is not supported (Float, Double, Float16 are)");
            }
        }

        public static DataType FromNative(int dtype)
        {
            switch (dtype)
            {
                case 0: return DataType.Float;
                case 1: return DataType.Double;
                case 2: return DataType.Float16;
                default: return DataType.Unknown;
            }
        }

        public static int Of<T>()
        {
            if (typeof(T) == typeof(float)) return 0;
            if (typeof(T) == typeof(double)) return 1;
            throw new ArgumentException("element type " + typeof(T).Name + " is not supported (float and double are)");
        }
    }

    public sealed class DeviceDescriptor : IEquatable<DeviceDescriptor>
    {
        readonly DeviceKind kind;
        readonly uint id;

        DeviceDescriptor(DeviceKind kind, uint id) { this.kind = kind; this.id = id; }

        public static DeviceDescriptor CPUDevice { get { return new DeviceDescriptor(DeviceKind.CPU, 0); } }

        public static DeviceDescriptor GPUDevice(int deviceId)
        {
            if (deviceId < 0) throw new ArgumentException("GPU id " + deviceId + " is negative");
            return new DeviceDescriptor(DeviceKind.GPU, (uint)deviceId);
        }

        public static DeviceDescriptor UseDefaultDevice()
        {
            Status.EnsureAbi();
            NativeDevice d;
            Status.Check(Native.ctk_default_device(out d));
            return FromNative(d);
        }

        public static bool TrySetDefaultDevice(DeviceDescriptor device)
        {
            return Native.ctk_set_default_device(device.ToNative()) == 0;
        }

        public static IList<DeviceDescriptor> AllDevices()
        {
            Status.EnsureAbi();
            long count;
            Status.Check(Native.ctk_all_devices(null, 0, out count));
            NativeDevice[] all = new NativeDevice[count];
            Status.Check(Native.ctk_all_devices(all, count, out count));
            return all.Select(FromNative).ToList();
        }

        public DeviceKind Type { get { return kind; } }
        public uint Id { get { return id; } }

        internal NativeDevice ToNative()
        {
            NativeDevice d;
            d.type = kind == DeviceKind.GPU ? 1 : 0;
            d.index = (int)id;
            return d;
        }

        internal static DeviceDescriptor FromNative(NativeDevice d)
        {
            return new DeviceDescriptor(d.type == 1 ? DeviceKind.GPU : DeviceKind.CPU, (uint)d.index);
        }

        // A null device means the default one.
        internal static NativeDevice Native_(DeviceDescriptor device)
        {
            if (device != null) return device.ToNative();
            NativeDevice d;
            d.type = -1;
            d.index = 0;
            return d;
        }

        public bool Equals(DeviceDescriptor other) { return other != null && other.kind == kind && other.id == id; }
        public override bool Equals(object obj) { return Equals(obj as DeviceDescriptor); }
        public override int GetHashCode() { return (int)kind * 1000 + (int)id; }
        public override string ToString() { return kind == DeviceKind.CPU ? "CPU" : "GPU[" + id + "]"; }
    }

    // A shape in CNTK's C# order: column-major, the fastest-varying dim first ({28, 28, 1} is W, H, C).
    public sealed class NDShape : IEquatable<NDShape>
    {
        public const int InferredDimension = -1;
        public const int FreeDimension = -3;

        readonly int[] dims;

        public NDShape() { dims = new int[0]; }
        public NDShape(int numAxes, int dimension) { dims = Enumerable.Repeat(dimension, numAxes).ToArray(); }
        public NDShape(IEnumerable<int> dimensions) { dims = dimensions.ToArray(); }

        public static NDShape CreateNDShape(IEnumerable<int> dimensions) { return new NDShape(dimensions); }
        public static NDShape Unknown() { return new NDShape(); }

        public static implicit operator NDShape(int[] dimensions) { return new NDShape(dimensions); }

        public int Rank { get { return dims.Length; } }
        public int this[int axis] { get { return dims[axis]; } }
        public IList<int> Dimensions { get { return dims.ToList(); } }

        public int TotalSize
        {
            get
            {
                int size = 1;
                foreach (int d in dims)
                {
                    if (d < 0) throw new ArgumentException("NDShape " + this + " has an unknown dim: no total size");
                    size *= d;
                }
                return size;
            }
        }

        public bool HasInferredDimension { get { return dims.Contains(InferredDimension); } }
        public bool HasFreeDimension { get { return dims.Contains(FreeDimension); } }
        public bool IsScalar { get { return dims.Length == 0; } }

        public NDShape SubShape(int beginAxis, int endAxis) { return new NDShape(dims.Skip(beginAxis).Take(endAxis - beginAxis)); }
        public NDShape SubShape(int beginAxis) { return SubShape(beginAxis, dims.Length); }
        public NDShape AppendShape(NDShape other) { return new NDShape(dims.Concat(other.dims)); }

        // The C ABI's row-major dims.
        internal long[] RowMajor()
        {
            long[] r = new long[dims.Length];
            for (int i = 0; i < dims.Length; ++i) r[i] = dims[dims.Length - 1 - i];
            return r;
        }

        // [leading, row-major dims...]: a batch of samples of this shape.
        internal long[] RowMajorWithLeading(long leading)
        {
            long[] r = new long[dims.Length + 1];
            r[0] = leading;
            for (int i = 0; i < dims.Length; ++i) r[i + 1] = dims[dims.Length - 1 - i];
            return r;
        }

        // A shape from a (dims, capacity, out rank) call of the C ABI.
        internal delegate int ShapeCall(long[] dims, int capacity, out int rank);

        internal static NDShape Read(ShapeCall call)
        {
            long[] dims = new long[64];
            int rank;
            Status.Check(call(dims, dims.Length, out rank));
            return FromRowMajor(dims, rank);
        }

        internal static NDShape FromRowMajor(long[] rowMajor, int rank)
        {
            int[] d = new int[rank];
            for (int i = 0; i < rank; ++i) d[i] = (int)rowMajor[rank - 1 - i];
            return new NDShape(d);
        }

        public bool Equals(NDShape other) { return other != null && dims.SequenceEqual(other.dims); }
        public override bool Equals(object obj) { return Equals(obj as NDShape); }
        public override int GetHashCode() { return dims.Aggregate(17, (h, d) => h * 31 + d); }
        public static bool operator ==(NDShape a, NDShape b) { return ReferenceEquals(a, b) || (!ReferenceEquals(a, null) && a.Equals(b)); }
        public static bool operator !=(NDShape a, NDShape b) { return !(a == b); }
        public override string ToString() { return "[" + string.Join(" x ", dims.Select(d => d == InferredDimension ? "?" : d == FreeDimension ? "*" : d.ToString())) + "]"; }
    }

    // An axis: a static axis by its index in CNTK's column-major order, or a dynamic one.
    public sealed class Axis
    {
        internal enum Kinds { Static, Batch, Sequence, AllStatic, All }

        internal readonly Kinds kind;
        readonly int index;

        public Axis(int staticAxisIndex) { kind = Kinds.Static; index = staticAxisIndex; }
        Axis(Kinds kind) { this.kind = kind; }

        public static Axis DefaultBatchAxis() { return new Axis(Kinds.Batch); }
        public static Axis DefaultDynamicAxis() { return new Axis(Kinds.Sequence); }
        public static Axis OperandSequenceAxis() { return new Axis(Kinds.Sequence); }
        public static Axis AllStaticAxes() { return new Axis(Kinds.AllStatic); }
        public static Axis AllAxes() { return new Axis(Kinds.All); }

        public bool IsStatic { get { return kind == Kinds.Static; } }
        public bool IsDynamic { get { return kind == Kinds.Batch || kind == Kinds.Sequence; } }
        public int StaticAxisIndex() { return index; }
        public string Name { get { return kind == Kinds.Batch ? "defaultBatchAxis" : kind == Kinds.Sequence ? "defaultDynamicAxis" : kind.ToString(); } }

        // The C ABI's axis for an operand of `rank` static axes (row-major index, or a CTK_AXIS_* code).
        internal int ToNative(int rank)
        {
            switch (kind)
            {
                case Kinds.Batch: return 2147483602;
                case Kinds.Sequence: return 2147483603;
                case Kinds.AllStatic: return 2147483600;
                case Kinds.All: return 2147483601;
            }
            int i = index < 0 ? index + rank : index;
            if (i < 0 || i >= rank) throw new ArgumentException("axis " + index + " is outside an operand of rank " + rank);
            return rank - 1 - i;
        }

        public override string ToString() { return kind == Kinds.Static ? "Axis(" + index + ")" : "Axis('" + Name + "')"; }
    }

    // The SWIG collection types CNTK's C# API exposed; plain lists here.
    public class VariableVector : List<Variable>
    {
        public VariableVector() { }
        public VariableVector(IEnumerable<Variable> items) : base(items) { }
    }

    public class AxisVector : List<Axis>
    {
        public AxisVector() { }
        public AxisVector(IEnumerable<Axis> items) : base(items) { }
    }

    public class IntVector : List<int>
    {
        public IntVector() { }
        public IntVector(IEnumerable<int> items) : base(items) { }
    }

    public class BoolVector : List<bool>
    {
        public BoolVector() { }
        public BoolVector(IEnumerable<bool> items) : base(items) { }
    }

    public class SizeTVector : List<uint>
    {
        public SizeTVector() { }
        public SizeTVector(IEnumerable<uint> items) : base(items) { }
    }
}
