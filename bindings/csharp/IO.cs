// CNTK's readers from C#: StreamConfiguration, the text-format (CTF) and MNIST IDX sources, minibatches
// keyed by StreamInformation, and the source's position for checkpoints.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using CNTK.Interop;

namespace CNTK
{
    public class StreamConfiguration
    {
        public readonly string m_streamName;
        public readonly int m_dim;
        public readonly bool m_isSparse;
        public readonly string m_streamAlias;
        public readonly bool m_definesMbSize;

        public StreamConfiguration(string streamName, int dim, bool isSparse = false, string streamAlias = "", bool definesMbSize = false)
        {
            m_streamName = streamName;
            m_dim = dim;
            m_isSparse = isSparse;
            m_streamAlias = streamAlias;
            m_definesMbSize = definesMbSize;
        }
    }

    // A stream of a source; minibatches are dictionaries keyed by it (equal when the names are).
    public class StreamInformation : IEquatable<StreamInformation>
    {
        public string m_name { get; internal set; }
        public uint m_id { get; internal set; }
        public StorageFormat m_storageFormat { get; internal set; }
        public DataType m_elementType { get; internal set; }
        public NDShape m_sampleLayout { get; internal set; }
        public bool m_definesMbSize { get; internal set; }

        public bool Equals(StreamInformation other) { return other != null && other.m_name == m_name; }
        public override bool Equals(object obj) { return Equals(obj as StreamInformation); }
        public override int GetHashCode() { return m_name.GetHashCode(); }
        public override string ToString() { return m_name; }
    }

    public class MinibatchData
    {
        public Value data { get; internal set; }
        public uint numberOfSamples { get; internal set; }
        public uint numberOfSequences { get; internal set; }
        public bool sweepEnd { get; internal set; }
        public bool IsValid { get { return data != null; } }
    }

    public class UnorderedMapStreamInformationMinibatchData : Dictionary<StreamInformation, MinibatchData>
    {
        public bool empty() { return Count == 0; }
    }

    // CNTK's MinibatchSourceConfig: deserializers (from CNTKLib.ImageDeserializer, CNTKLib.CTFDeserializer)
    // and how to walk them.
    public class MinibatchSourceConfig
    {
        internal readonly IList<CNTKDictionary> Deserializers;
        public ulong MaxSamples { get; set; }
        public ulong MaxSweeps { get; set; }
        public bool Randomize { get; set; }
        public ulong RandomizationWindowInChunks { get; set; }
        public ulong RandomizationWindowInSamples { get; set; }
        public uint RandomizationSeed { get; set; }
        public bool IsMultithreaded { get; set; }

        public MinibatchSourceConfig(IList<CNTKDictionary> deserializers, bool randomize = true)
        {
            if (deserializers == null || deserializers.Count == 0) throw new ArgumentException("MinibatchSourceConfig needs a deserializer");
            if (deserializers.Any(d => d == null || d.Deserializer == null))
                throw new ArgumentException("MinibatchSourceConfig: every entry must come from CNTKLib.ImageDeserializer or CNTKLib.CTFDeserializer");
            Deserializers = deserializers.ToList();
            MaxSamples = MinibatchSource.InfinitelyRepeat;
            MaxSweeps = MinibatchSource.InfinitelyRepeat;
            Randomize = randomize;
            RandomizationWindowInChunks = MinibatchSource.DefaultRandomizationWindowInChunks;
            IsMultithreaded = true;
        }
    }

    public static partial class CNTKLib
    {
        // ---- image transforms (CNTK's reader configuration helpers) ----
        public static CNTKDictionary ReaderCrop(string cropType, Tuple<int, int> cropSize, Tuple<float, float> sideRatio, Tuple<float, float> areaRatio,
                                                Tuple<float, float> aspectRatio, string jitterType = "none")
        {
            Status.EnsureAbi();
            ImageTransformHandle t;
            Status.Check(Native.ctk_image_crop(Utf8.Bytes(cropType), cropSize.Item1, cropSize.Item2, sideRatio.Item1, sideRatio.Item2,
                                               areaRatio.Item1, areaRatio.Item2, aspectRatio.Item1, aspectRatio.Item2, Utf8.Bytes(jitterType),
                                               -1, 0, out t));
            return new CNTKDictionary(t);
        }

        public static CNTKDictionary ReaderCrop(string cropType = "center")
        {
            return ReaderCrop(cropType, Tuple.Create(0, 0), Tuple.Create(0f, 0f), Tuple.Create(0f, 0f), Tuple.Create(1f, 1f));
        }

        public static CNTKDictionary ReaderScale(int width, int height, int channels, string interpolations = "linear",
                                                 string scaleMode = "fill", int padValue = -1)
        {
            Status.EnsureAbi();
            ImageTransformHandle t;
            Status.Check(Native.ctk_image_scale(width, height, channels, Utf8.Bytes(interpolations), Utf8.Bytes(scaleMode), padValue, out t));
            return new CNTKDictionary(t);
        }

        public static CNTKDictionary ReaderMean(string meanFile)
        {
            Status.EnsureAbi();
            ImageTransformHandle t;
            Status.Check(Native.ctk_image_mean(Utf8.Bytes(meanFile), out t));
            return new CNTKDictionary(t);
        }

        public static CNTKDictionary ReaderColor(float brightnessRadius = 0, float contrastRadius = 0, float saturationRadius = 0)
        {
            Status.EnsureAbi();
            ImageTransformHandle t;
            Status.Check(Native.ctk_image_color(brightnessRadius, contrastRadius, saturationRadius, 0, out t));
            return new CNTKDictionary(t);
        }

        // ---- deserializers ----
        // CNTK's ImageDeserializer; an entry "grayscale" = true added to the result decodes one channel.
        public static CNTKDictionary ImageDeserializer(string fileName, string labelStreamName, uint numLabels, string imageStreamName,
                                                       IList<CNTKDictionary> transforms = null)
        {
            return ImageDeserializer(fileName, labelStreamName, numLabels, imageStreamName, transforms, false);
        }

        public static CNTKDictionary Base64ImageDeserializer(string fileName, string labelStreamName, uint numLabels, string imageStreamName,
                                                             IList<CNTKDictionary> transforms = null)
        {
            return ImageDeserializer(fileName, labelStreamName, numLabels, imageStreamName, transforms, true);
        }

        static CNTKDictionary ImageDeserializer(string fileName, string labelStreamName, uint numLabels, string imageStreamName,
                                                IList<CNTKDictionary> transforms, bool base64)
        {
            List<CNTKDictionary> list = transforms == null ? new List<CNTKDictionary>() : transforms.ToList();
            if (list.Any(t => t == null || t.Transform == null))
                throw new ArgumentException("ImageDeserializer: every transform must come from CNTKLib.ReaderCrop, ReaderScale, ReaderMean or ReaderColor");
            return new CNTKDictionary(self =>
            {
                IntPtr[] raw = list.Select(t => t.Transform.DangerousGetHandle()).ToArray();
                DeserializerHandle d;
                Status.Check(Native.ctk_image_deserializer(Utf8.Bytes(fileName), Utf8.Bytes(labelStreamName), numLabels, Utf8.Bytes(imageStreamName),
                                                           raw, raw.Length, self.Flag("grayscale") ? 1 : 0, base64 ? 1 : 0, out d));
                GC.KeepAlive(list);
                return d;
            });
        }

        public static CNTKDictionary CTFDeserializer(string fileName, IList<StreamConfiguration> streams)
        {
            List<StreamConfiguration> list = streams.ToList();
            return new CNTKDictionary(self => MinibatchSource.CtfDeserializer(fileName, list));
        }

        public static MinibatchSource CreateCompositeMinibatchSource(MinibatchSourceConfig configuration)
        {
            return MinibatchSource.Composite(configuration);
        }
    }

    public class MinibatchSource
    {
        public const ulong InfinitelyRepeat = ulong.MaxValue;
        public const ulong FullDataSweep = ulong.MaxValue - 2;
        public const ulong DefaultRandomizationWindowInChunks = 128;

        readonly SourceHandle handle;
        readonly List<StreamInformation> streams = new List<StreamInformation>();

        MinibatchSource(SourceHandle handle)
        {
            this.handle = handle;
            long count;
            Status.Check(Native.ctk_minibatch_source_stream_count(handle, out count));
            for (int i = 0; i < count; ++i)
            {
                IntPtr name;
                long[] dims = new long[16];
                int rank, dtype, sparse;
                Status.Check(Native.ctk_minibatch_source_stream_info(handle, i, out name, dims, dims.Length, out rank, out dtype, out sparse));
                streams.Add(new StreamInformation
                {
                    m_name = Utf8.FromNative(name),
                    m_id = (uint)i,
                    m_storageFormat = sparse != 0 ? StorageFormat.SparseCSC : StorageFormat.Dense,
                    m_elementType = DataTypes.FromNative(dtype),
                    m_sampleLayout = NDShape.FromRowMajor(dims, rank)
                });
            }
        }

        // CNTK's text-format source: epochSize samples (InfinitelyRepeat: forever; FullDataSweep: one sweep).
        public static MinibatchSource TextFormatMinibatchSource(string dataFilePath, IList<StreamConfiguration> streamConfigs,
                                                                ulong epochSize = InfinitelyRepeat, bool randomize = true,
                                                                ulong randomizationWindow = DefaultRandomizationWindowInChunks,
                                                                bool sampleBasedRandomizationWindow = false)
        {
            Status.EnsureAbi();
            using (DeserializerHandle d = CtfDeserializer(dataFilePath, streamConfigs))
            {
                NativeSourceConfig config = Config(epochSize, randomize);
                if (sampleBasedRandomizationWindow) config.windowInSamples = (long)randomizationWindow;
                else config.windowInChunks = (long)randomizationWindow;
                return Create(new[] { d }, config);
            }
        }

        internal static DeserializerHandle CtfDeserializer(string dataFilePath, IList<StreamConfiguration> streamConfigs)
        {
            Status.EnsureAbi();
            NativeStreamDef[] defs = new NativeStreamDef[streamConfigs.Count];
            List<IntPtr> strings = new List<IntPtr>();
            try
            {
                for (int i = 0; i < defs.Length; ++i)
                {
                    StreamConfiguration c = streamConfigs[i];
                    defs[i].name = Copy(c.m_streamName, strings);
                    defs[i].field = string.IsNullOrEmpty(c.m_streamAlias) ? IntPtr.Zero : Copy(c.m_streamAlias, strings);
                    defs[i].dim = c.m_dim;
                    defs[i].isSparse = c.m_isSparse ? 1 : 0;
                    defs[i].definesMbSize = c.m_definesMbSize ? 1 : 0;
                }
                DeserializerHandle d;
                Status.Check(Native.ctk_ctf_deserializer(Utf8.Bytes(dataFilePath), defs, defs.Length, out d));
                return d;
            }
            finally
            {
                foreach (IntPtr p in strings) Marshal.FreeHGlobal(p);
            }
        }

        internal static MinibatchSource Composite(MinibatchSourceConfig c)
        {
            Status.EnsureAbi();
            DeserializerHandle[] handles = c.Deserializers.Select(d => d.Deserializer(d)).ToArray();
            try
            {
                NativeSourceConfig config;
                Status.Check(Native.ctk_source_config_default(out config));
                config.maxSamples = c.MaxSamples == InfinitelyRepeat ? long.MaxValue : (long)c.MaxSamples;
                config.maxSweeps = c.MaxSweeps == InfinitelyRepeat ? long.MaxValue : (long)c.MaxSweeps;
                config.randomize = c.Randomize ? 1 : 0;
                config.windowInChunks = (long)c.RandomizationWindowInChunks;
                config.windowInSamples = (long)c.RandomizationWindowInSamples;
                config.seed = c.RandomizationSeed;
                if (!c.IsMultithreaded) config.readerThreads = 1;
                return Create(handles, config);
            }
            finally
            {
                foreach (DeserializerHandle h in handles) h.Dispose();
            }
        }

        // MNIST's IDX files (streams "features" and "labels"); ctk's addition.
        public static MinibatchSource IdxMinibatchSource(string imagesPath, string labelsPath, int numClasses = 10,
                                                         ulong epochSize = InfinitelyRepeat, bool randomize = true)
        {
            Status.EnsureAbi();
            DeserializerHandle d;
            Status.Check(Native.ctk_idx_deserializer(Utf8.Bytes(imagesPath), Utf8.Bytes(labelsPath), numClasses, out d));
            using (d) return Create(new[] { d }, Config(epochSize, randomize));
        }

        static NativeSourceConfig Config(ulong epochSize, bool randomize)
        {
            NativeSourceConfig config;
            Status.Check(Native.ctk_source_config_default(out config));
            config.randomize = randomize ? 1 : 0;
            if (epochSize == FullDataSweep) config.maxSweeps = 1;
            else if (epochSize != InfinitelyRepeat) config.maxSamples = (long)epochSize;
            return config;
        }

        static MinibatchSource Create(DeserializerHandle[] deserializers, NativeSourceConfig config)
        {
            IntPtr[] raw = deserializers.Select(d => d.DangerousGetHandle()).ToArray();
            SourceHandle s;
            Status.Check(Native.ctk_minibatch_source_create(raw, raw.Length, ref config, out s));
            GC.KeepAlive(deserializers);
            return new MinibatchSource(s);
        }

        static IntPtr Copy(string text, List<IntPtr> owned)
        {
            byte[] bytes = Utf8.Bytes(text);
            IntPtr p = Marshal.AllocHGlobal(bytes.Length);
            owned.Add(p);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return p;
        }

        public IList<StreamInformation> StreamInfos() { return streams; }

        public StreamInformation StreamInfo(string streamName)
        {
            StreamInformation s = streams.FirstOrDefault(i => i.m_name == streamName);
            if (s == null)
                throw new ArgumentException(string.Format("the source has no stream '{0}'; its streams are {1}", streamName,
                                                          string.Join(", ", streams.Select(i => "'" + i.m_name + "'"))));
            return s;
        }

        public StreamInformation StreamInfo(Variable variable) { return StreamInfo(variable.Name); }

        public UnorderedMapStreamInformationMinibatchData GetNextMinibatch(uint minibatchSizeInSamples, DeviceDescriptor device = null)
        {
            return GetNextMinibatch(0, minibatchSizeInSamples, 1, 0, device);
        }

        public UnorderedMapStreamInformationMinibatchData GetNextMinibatch(uint minibatchSizeInSequences, uint minibatchSizeInSamples,
                                                                           DeviceDescriptor device = null)
        {
            return GetNextMinibatch(minibatchSizeInSequences, minibatchSizeInSamples, 1, 0, device);
        }

        public UnorderedMapStreamInformationMinibatchData GetNextMinibatch(uint minibatchSizeInSequences, uint minibatchSizeInSamples,
                                                                           uint numberOfWorkers, uint workerRank, DeviceDescriptor device = null)
        {
            if (minibatchSizeInSequences != 0) throw new NotSupportedException("minibatch sizes in sequences are not supported; give samples");
            MinibatchHandle mb;
            Status.Check(Native.ctk_minibatch_source_next(handle, minibatchSizeInSamples, numberOfWorkers, workerRank,
                                                          DeviceDescriptor.Native_(device), out mb));
            using (mb)
            {
                UnorderedMapStreamInformationMinibatchData result = new UnorderedMapStreamInformationMinibatchData();
                long count;
                Status.Check(Native.ctk_minibatch_stream_count(mb, out count));
                if (count == 0) return result;
                foreach (StreamInformation s in streams)
                {
                    ValueHandle v;
                    long samples, sequences;
                    int sweepEnd;
                    Status.Check(Native.ctk_minibatch_stream(mb, Utf8.Bytes(s.m_name), out v, out samples, out sequences, out sweepEnd));
                    result[s] = new MinibatchData
                    {
                        data = new Value(v),
                        numberOfSamples = (uint)samples,
                        numberOfSequences = (uint)sequences,
                        sweepEnd = sweepEnd != 0
                    };
                }
                return result;
            }
        }

        // The source's position (restore it with RestoreFromCheckpoint to resume reading there).
        public byte[] GetCheckpointState()
        {
            long size;
            Status.Check(Native.ctk_minibatch_source_get_state(handle, null, 0, out size));
            byte[] state = new byte[size];
            Status.Check(Native.ctk_minibatch_source_get_state(handle, state, size, out size));
            return state;
        }

        public void RestoreFromCheckpoint(byte[] checkpoint)
        {
            Status.Check(Native.ctk_minibatch_source_set_state(handle, checkpoint, checkpoint.Length));
        }
    }
}
