// CNTK's Value: data for an input or from an output (dense batches and sequences, one-hot and CSC sparse
// samples) and reading it back one list per sequence. A float[]/double[] given read-only is borrowed
// (pinned, no copy); anything else is copied once into native memory.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using CNTK.Interop;

namespace CNTK
{
    public class Value : IDisposable
    {
        internal readonly ValueHandle Handle;
        Pin pinned;  // a borrowed array, held until the value is released

        // The pin of a borrowed array, freed by Dispose or, for a value never disposed, its finalizer
        // (only borrowing values pay for a finalizable object).
        sealed class Pin
        {
            GCHandle handle;
            public Pin(GCHandle handle) { this.handle = handle; }
            public void Free()
            {
                if (handle.IsAllocated) handle.Free();
                GC.SuppressFinalize(this);
            }
            ~Pin()
            {
                // Unreachable: nothing reads the borrowed array again (releasing the native value does not).
                if (handle.IsAllocated) handle.Free();
            }
        }

        internal Value(ValueHandle handle) { Handle = handle; }

        internal static ValueHandle Wrap(IntPtr raw) { return new ValueHandle(raw); }

        internal static IntPtr[] HandlesOf(IList<Value> values)
        {
            IntPtr[] raw = new IntPtr[values.Count];
            for (int i = 0; i < raw.Length; ++i)
            {
                if (values[i] == null) throw new ArgumentNullException("value " + i);
                if (values[i].Handle.IsClosed) throw new ObjectDisposedException("Value", "This Value object was disposed and can no longer be accessed");
                raw[i] = values[i].Handle.DangerousGetHandle();
            }
            return raw;
        }

        // A value holding `data` as it is (its shape is the whole value's shape).
        public Value(NDArrayView data)
        {
            Status.EnsureAbi();
            long[] dims = data.Shape.RowMajor();
            GCHandle pin = GCHandle.Alloc(data.Data, GCHandleType.Pinned);
            try
            {
                Status.Check(Native.ctk_value_create(DataTypes.ToNative(data.DataType), dims, dims.Length, pin.AddrOfPinnedObject(), 0,
                                                     DeviceDescriptor.Native_(null), out Handle));
            }
            finally { pin.Free(); }
        }

        // ---- dense ----

        public static Value CreateBatch<T>(NDShape sampleShape, IEnumerable<T> batch, DeviceDescriptor device, bool readOnly = false)
        {
            T[] data = batch as T[];
            bool borrow = data != null && readOnly && (device == null || device.Type == DeviceKind.CPU);
            if (data == null) data = batch.ToArray();
            return Dense(sampleShape, data, 0, data.Length, device, borrow);
        }

        public static Value CreateBatch<T>(NDShape sampleShape, T[] batch, int batchStartIndex, int batchSize, DeviceDescriptor device,
                                           bool readOnly = false)
        {
            int size = sampleShape.TotalSize;
            return Dense(sampleShape, batch, batchStartIndex * size, batchSize * size, device, false);
        }

        static Value Dense<T>(NDShape sampleShape, T[] data, int start, int count, DeviceDescriptor device, bool borrow)
        {
            Status.EnsureAbi();
            int sampleSize = sampleShape.TotalSize;
            if (sampleSize == 0 || count % sampleSize != 0 || count == 0)
                throw new ArgumentException(string.Format("{0} values are not a whole number of samples of shape {1}", count, sampleShape));
            if (start < 0 || start + count > data.Length)
                throw new ArgumentException("the batch reaches outside the array");
            long[] dims = sampleShape.RowMajorWithLeading(count / sampleSize);
            ValueHandle h;
            if (!borrow && start == 0 && count == data.Length)
            {
                // The marshaller pins a blittable array for the call: the cheapest copy-in path.
                float[] floats = data as float[];
                int status = floats != null
                    ? Native.ctk_value_create(0, dims, dims.Length, floats, 0, DeviceDescriptor.Native_(device), out h)
                    : Native.ctk_value_create(DataTypes.Of<T>(), dims, dims.Length, (double[])(object)data, 0,
                                              DeviceDescriptor.Native_(device), out h);
                Status.Check(status);
                return new Value(h);
            }
            GCHandle pin = GCHandle.Alloc(data, GCHandleType.Pinned);
            Value v = null;
            try
            {
                IntPtr at = Marshal.UnsafeAddrOfPinnedArrayElement(data, start);
                Status.Check(Native.ctk_value_create(DataTypes.Of<T>(), dims, dims.Length, at, borrow ? 1 : 0,
                                                     DeviceDescriptor.Native_(device), out h));
                v = new Value(h);
                if (borrow) v.pinned = new Pin(pin);
                return v;
            }
            finally
            {
                if (v == null || !borrow) pin.Free();
            }
        }

        public static Value CreateSequence<T>(NDShape sampleShape, IEnumerable<T> sequence, DeviceDescriptor device, bool readOnly = false)
        {
            return Create(sampleShape, new[] { sequence }, new[] { true }, device, readOnly);
        }

        public static Value CreateSequence<T>(NDShape sampleShape, IEnumerable<T> sequence, bool sequenceStartFlag, DeviceDescriptor device,
                                              bool readOnly = false)
        {
            return Create(sampleShape, new[] { sequence }, new[] { sequenceStartFlag }, device, readOnly);
        }

        public static Value CreateBatchOfSequences<T>(NDShape sampleShape, IEnumerable<IEnumerable<T>> batchOfSequences, DeviceDescriptor device,
                                                      bool readOnly = false)
        {
            return Create(sampleShape, batchOfSequences, null, device, readOnly);
        }

        public static Value CreateBatchOfSequences<T>(NDShape sampleShape, IEnumerable<IEnumerable<T>> batchOfSequences,
                                                      IEnumerable<bool> sequenceStartFlags, DeviceDescriptor device, bool readOnly = false)
        {
            return Create(sampleShape, batchOfSequences, sequenceStartFlags, device, readOnly);
        }

        public static Value Create<T>(NDShape sampleShape, IEnumerable<IEnumerable<T>> sequences, IEnumerable<bool> sequenceStartFlags,
                                      DeviceDescriptor device, bool readOnly = false)
        {
            Status.EnsureAbi();
            int sampleSize = sampleShape.TotalSize;
            List<T[]> seqs = sequences.Select(s => s.ToArray()).ToList();
            if (seqs.Count == 0) throw new ArgumentException("no sequences given");
            long[] lengths = new long[seqs.Count];
            for (int i = 0; i < seqs.Count; ++i)
            {
                if (seqs[i].Length == 0 || seqs[i].Length % sampleSize != 0)
                    throw new ArgumentException(string.Format("sequence {0} has {1} values, not a whole number of samples of shape {2}",
                                                              i, seqs[i].Length, sampleShape));
                lengths[i] = seqs[i].Length / sampleSize;
            }
            T[] all = seqs.SelectMany(s => s).ToArray();
            int[] continues = StartFlags(sequenceStartFlags, seqs.Count);
            long[] sample = sampleShape.RowMajor();
            GCHandle pin = GCHandle.Alloc(all, GCHandleType.Pinned);
            try
            {
                ValueHandle h;
                Status.Check(Native.ctk_value_create_sequences(DataTypes.Of<T>(), sample, sample.Length, pin.AddrOfPinnedObject(), lengths,
                                                               lengths.Length, continues, DeviceDescriptor.Native_(device), out h));
                return new Value(h);
            }
            finally { pin.Free(); }
        }

        static int[] StartFlags(IEnumerable<bool> flags, int count)
        {
            if (flags == null) return null;
            bool[] f = flags.ToArray();
            if (f.Length != count) throw new ArgumentException(string.Format("{0} start flags for {1} sequences", f.Length, count));
            return f.Select(start => start ? 0 : 1).ToArray();
        }

        // ---- one-hot ----

        public static Value CreateBatch<T>(int dimension, IEnumerable<int> batch, DeviceDescriptor device, bool readOnly = false)
        {
            long[] indices = batch.Select(i => (long)i).ToArray();
            return OneHot<T>(dimension, indices, null, null, device);
        }

        public static Value CreateSequence<T>(int dimension, IEnumerable<int> sequence, DeviceDescriptor device, bool readOnly = false)
        {
            return Create<T>(dimension, new[] { sequence }, new[] { true }, device, readOnly);
        }

        public static Value CreateSequence<T>(int dimension, IEnumerable<int> sequence, bool sequenceStartFlag, DeviceDescriptor device,
                                              bool readOnly = false)
        {
            return Create<T>(dimension, new[] { sequence }, new[] { sequenceStartFlag }, device, readOnly);
        }

        public static Value CreateBatchOfSequences<T>(int dimension, IEnumerable<IEnumerable<int>> batchOfSequences, DeviceDescriptor device,
                                                      bool readOnly = false)
        {
            return Create<T>(dimension, batchOfSequences, null, device, readOnly);
        }

        public static Value CreateBatchOfSequences<T>(int dimension, IEnumerable<IEnumerable<int>> batchOfSequences,
                                                      IEnumerable<bool> sequenceStartFlags, DeviceDescriptor device, bool readOnly = false)
        {
            return Create<T>(dimension, batchOfSequences, sequenceStartFlags, device, readOnly);
        }

        public static Value Create<T>(int dimension, IEnumerable<IEnumerable<int>> sequences, IEnumerable<bool> sequenceStartFlags,
                                      DeviceDescriptor device, bool readOnly = false)
        {
            List<int[]> seqs = sequences.Select(s => s.ToArray()).ToList();
            long[] lengths = seqs.Select(s => (long)s.Length).ToArray();
            long[] indices = seqs.SelectMany(s => s).Select(i => (long)i).ToArray();
            return OneHot<T>(dimension, indices, lengths, StartFlags(sequenceStartFlags, seqs.Count), device);
        }

        static Value OneHot<T>(int dimension, long[] indices, long[] lengths, int[] continues, DeviceDescriptor device)
        {
            Status.EnsureAbi();
            ValueHandle h;
            Status.Check(Native.ctk_value_create_one_hot(dimension, indices, indices.Length, lengths, lengths == null ? 0 : lengths.Length,
                                                         continues, DataTypes.Of<T>(), DeviceDescriptor.Native_(device), out h));
            return new Value(h);
        }

        // ---- sparse (CNTK's CSC: one column per sample) ----

        public static Value CreateSequence<T>(NDShape sampleShape, int sequenceLength, int[] colStarts, int[] rowIndices, T[] nonZeroValues,
                                              DeviceDescriptor device, bool readOnly = false)
        {
            return CreateSequence(sampleShape.TotalSize, sequenceLength, colStarts, rowIndices, nonZeroValues, true, device, readOnly);
        }

        public static Value CreateSequence<T>(int dimension, int sequenceLength, int[] colStarts, int[] rowIndices, T[] nonZeroValues,
                                              DeviceDescriptor device, bool readOnly = false)
        {
            return CreateSequence(dimension, sequenceLength, colStarts, rowIndices, nonZeroValues, true, device, readOnly);
        }

        public static Value CreateSequence<T>(int dimension, int sequenceLength, int[] colStarts, int[] rowIndices, T[] nonZeroValues,
                                              bool sequenceStartFlag, DeviceDescriptor device, bool readOnly = false)
        {
            Status.EnsureAbi();
            if (colStarts == null || colStarts.Length != sequenceLength + 1)
                throw new ArgumentException(string.Format("colStarts needs {0} entries (sequenceLength + 1)", sequenceLength + 1));
            int nnz = colStarts[sequenceLength];
            if (rowIndices == null || nonZeroValues == null || rowIndices.Length < nnz || nonZeroValues.Length < nnz)
                throw new ArgumentException(string.Format("rowIndices and nonZeroValues need {0} entries", nnz));
            long[] starts = colStarts.Select(c => (long)c).ToArray();
            long[] rows = rowIndices.Select(r => (long)r).ToArray();
            long[] lengths = { sequenceLength };
            GCHandle pin = GCHandle.Alloc(nonZeroValues, GCHandleType.Pinned);
            try
            {
                ValueHandle h;
                Status.Check(Native.ctk_value_create_sparse_csc(DataTypes.Of<T>(), dimension, sequenceLength, starts, rows, pin.AddrOfPinnedObject(),
                                                                lengths, 1, new[] { sequenceStartFlag ? 0 : 1 },
                                                                DeviceDescriptor.Native_(device), out h));
                return new Value(h);
            }
            finally { pin.Free(); }
        }

        // ---- reading ----

        // The full shape in CNTK's order: the sample's dims, then the sequence axis, then the batch axis.
        public NDShape Shape
        {
            get { return NDShape.Read((long[] d, int c, out int r) => Native.ctk_value_shape(Handle, d, c, out r)); }
        }

        public DataType DataType { get { int t; Status.Check(Native.ctk_value_dtype(Handle, out t)); return DataTypes.FromNative(t); } }

        public DeviceDescriptor Device { get { NativeDevice d; Status.Check(Native.ctk_value_device(Handle, out d)); return DeviceDescriptor.FromNative(d); } }

        public bool IsSparse { get { int h; Status.Check(Native.ctk_value_is_one_hot(Handle, out h)); return h != 0; } }

        long[] SequenceLengths()
        {
            long count;
            Status.Check(Native.ctk_value_sequence_lengths(Handle, null, 0, out count));
            long[] lengths = new long[count];
            Status.Check(Native.ctk_value_sequence_lengths(Handle, lengths, count, out count));
            return lengths;
        }

        // One list per sequence (per sample when the value has no sequences), each the samples' values in
        // the variable's sample layout.
        public IList<IList<T>> GetDenseData<T>(Variable outputVariable)
        {
            NDShape shape = Shape;
            T[] all = new T[shape.TotalSize];
            GCHandle pin = GCHandle.Alloc(all, GCHandleType.Pinned);
            try { Status.Check(Native.ctk_value_copy_data(Handle, DataTypes.Of<T>(), pin.AddrOfPinnedObject(), all.Length)); }
            finally { pin.Free(); }
            long[] lengths = SequenceLengths();
            List<IList<T>> result = new List<IList<T>>();
            if (outputVariable != null && outputVariable.AxesKind == 0)
            {
                result.Add(all.ToList());
                return result;
            }
            if (lengths.Length == 0)
            {
                int batch = shape[shape.Rank - 1];
                int size = all.Length / Math.Max(batch, 1);
                for (int i = 0; i < batch; ++i) result.Add(new ArraySegment<T>(all, i * size, size).ToList());
                return result;
            }
            int maxLength = shape[shape.Rank - 2];
            int frameSize = all.Length / Math.Max(lengths.Length * maxLength, 1);
            for (int i = 0; i < lengths.Length; ++i)
                result.Add(new ArraySegment<T>(all, i * maxLength * frameSize, (int)lengths[i] * frameSize).ToList());
            return result;
        }

        // CNTK's older name: the dense data copied into `sequences` (cleared first).
        public void CopyVariableValueTo<T>(Variable outputVariable, List<List<T>> sequences)
        {
            sequences.Clear();
            foreach (IList<T> s in GetDenseData<T>(outputVariable)) sequences.Add(s.ToList());
        }

        // One list of hot indices per sequence (per sample without sequences); ArgumentException for a
        // sample that is not one-hot.
        public IList<IList<int>> GetOneHotData(Variable outputVariable)
        {
            IList<IList<float>> dense = GetDenseData<float>(outputVariable);
            int dim = outputVariable.Shape.TotalSize;
            List<IList<int>> result = new List<IList<int>>();
            foreach (IList<float> seq in dense)
            {
                List<int> hot = new List<int>();
                for (int s = 0; s < seq.Count / dim; ++s)
                {
                    int at = -1;
                    for (int k = 0; k < dim; ++k)
                    {
                        float x = seq[s * dim + k];
                        if (x == 1 && at < 0) at = k;
                        else if (x != 0) throw new ArgumentException("GetOneHotData: sample " + s + " is not one-hot");
                    }
                    if (at < 0) throw new ArgumentException("GetOneHotData: sample " + s + " has no 1");
                    hot.Add(at);
                }
                result.Add(hot);
            }
            return result;
        }

        public void Dispose()
        {
            Handle.Dispose();
            if (pinned != null) pinned.Free();
        }
    }
}
