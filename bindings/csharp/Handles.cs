// One SafeHandle per handle type of the C ABI (released exactly once, by the GC or Dispose), the status
// check that turns a failing call into the exception CNTK's C# API threw, and UTF-8 string helpers.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace CNTK.Interop
{
    internal abstract class CtkHandle : SafeHandle
    {
        protected CtkHandle() : base(IntPtr.Zero, true) { }
        protected CtkHandle(IntPtr raw) : base(IntPtr.Zero, true) { SetHandle(raw); }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
    }

    internal sealed class VariableHandle : CtkHandle
    {
        public VariableHandle() { }
        internal VariableHandle(IntPtr raw) : base(raw) { }
        public static readonly VariableHandle Null = new VariableHandle();
        protected override bool ReleaseHandle() { Native.ctk_variable_release(handle); return true; }
    }

    internal sealed class FunctionHandle : CtkHandle
    {
        public FunctionHandle() { }
        internal FunctionHandle(IntPtr raw) : base(raw) { }
        public static readonly FunctionHandle Null = new FunctionHandle();
        protected override bool ReleaseHandle() { Native.ctk_function_release(handle); return true; }
    }

    internal sealed class ValueHandle : CtkHandle
    {
        public ValueHandle() { }
        internal ValueHandle(IntPtr raw) : base(raw) { }
        protected override bool ReleaseHandle() { Native.ctk_value_release(handle); return true; }
    }

    internal sealed class InitializerHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_initializer_release(handle); return true; }
    }

    internal sealed class ScheduleHandle : CtkHandle
    {
        public static readonly ScheduleHandle Null = new ScheduleHandle();
        protected override bool ReleaseHandle() { Native.ctk_schedule_release(handle); return true; }
    }

    internal sealed class LearnerHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_learner_release(handle); return true; }
    }

    internal sealed class TrainerHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_trainer_release(handle); return true; }
    }

    internal sealed class DeserializerHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_deserializer_release(handle); return true; }
    }

    internal sealed class ImageTransformHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_image_transform_release(handle); return true; }
    }

    internal sealed class SourceHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_minibatch_source_release(handle); return true; }
    }

    internal sealed class MinibatchHandle : CtkHandle
    {
        protected override bool ReleaseHandle() { Native.ctk_minibatch_release(handle); return true; }
    }

    internal static class Status
    {
        // ctk.h's codes.
        const int NullArgument = 1, InvalidHandle = 2, ValueError = 3, TypeError = 4, ShapeError = 5, IndexError = 6,
                  OutOfMemory = 9, BufferTooSmall = 11;

        static bool checkedAbi;

        // Throws what CNTK's C# API threw for the same failure: ArgumentException for bad arguments
        // (CNTK's InvalidArgument), ApplicationException for the rest (CNTK's RuntimeError/LogicError).
        public static void Check(int status)
        {
            if (status == 0) return;
            string message = Utf8.FromNative(Native.ctk_last_error());
            switch (status)
            {
                case NullArgument:
                case InvalidHandle:
                case ValueError:
                case TypeError:
                case ShapeError:
                case IndexError:
                case BufferTooSmall:
                    throw new ArgumentException(message);
                case OutOfMemory:
                    throw new OutOfMemoryException(message);
                default:
                    throw new ApplicationException(message);
            }
        }

        // The native library must speak the ABI this assembly was built for.
        public static void EnsureAbi()
        {
            if (checkedAbi) return;
            int abi = Native.ctk_abi_version();
            if (abi != Native.AbiVersion)
                throw new ApplicationException(string.Format(
                    "libctk_c speaks C ABI version {0}; this assembly was built for version {1}", abi, Native.AbiVersion));
            checkedAbi = true;
        }
    }

    internal static class Utf8
    {
        // NUL-terminated UTF-8 bytes of `text` (null for a null string: the C side takes NULL).
        public static byte[] Bytes(string text)
        {
            if (text == null) return null;
            int n = Encoding.UTF8.GetByteCount(text);
            byte[] bytes = new byte[n + 1];
            Encoding.UTF8.GetBytes(text, 0, text.Length, bytes, 0);
            return bytes;
        }

        public static string FromNative(IntPtr p)
        {
            if (p == IntPtr.Zero) return null;
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) ++n;
            byte[] bytes = new byte[n];
            Marshal.Copy(p, bytes, 0, n);
            return Encoding.UTF8.GetString(bytes);
        }

        // A string from a (buf, capacity, out length) call: the length first, then the text.
        public delegate int TextCall(byte[] buf, long capacity, out long length);

        public static string Text(TextCall call)
        {
            long length;
            Status.Check(call(null, 0, out length));
            byte[] buf = new byte[length + 1];
            Status.Check(call(buf, buf.Length, out length));
            return Encoding.UTF8.GetString(buf, 0, (int)length);
        }
    }

    // Arrays of raw handles for the calls that take several; the owners are kept alive by the caller.
    internal static class Handles
    {
        public static IntPtr[] Of(IList<Variable> vars)
        {
            IntPtr[] raw = new IntPtr[vars.Count];
            for (int i = 0; i < raw.Length; ++i)
            {
                if (vars[i] == null) throw new ArgumentNullException("variable " + i);
                raw[i] = vars[i].Handle.DangerousGetHandle();
            }
            return raw;
        }
    }
}
