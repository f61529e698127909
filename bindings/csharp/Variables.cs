// CNTK's Variable, Parameter and Constant over the C ABI's variable handles, NDArrayView (a parameter's
// value as a host copy) and CNTKDictionary (what CNTKLib's initializer functions return).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using CNTK.Interop;

namespace CNTK
{
    public class Variable : IEquatable<Variable>
    {
        internal readonly VariableHandle Handle;
        string uid;

        internal Variable(VariableHandle handle) { Handle = handle; }

        // CNTK's `new Variable(function)`: the function's single output.
        public Variable(Function function) : this(function.Output.Handle) { }

        // CNTK's C# default dynamic axes for inputs: a sequence axis and the batch axis.
        public static Variable InputVariable(NDShape shape, DataType dataType, string name = "", IList<Axis> dynamicAxes = null,
                                             bool isSparse = false, bool needsGradient = false)
        {
            Status.EnsureAbi();
            long[] dims = shape.RowMajor();
            VariableHandle h;
            Status.Check(Native.ctk_input_variable(dims, dims.Length, DataTypes.ToNative(dataType), AxesCode(dynamicAxes),
                                                   isSparse ? 1 : 0, needsGradient ? 1 : 0, Utf8.Bytes(name), out h));
            return new Variable(h);
        }

        public static Variable PlaceholderVariable(NDShape shape, IList<Axis> dynamicAxes)
        {
            long[] dims = shape.RowMajor();
            VariableHandle h;
            Status.Check(Native.ctk_placeholder(dims, dims.Length, AxesCode(dynamicAxes), null, out h));
            return new Variable(h);
        }

        public static Variable PlaceholderVariable(string name = "")
        {
            VariableHandle h;
            Status.Check(Native.ctk_placeholder(null, 0, 1, Utf8.Bytes(name), out h));
            return new Variable(h);
        }

        internal static int AxesCode(IList<Axis> dynamicAxes)
        {
            if (dynamicAxes == null) return 2;
            bool batch = dynamicAxes.Any(a => a.kind == Axis.Kinds.Batch);
            bool sequence = dynamicAxes.Any(a => a.kind == Axis.Kinds.Sequence);
            if (sequence && !batch) throw new ArgumentException("a sequence axis needs the batch axis too");
            if (dynamicAxes.Count != (batch ? 1 : 0) + (sequence ? 1 : 0))
                throw new ArgumentException("dynamic axes other than the default batch and sequence axes are not supported");
            return sequence ? 2 : batch ? 1 : 0;
        }

        public NDShape Shape
        {
            get { return NDShape.Read((long[] d, int c, out int r) => Native.ctk_variable_shape(Handle, d, c, out r)); }
        }

        public string Name { get { IntPtr p; Status.Check(Native.ctk_variable_name(Handle, out p)); return Utf8.FromNative(p); } }

        public string Uid
        {
            get
            {
                if (uid == null)
                {
                    IntPtr p;
                    Status.Check(Native.ctk_variable_uid(Handle, out p));
                    uid = Utf8.FromNative(p);
                }
                return uid;
            }
        }

        public DataType DataType { get { int t; Status.Check(Native.ctk_variable_dtype(Handle, out t)); return DataTypes.FromNative(t); } }
        public VariableKind Kind { get { int k; Status.Check(Native.ctk_variable_kind(Handle, out k)); return (VariableKind)k; } }
        public bool IsInput { get { return Kind == VariableKind.Input; } }
        public bool IsOutput { get { return Kind == VariableKind.Output; } }
        public bool IsParameter { get { return Kind == VariableKind.Parameter; } }
        public bool IsConstant { get { return Kind == VariableKind.Constant; } }
        public bool IsPlaceholder { get { return Kind == VariableKind.Placeholder; } }
        public bool IsSparse { get { int s; Status.Check(Native.ctk_variable_is_sparse(Handle, out s)); return s != 0; } }
        public bool NeedsGradient { get { int g; Status.Check(Native.ctk_variable_needs_gradient(Handle, out g)); return g != 0; } }

        internal int AxesKind { get { int a; Status.Check(Native.ctk_variable_dynamic_axes(Handle, out a)); return a; } }

        public IList<Axis> DynamicAxes
        {
            get
            {
                switch (AxesKind)
                {
                    case 0: return new List<Axis>();
                    case 1: return new List<Axis> { Axis.DefaultBatchAxis() };
                    default: return new List<Axis> { Axis.DefaultDynamicAxis(), Axis.DefaultBatchAxis() };
                }
            }
        }

        // The Function computing an output variable (null for the other kinds).
        public Function Owner
        {
            get
            {
                FunctionHandle f;
                Status.Check(Native.ctk_variable_owner(Handle, out f));
                return f.IsInvalid ? null : new Function(f);
            }
        }

        public Function ToFunction()
        {
            FunctionHandle f;
            Status.Check(Native.ctk_variable_as_function(Handle, out f));
            return new Function(f);
        }

        public static implicit operator Variable(Function f) { return f == null ? null : f.Output; }
        public static implicit operator Function(Variable v) { return v == null ? null : v.ToFunction(); }

        public static Function operator +(Variable a, Variable b) { return CNTKLib.Plus(a, b); }
        public static Function operator -(Variable a, Variable b) { return CNTKLib.Minus(a, b); }
        public static Function operator *(Variable a, Variable b) { return CNTKLib.Times(a, b); }

        public bool Equals(Variable other) { return !ReferenceEquals(other, null) && other.Uid == Uid; }
        public override bool Equals(object obj) { return Equals(obj as Variable); }
        public override int GetHashCode() { return Uid.GetHashCode(); }
        public static bool operator ==(Variable a, Variable b) { return ReferenceEquals(a, b) || (!ReferenceEquals(a, null) && a.Equals(b)); }
        public static bool operator !=(Variable a, Variable b) { return !(a == b); }

        public override string ToString() { return Utf8.Text((byte[] b, long c, out long n) => Native.ctk_variable_to_string(Handle, b, c, out n)); }

        internal int StaticRank { get { return Shape.Rank; } }
    }

    public class Parameter : Variable
    {
        internal Parameter(VariableHandle handle) : base(handle) { }

        public Parameter(NDShape shape, DataType dataType, double initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, dataType, CNTKLib.ConstantInitializer(initValue), name)) { }

        public Parameter(NDShape shape, DataType dataType, CNTKDictionary initializer, DeviceDescriptor device, string name = "")
            : base(Make(shape, dataType, initializer, name)) { }

        public Parameter(NDShape shape, float initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, DataType.Float, CNTKLib.ConstantInitializer(initValue), name)) { }

        public Parameter(NDShape shape, double initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, DataType.Double, CNTKLib.ConstantInitializer(initValue), name)) { }

        public Parameter(NDArrayView value, string name = "") : base(FromData(value, name, true)) { }

        // A variable known to be a parameter (Function.Parameters() gives these).
        public Parameter(Variable v) : base(v.Handle)
        {
            if (!v.IsParameter) throw new ArgumentException(v + " is not a parameter");
        }

        static VariableHandle Make(NDShape shape, DataType dataType, CNTKDictionary initializer, string name)
        {
            Status.EnsureAbi();
            if (initializer == null || initializer.Initializer == null)
                throw new ArgumentException("the initializer is not one of CNTKLib's initializers");
            long[] dims = shape.RowMajor();
            VariableHandle h;
            Status.Check(Native.ctk_parameter(dims, dims.Length, DataTypes.ToNative(dataType), initializer.Initializer,
                                              Utf8.Bytes(name), out h));
            return h;
        }

        internal static VariableHandle FromData(NDArrayView value, string name, bool parameter)
        {
            Status.EnsureAbi();
            long[] dims = value.Shape.RowMajor();
            GCHandle pin = GCHandle.Alloc(value.Data, GCHandleType.Pinned);
            try
            {
                VariableHandle h;
                int dtype = DataTypes.ToNative(value.DataType);
                if (parameter)
                    Status.Check(Native.ctk_parameter_from_data(dims, dims.Length, dtype, pin.AddrOfPinnedObject(), Utf8.Bytes(name), out h));
                else
                    Status.Check(Native.ctk_constant_from_data(dims, dims.Length, dtype, pin.AddrOfPinnedObject(), Utf8.Bytes(name), out h));
                return h;
            }
            finally { pin.Free(); }
        }

        public NDArrayView GetValue() { return NDArrayView.Of(this); }
        public void SetValue(NDArrayView value) { value.CopyInto(this); }
        public int CurrentValueTimeStamp { get { return 0; } }
    }

    public class Constant : Variable
    {
        internal Constant(VariableHandle handle) : base(handle) { }

        public Constant(NDShape shape, DataType dataType, double initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, dataType, initValue, name)) { }

        public Constant(NDArrayView value, string name = "") : base(Parameter.FromData(value, name, false)) { }

        public Constant(NDShape shape, float initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, DataType.Float, initValue, name)) { }

        public Constant(NDShape shape, double initValue, DeviceDescriptor device, string name = "")
            : base(Make(shape, DataType.Double, initValue, name)) { }

        public static Constant Scalar<T>(T value, DeviceDescriptor device)
        {
            return new Constant(Make(new NDShape(), DataTypes.FromNative(DataTypes.Of<T>()), Convert.ToDouble(value), ""));
        }

        public static Constant Scalar(DataType dataType, double value, DeviceDescriptor device = null)
        {
            return new Constant(Make(new NDShape(), dataType, value, ""));
        }

        static VariableHandle Make(NDShape shape, DataType dataType, double value, string name)
        {
            Status.EnsureAbi();
            long[] dims = shape.RowMajor();
            VariableHandle h;
            Status.Check(Native.ctk_constant(dims, dims.Length, DataTypes.ToNative(dataType), value, Utf8.Bytes(name), out h));
            return h;
        }

        public NDArrayView GetValue() { return NDArrayView.Of(this); }
    }

    // A dense array on the host: a parameter's or constant's value, or data to make one from.
    public sealed class NDArrayView
    {
        internal readonly Array Data;  // float[] or double[], row-major data
        public NDShape Shape { get; private set; }
        public DataType DataType { get; private set; }

        public NDArrayView(NDShape viewShape, float[] dataBuffer, DeviceDescriptor device, bool readOnly = false)
            : this(viewShape, (float[])dataBuffer.Clone(), DataType.Float) { }

        public NDArrayView(NDShape viewShape, double[] dataBuffer, DeviceDescriptor device, bool readOnly = false)
            : this(viewShape, (double[])dataBuffer.Clone(), DataType.Double) { }

        // An array of zeros of `viewShape`.
        public NDArrayView(DataType dataType, NDShape viewShape, DeviceDescriptor device)
            : this(viewShape, dataType == DataType.Double ? (Array)new double[viewShape.TotalSize] : new float[viewShape.TotalSize],
                   dataType == DataType.Double ? DataType.Double : DataType.Float) { }

        public NDArrayView(NDShape viewShape, float[] dataBuffer, uint numBufferElements, DeviceDescriptor device, bool readOnly = false)
            : this(viewShape, dataBuffer.Take((int)numBufferElements).ToArray(), DataType.Float) { }

        // Copies `source`'s values in (same size; converted to this array's type).
        public void CopyFrom(NDArrayView source)
        {
            if (source.Data.Length != Data.Length)
                throw new ArgumentException(string.Format("CopyFrom: {0} values into an array of {1}", source.Data.Length, Data.Length));
            for (int i = 0; i < Data.Length; ++i) Data.SetValue(Convert.ChangeType(source.Data.GetValue(i), Data.GetType().GetElementType()), i);
        }

        NDArrayView(NDShape shape, Array data, DataType dataType)
        {
            if (data.Length != shape.TotalSize)
                throw new ArgumentException("NDArrayView: " + data.Length + " values for shape " + shape);
            Shape = shape;
            Data = data;
            DataType = dataType;
        }

        internal static NDArrayView Of(Variable v)
        {
            NDShape shape = v.Shape;
            bool isDouble = v.DataType == DataType.Double;
            Array data = isDouble ? (Array)new double[shape.TotalSize] : new float[shape.TotalSize];
            GCHandle pin = GCHandle.Alloc(data, GCHandleType.Pinned);
            try { Status.Check(Native.ctk_variable_get_value(v.Handle, isDouble ? 1 : 0, pin.AddrOfPinnedObject(), data.Length)); }
            finally { pin.Free(); }
            return new NDArrayView(shape, data, isDouble ? DataType.Double : DataType.Float);
        }

        internal void CopyInto(Variable v)
        {
            GCHandle pin = GCHandle.Alloc(Data, GCHandleType.Pinned);
            try
            {
                Status.Check(Native.ctk_variable_set_value(v.Handle, DataTypes.ToNative(DataType), pin.AddrOfPinnedObject(), Data.Length));
            }
            finally { pin.Free(); }
        }

        // The values as T, in CNTK's column-major order of Shape (the same memory order as row-major
        // data of the reversed shape).
        public IList<T> GetData<T>()
        {
            return Data.Cast<object>().Select(x => (T)Convert.ChangeType(x, typeof(T))).ToList();
        }
    }

    // CNTK's configuration dictionary, as CNTKLib's functions return it: an initializer, an image
    // transform, or a deserializer (made when a source is created, so that entries added with Add, such as
    // CNTK's "grayscale", still apply).
    public class CNTKDictionary
    {
        internal readonly InitializerHandle Initializer;
        internal readonly ImageTransformHandle Transform;
        internal readonly Func<CNTKDictionary, DeserializerHandle> Deserializer;
        readonly Dictionary<string, DictionaryValue> entries = new Dictionary<string, DictionaryValue>();

        public CNTKDictionary() { }
        internal CNTKDictionary(InitializerHandle initializer) { Initializer = initializer; }
        internal CNTKDictionary(ImageTransformHandle transform) { Transform = transform; }
        internal CNTKDictionary(Func<CNTKDictionary, DeserializerHandle> deserializer) { Deserializer = deserializer; }

        public void Add(string key, DictionaryValue value) { entries[key] = value; }
        public bool Contains(string key) { return entries.ContainsKey(key); }
        public DictionaryValue this[string key] { get { return entries[key]; } set { entries[key] = value; } }

        internal bool Flag(string key)
        {
            DictionaryValue v;
            return entries.TryGetValue(key, out v) && v.Value is bool && (bool)v.Value;
        }
    }

    public class DictionaryValue
    {
        internal readonly object Value;
        public DictionaryValue(bool value) { Value = value; }
        public DictionaryValue(int value) { Value = value; }
        public DictionaryValue(uint value) { Value = value; }
        public DictionaryValue(ulong value) { Value = value; }
        public DictionaryValue(double value) { Value = value; }
        public DictionaryValue(float value) { Value = value; }
        public DictionaryValue(string value) { Value = value; }
        public DictionaryValue(CNTKDictionary value) { Value = value; }
        public override string ToString() { return Convert.ToString(Value); }
    }

    public class ParameterVector : List<Parameter>
    {
        public ParameterVector() { }
        public ParameterVector(IEnumerable<Parameter> items) : base(items) { }
    }
}
