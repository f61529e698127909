// CNTK's Function: loading and saving models, the graph's variables, cloning, and evaluation.
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK.Interop;

namespace CNTK
{
    public class Function
    {
        internal readonly FunctionHandle Handle;

        internal Function(FunctionHandle handle) { Handle = handle; }

        // Loads CNTK v2 and v1 files (told apart by their content, as CNTK's default format did) and ONNX.
        public static Function Load(string filepath, DeviceDescriptor computeDevice, ModelFormat format = ModelFormat.CNTKv2)
        {
            Status.EnsureAbi();
            if (filepath == null) throw new ArgumentNullException("filepath");
            int code = format == ModelFormat.ONNX ? 1 : -1;
            FunctionHandle f;
            Status.Check(Native.ctk_function_load(Utf8.Bytes(filepath), code, out f));
            return new Function(f);
        }

        public static Function Load(byte[] modelBuffer, DeviceDescriptor computeDevice)
        {
            Status.EnsureAbi();
            if (modelBuffer == null) throw new ArgumentNullException("modelBuffer");
            FunctionHandle f;
            Status.Check(Native.ctk_function_load_buffer(modelBuffer, modelBuffer.Length, out f));
            return new Function(f);
        }

        public void Save(string filepath, ModelFormat format = ModelFormat.CNTKv2)
        {
            int code = format == ModelFormat.ONNX ? 1 : format == ModelFormat.CNTKv1 ? 2 : 0;
            Status.Check(Native.ctk_function_save(Handle, Utf8.Bytes(filepath), code));
        }

        public byte[] Save()
        {
            long size;
            Status.Check(Native.ctk_function_save_buffer(Handle, null, 0, out size));
            byte[] bytes = new byte[size];
            Status.Check(Native.ctk_function_save_buffer(Handle, bytes, size, out size));
            return bytes;
        }

        public string Name { get { IntPtr p; Status.Check(Native.ctk_function_name(Handle, out p)); return Utf8.FromNative(p); } }
        public void SetName(string name) { Status.Check(Native.ctk_function_set_name(Handle, Utf8.Bytes(name))); }
        public string Uid { get { IntPtr p; Status.Check(Native.ctk_function_uid(Handle, out p)); return Utf8.FromNative(p); } }
        public string OpName { get { IntPtr p; Status.Check(Native.ctk_function_op_name(Handle, out p)); return Utf8.FromNative(p); } }

        public Variable Output
        {
            get
            {
                VariableHandle v;
                Status.Check(Native.ctk_function_output(Handle, out v));
                return new Variable(v);
            }
        }

        public IList<Variable> Outputs { get { return Variables(1).Select(h => new Variable(h)).ToList(); } }
        public IList<Variable> Arguments { get { return Variables(0).Select(h => new Variable(h)).ToList(); } }
        public IList<Variable> Inputs { get { return Variables(2).Select(h => new Variable(h)).ToList(); } }
        public IList<Parameter> Parameters() { return Variables(3).Select(h => new Parameter(h)).ToList(); }
        public IList<Constant> Constants() { return Variables(4).Select(h => new Constant(h)).ToList(); }
        public IList<Variable> Placeholders() { return Variables(5).Select(h => new Variable(h)).ToList(); }

        List<VariableHandle> Variables(int which)
        {
            long count;
            Status.Check(Native.ctk_function_variables(Handle, which, null, 0, out count));
            IntPtr[] raw = new IntPtr[count];
            Status.Check(Native.ctk_function_variables(Handle, which, raw, count, out count));
            return raw.Select(Wrap).ToList();
        }

        internal static VariableHandle Wrap(IntPtr raw) { return new VariableHandle(raw); }

        public Function FindByName(string name, bool nestedSearchInsideBlockFunction = false)
        {
            FunctionHandle f;
            Status.Check(Native.ctk_function_find_by_name(Handle, Utf8.Bytes(name), nestedSearchInsideBlockFunction ? 1 : 0, out f));
            return f.IsInvalid ? null : new Function(f);
        }

        public IList<Function> FindAllWithName(string name, bool nestedSearchInsideBlockFunction = false)
        {
            long count;
            Status.Check(Native.ctk_function_find_all_with_name(Handle, Utf8.Bytes(name), nestedSearchInsideBlockFunction ? 1 : 0, null, 0, out count));
            IntPtr[] raw = new IntPtr[count];
            Status.Check(Native.ctk_function_find_all_with_name(Handle, Utf8.Bytes(name), nestedSearchInsideBlockFunction ? 1 : 0, raw, count, out count));
            return raw.Select(r => new Function(new FunctionHandle(r))).ToList();
        }

        public Function Clone(ParameterCloningMethod parameterCloneMethod = ParameterCloningMethod.Clone,
                              IDictionary<Variable, Variable> replacements = null)
        {
            int method = parameterCloneMethod == ParameterCloningMethod.Clone ? 0 : parameterCloneMethod == ParameterCloningMethod.Share ? 1 : 2;
            List<Variable> from = replacements == null ? new List<Variable>() : replacements.Keys.ToList();
            List<Variable> to = from.Select(k => replacements[k]).ToList();
            FunctionHandle f;
            Status.Check(Native.ctk_function_clone(Handle, method, Interop.Handles.Of(from), Interop.Handles.Of(to), from.Count, out f));
            GC.KeepAlive(from);
            GC.KeepAlive(to);
            return new Function(f);
        }

        public Function ReplacePlaceholders(IDictionary<Variable, Variable> placeholderReplacements)
        {
            List<Variable> from = placeholderReplacements.Keys.ToList();
            List<Variable> to = from.Select(k => placeholderReplacements[k]).ToList();
            Status.Check(Native.ctk_function_replace_placeholders(Handle, Interop.Handles.Of(from), Interop.Handles.Of(to), from.Count));
            GC.KeepAlive(from);
            GC.KeepAlive(to);
            return this;
        }

        public static Function Combine(IList<Variable> operands, string name = "")
        {
            FunctionHandle f;
            Status.Check(Native.ctk_combine(Interop.Handles.Of(operands), operands.Count, Utf8.Bytes(name), out f));
            GC.KeepAlive(operands);
            return new Function(f);
        }

        public static Function AsComposite(Function rootFunction, string name = "")
        {
            FunctionHandle f;
            Status.Check(Native.ctk_function_as_composite(rootFunction.Handle, Utf8.Bytes(name), out f));
            return new Function(f);
        }

        // CNTK's Evaluate: a null entry of `outputs` receives a new Value, a Value the caller made receives
        // the result's data (same shape).
        public void Evaluate(IDictionary<Variable, Value> arguments, IDictionary<Variable, Value> outputs,
                             DeviceDescriptor computeDevice)
        {
            Evaluate(arguments, outputs, false, computeDevice);
        }

        public void Evaluate(IDictionary<Variable, Value> arguments, IDictionary<Variable, Value> outputs,
                             bool createPersistentOutputValues, DeviceDescriptor computeDevice)
        {
            if (arguments == null) throw new ArgumentNullException("arguments");
            if (outputs == null || outputs.Count == 0) throw new ArgumentException("Evaluate: no outputs asked for");
            // Arrays filled straight from the dictionaries: this runs once per request in a server.
            IntPtr[] inVars = new IntPtr[arguments.Count], inValues = new IntPtr[arguments.Count];
            int i = 0;
            foreach (KeyValuePair<Variable, Value> p in arguments)
            {
                if (p.Key == null || p.Value == null) throw new ArgumentNullException("arguments", "a null variable or value");
                if (p.Value.Handle.IsClosed) throw new ObjectDisposedException("Value", "This Value object was disposed and can no longer be accessed");
                inVars[i] = p.Key.Handle.DangerousGetHandle();
                inValues[i] = p.Value.Handle.DangerousGetHandle();
                ++i;
            }
            Variable[] outVars = new Variable[outputs.Count];
            outputs.Keys.CopyTo(outVars, 0);
            IntPtr[] outRaw = new IntPtr[outVars.Length];
            for (int k = 0; k < outVars.Length; ++k) outRaw[k] = outVars[k].Handle.DangerousGetHandle();
            IntPtr[] results = new IntPtr[outVars.Length];
            Status.Check(Native.ctk_function_evaluate(Handle, inVars, inValues, inVars.Length, outRaw, outRaw.Length,
                                                      DeviceDescriptor.Native_(computeDevice), results));
            GC.KeepAlive(arguments);  // holds the variables and values whose raw handles the call used
            GC.KeepAlive(outVars);
            for (int k = 0; k < outVars.Length; ++k)
            {
                Value given = outputs[outVars[k]];
                if (given == null)
                {
                    outputs[outVars[k]] = new Value(Value.Wrap(results[k]));
                    continue;
                }
                // A value the caller allocated receives the result (CNTK's preallocated outputs).
                using (ValueHandle result = Value.Wrap(results[k]))
                    Status.Check(Native.ctk_value_assign(given.Handle, result.DangerousGetHandle()));
            }
        }

        public override string ToString() { return Utf8.Text((byte[] b, long c, out long n) => Native.ctk_function_to_string(Handle, b, c, out n)); }
    }
}
