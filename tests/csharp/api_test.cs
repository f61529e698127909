// The C# binding's test: CNTK's C# API (the facade in bindings/csharp) used as CNTK's C# users use it.
// Errors become CNTK's exception types; a model is built, saved, loaded and evaluated; an MLP trains on
// Fashion-MNIST for an epoch and every minibatch's loss and every trained parameter equal the C++ twin's
// (tests/csharp/mlp_twin.cpp) bit for bit; the model saved and loaded evaluates the same; two seeded runs
// agree to the bit. Usage: mono api_test.exe DATA_DIR SCRATCH_DIR TWIN_FILE [SAMPLES]
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using CNTK;

static class ApiTest
{
    static int failures;

    static void Check(bool condition, string what)
    {
        if (!condition)
        {
            Console.Error.WriteLine("FAILED: " + what);
            ++failures;
        }
    }

    static void Throws<E>(Action action, string text, string what) where E : Exception
    {
        try
        {
            action();
            Check(false, what + ": no exception");
        }
        catch (E e)
        {
            Check(e.Message.Contains(text), what + ": message '" + e.Message + "' lacks '" + text + "'");
        }
        catch (Exception e)
        {
            Check(false, what + ": " + e.GetType().Name + " instead of " + typeof(E).Name + ": " + e.Message);
        }
    }

    static void Errors(DeviceDescriptor cpu)
    {
        Throws<ApplicationException>(() => Function.Load("/nonexistent/model.dnn", cpu), "/nonexistent/model.dnn", "missing model file");
        Throws<ArgumentException>(() => Variable.InputVariable(new[] { 3 }, DataType.UChar), "UChar", "unsupported DataType");
        var a = Variable.InputVariable(new[] { 3 }, DataType.Float, "a");
        var b = Variable.InputVariable(new[] { 4 }, DataType.Float, "b");
        Throws<ArgumentException>(() => CNTKLib.Plus(a, b), "do not broadcast", "shape mismatch");
        var relu = CNTKLib.ReLU(a);
        var wrong = Value.CreateBatch(new[] { 4 }, new float[] { 1, 2, 3, 4 }, cpu);
        var outputs = new Dictionary<Variable, Value> { { relu.Output, null } };
        Throws<ArgumentException>(() => relu.Evaluate(new Dictionary<Variable, Value> { { a, wrong } }, outputs, cpu), "a", "wrong input shape");
        Throws<ArgumentException>(() => Value.CreateBatch(new[] { 3 }, new float[] { 1, 2 }, cpu), "whole number", "partial sample");
        var disposed = Value.CreateBatch(new[] { 3 }, new float[] { 1, 2, 3 }, cpu);
        disposed.Dispose();
        Throws<ObjectDisposedException>(() => relu.Evaluate(new Dictionary<Variable, Value> { { a, disposed } }, outputs, cpu), "disposed", "disposed value");
        Throws<ApplicationException>(() => MinibatchSource.TextFormatMinibatchSource("/nonexistent.ctf", new[] { new StreamConfiguration("x", 3) }),
                                     "/nonexistent.ctf", "missing CTF file");
    }

    // z = W x + b in CNTK's C# shapes (W is [out, in] column-major), evaluated, saved and loaded back.
    static void Evaluation(DeviceDescriptor cpu, string scratch)
    {
        var x = Variable.InputVariable(new[] { 2 }, DataType.Float, "x");
        var w = new Parameter(new NDArrayView(new[] { 3, 2 }, new float[] { 1, 2, 3, 4, 5, 6 }, cpu), "W");
        var bias = new Parameter(new[] { 3 }, DataType.Float, 0.5, cpu, "b");
        Function z = CNTKLib.Plus(CNTKLib.Times(w, x), bias, "z");
        Check(z.Name == "z" && z.Output.Shape.Equals(new NDShape(new[] { 3 })), "z's name and shape " + z.Output.Shape);
        Check(z.Arguments.Count == 1 && z.Arguments[0].Name == "x", "z's arguments");
        Check(z.Parameters().Count == 2, "z's parameters");
        Check(x.DynamicAxes.Count == 2, "C# inputs have a sequence and a batch axis by default");
        // W's memory order is column-major [3, 2]: W x for x = (1, 1) is (1+4, 2+5, 3+6).
        var input = Value.CreateBatch(new[] { 2 }, new float[] { 1, 1, 2, 0 }, cpu);
        var outputs = new Dictionary<Variable, Value> { { z.Output, null } };
        z.Evaluate(new Dictionary<Variable, Value> { { x, input } }, outputs, cpu);
        IList<IList<float>> got = outputs[z.Output].GetDenseData<float>(z.Output);
        float[] want = { 5.5f, 7.5f, 9.5f, 2.5f, 4.5f, 6.5f };
        Check(got.Count == 2 && got.SelectMany(v => v).SequenceEqual(want), "z(x) = " + string.Join(",", got.SelectMany(v => v)));
        Check(outputs[z.Output].Shape.Equals(new NDShape(new[] { 3, 1, 2 })), "output value shape " + outputs[z.Output].Shape);

        // Into a value the caller allocated, of the output's full shape ([3] per sample, 1 frame, 2 samples).
        var preallocated = new Value(new NDArrayView(new[] { 3, 1, 2 }, new float[6], cpu));
        var into = new Dictionary<Variable, Value> { { z.Output, preallocated } };
        z.Evaluate(new Dictionary<Variable, Value> { { x, input } }, into, cpu);
        Check(ReferenceEquals(into[z.Output], preallocated), "the caller's output value is kept");
        Check(preallocated.GetDenseData<float>(z.Output).SelectMany(v => v).SequenceEqual(want), "the result written into the caller's value");
        var wrongSize = new Dictionary<Variable, Value> { { z.Output, new Value(new NDArrayView(new[] { 3, 1, 1 }, new float[3], cpu)) } };
        Throws<ArgumentException>(() => z.Evaluate(new Dictionary<Variable, Value> { { x, input } }, wrongSize, cpu), "shape", "an output value of another shape");

        string path = Path.Combine(scratch, "csharp_models", "z.model");
        z.Save(path);
        foreach (Function loaded in new[] { Function.Load(path, cpu), Function.Load(z.Save(), cpu) })
        {
            var lx = loaded.Arguments[0];
            var lout = new Dictionary<Variable, Value> { { loaded.Output, null } };
            loaded.Evaluate(new Dictionary<Variable, Value> { { lx, input } }, lout, cpu);
            Check(lout[loaded.Output].GetDenseData<float>(loaded.Output).SelectMany(v => v).SequenceEqual(want), "loaded model");
        }

        // Sequences and one-hot data.
        var s = Variable.InputVariable(new[] { 4 }, DataType.Float, "s", null, true);
        var e = new Parameter(new NDArrayView(new[] { 2, 4 }, new float[] { 0, 1, 10, 11, 20, 21, 30, 31 }, cpu), "E");
        Function last = CNTKLib.SequenceLast(CNTKLib.Times(e, s));
        var seqs = Value.CreateBatchOfSequences<float>(4, new[] { new[] { 1, 2 }, new[] { 3 } }, cpu);
        var lastOut = new Dictionary<Variable, Value> { { last.Output, null } };
        last.Evaluate(new Dictionary<Variable, Value> { { s, seqs } }, lastOut, cpu);
        var lastValues = lastOut[last.Output].GetDenseData<float>(last.Output).SelectMany(v => v).ToArray();
        Check(lastValues.SequenceEqual(new float[] { 20, 21, 30, 31 }), "sequence.last of one-hot sequences: " + string.Join(",", lastValues));
        var csc = Value.CreateSequence<float>(4, 2, new[] { 0, 1, 2 }, new[] { 2, 1 }, new float[] { 1, 1 }, cpu);
        Check(csc.IsSparse && csc.GetOneHotData(s)[0].SequenceEqual(new[] { 2, 1 }), "CSC one-hot sequence");
    }

    // CNTK's transfer-learning pattern: a trained model's hidden layer found by name, cloned with frozen
    // parameters onto a new input, a new trainable layer on top.
    static void TransferLearning(DeviceDescriptor cpu, string scratch)
    {
        CNTKLib.ResetRandomSeed(5);
        var features = Variable.InputVariable(new[] { 4 }, DataType.Float, "features");
        var w = new Parameter(new[] { 3, 4 }, DataType.Float, CNTKLib.GlorotUniformInitializer(), cpu, "w");
        Function hidden = CNTKLib.ReLU(CNTKLib.Times(w, features), "hidden");
        Function top = CNTKLib.Times(new Parameter(new[] { 2, 3 }, DataType.Float, 1.0, cpu, "top"), hidden, "z");
        string path = Path.Combine(scratch, "csharp_models", "base.model");
        top.Save(path);

        Function baseModel = Function.Load(path, cpu);
        var image = Variable.InputVariable(new[] { 4 }, DataType.Float);
        var labels = Variable.InputVariable(new[] { 2 }, DataType.Float);
        Function normalized = CNTKLib.Minus(image, Constant.Scalar(DataType.Float, 114.0F));
        Variable oldFeature = baseModel.Arguments.Single(a => a.Name == "features");
        Function lastNode = baseModel.FindByName("hidden");
        Check(lastNode != null && lastNode.OpName == "ReLU", "FindByName found the hidden ReLU");
        Function cloned = CNTKLib.AsComposite(lastNode).Clone(ParameterCloningMethod.Freeze,
                                                              new Dictionary<Variable, Variable> { { oldFeature, normalized } });
        Check(cloned.Parameters().Count == 0 && cloned.Constants().Count >= 2, "frozen clone: parameters became constants");
        Check(cloned.Arguments.Count == 1 && cloned.Arguments[0] == image, "the clone reads the new input");
        var newW = new Parameter(new[] { 2, 3 }, DataType.Float, CNTKLib.GlorotUniformInitializer(), cpu, "newW");
        Function model = CNTKLib.Times(newW, cloned, "prediction");
        Check(model.Parameters().Count == 1, "only the new layer trains");
        var trainer = Trainer.CreateTrainer(model, CNTKLib.CrossEntropyWithSoftmax(model, labels), CNTKLib.ClassificationError(model, labels),
            new List<Learner> { Learner.MomentumSGDLearner(model.Parameters(), new TrainingParameterScheduleDouble(0.2, 0),
                                                           new TrainingParameterScheduleDouble(0.9, 0), true,
                                                           new AdditionalLearningOptions { l2RegularizationWeight = 0.05 }) });
        float[] frozenBefore = baseModel.Parameters().SelectMany(p => p.GetValue().GetData<float>()).ToArray();
        float[] before = newW.GetValue().GetData<float>().ToArray();
        var batch = Value.CreateBatch(new[] { 4 }, new float[] { 120, 130, 100, 90, 110, 140, 150, 100 }, cpu);
        var onehot = Value.CreateBatch(new[] { 2 }, new float[] { 1, 0, 0, 1 }, cpu);
        trainer.TrainMinibatch(new Dictionary<Variable, Value> { { image, batch }, { labels, onehot } }, false, cpu);
        Check(!newW.GetValue().GetData<float>().SequenceEqual(before), "the new layer trained");
        Check(baseModel.Parameters().SelectMany(p => p.GetValue().GetData<float>()).SequenceEqual(frozenBefore),
              "the base model's parameters did not move");
    }

    class Mlp
    {
        public Variable X, Y;
        public Parameter W1, B1, W2, B2;
        public Function Z, Loss, Error;
    }

    static Mlp BuildMlp(DeviceDescriptor cpu)
    {
        var m = new Mlp();
        m.X = Variable.InputVariable(new[] { 784 }, DataType.Float, "features");
        m.Y = Variable.InputVariable(new[] { 10 }, DataType.Float, "labels");
        m.W1 = new Parameter(new[] { 200, 784 }, DataType.Float, CNTKLib.GlorotUniformInitializer(), cpu, "W1");
        m.B1 = new Parameter(new[] { 200 }, DataType.Float, 0.0, cpu, "b1");
        m.W2 = new Parameter(new[] { 10, 200 }, DataType.Float, CNTKLib.GlorotUniformInitializer(), cpu, "W2");
        m.B2 = new Parameter(new[] { 10 }, DataType.Float, 0.0, cpu, "b2");
        var scaled = CNTKLib.ElementTimes(Constant.Scalar<float>(0.00390625f, cpu), m.X);
        var h = CNTKLib.Sigmoid(CNTKLib.Plus(CNTKLib.Times(m.W1, scaled), m.B1));
        m.Z = CNTKLib.Plus(CNTKLib.Times(m.W2, h), m.B2, "z");
        m.Loss = CNTKLib.CrossEntropyWithSoftmax(m.Z, m.Y);
        m.Error = CNTKLib.ClassificationError(m.Z, m.Y);
        return m;
    }

    // One epoch (or `samples`) of SGD, in file order; the losses of every minibatch.
    static List<double> Train(Mlp m, string data, ulong samples, DeviceDescriptor cpu)
    {
        var learner = Learner.SGDLearner(m.Z.Parameters(), new TrainingParameterScheduleDouble(0.003125, 1));
        var trainer = Trainer.CreateTrainer(m.Z, m.Loss, m.Error, new List<Learner> { learner });
        var source = MinibatchSource.IdxMinibatchSource(Path.Combine(data, "train-images-idx3-ubyte"),
                                                        Path.Combine(data, "train-labels-idx1-ubyte"), 10, samples, false);
        var features = source.StreamInfo("features");
        var labels = source.StreamInfo("labels");
        var losses = new List<double>();
        while (true)
        {
            var mb = source.GetNextMinibatch(64, cpu);
            if (mb.Count == 0) break;
            trainer.TrainMinibatch(new Dictionary<Variable, MinibatchData> { { m.X, mb[features] }, { m.Y, mb[labels] } }, cpu);
            losses.Add(trainer.PreviousMinibatchLossAverage());
        }
        return losses;
    }

    static float[] Parameters(Mlp m)
    {
        return new[] { m.W1, m.B1, m.W2, m.B2 }.SelectMany(p => p.GetValue().GetData<float>()).ToArray();
    }

    static void AgainstTwin(DeviceDescriptor cpu, string data, string twinFile, ulong samples, string scratch)
    {
        CNTKLib.ResetRandomSeed(1);
        CNTKLib.ForceDeterministicAlgorithms();
        Mlp m = BuildMlp(cpu);
        List<double> losses = Train(m, data, samples, cpu);
        var twinLosses = new List<double>();
        var twinParams = new List<double>();
        foreach (string line in File.ReadLines(twinFile))
        {
            string[] parts = line.Split(' ');
            if (parts[0] == "loss") twinLosses.Add(double.Parse(parts[1], CultureInfo.InvariantCulture));
            else twinParams.AddRange(parts.Skip(2).Select(p => double.Parse(p, CultureInfo.InvariantCulture)));
        }
        Check(losses.Count == twinLosses.Count && losses.Count > 0, "minibatch count " + losses.Count + " vs twin " + twinLosses.Count);
        int lossMismatches = losses.Zip(twinLosses, (a, b) => a == b ? 0 : 1).Sum();
        Check(lossMismatches == 0, lossMismatches + " minibatch losses differ from the C++ twin's (first " + losses[0] + " vs " + twinLosses[0] + ")");
        float[] trained = Parameters(m);
        Check(trained.Length == twinParams.Count, "parameter count " + trained.Length + " vs twin " + twinParams.Count);
        int paramMismatches = trained.Zip(twinParams, (a, b) => (double)a == b ? 0 : 1).Sum();
        Check(paramMismatches == 0, paramMismatches + " trained parameters differ from the C++ twin's");
        Console.WriteLine("trained {0} minibatches: loss {1:F4} -> {2:F4}; {3} parameters equal the C++ twin's", losses.Count, losses[0],
                          losses[losses.Count - 1], trained.Length - paramMismatches);

        // The trained model saved and loaded evaluates as the model in memory.
        string path = Path.Combine(scratch, "csharp_models", "mlp.model");
        m.Z.Save(path);
        Function loaded = Function.Load(path, cpu);
        var test = MinibatchSource.IdxMinibatchSource(Path.Combine(data, "t10k-images-idx3-ubyte"), Path.Combine(data, "t10k-labels-idx1-ubyte"),
                                                      10, MinibatchSource.FullDataSweep, false);
        var mb = test.GetNextMinibatch(1000, cpu);
        var images = mb[test.StreamInfo("features")].data;
        var labelData = mb[test.StreamInfo("labels")].data.GetDenseData<float>(m.Y);
        var mine = new Dictionary<Variable, Value> { { m.Z.Output, null } };
        m.Z.Evaluate(new Dictionary<Variable, Value> { { m.X, images } }, mine, cpu);
        var theirs = new Dictionary<Variable, Value> { { loaded.Output, null } };
        loaded.Evaluate(new Dictionary<Variable, Value> { { loaded.Arguments[0], images } }, theirs, cpu);
        var a1 = mine[m.Z.Output].GetDenseData<float>(m.Z.Output);
        var a2 = theirs[loaded.Output].GetDenseData<float>(loaded.Output);
        Check(a1.SelectMany(v => v).SequenceEqual(a2.SelectMany(v => v)), "the loaded model's outputs equal the trained model's");
        int wrong = a1.Zip(labelData, (o, l) => o.IndexOf(o.Max()) == l.IndexOf(1f) ? 0 : 1).Sum();
        Console.WriteLine("test error on 1000 images after {0} samples: {1:P1}", samples, wrong / 1000.0);
        if (samples >= 60000) Check(wrong < 300, "test error " + wrong + "/1000 after an epoch");
    }

    static void Determinism(DeviceDescriptor cpu, string data)
    {
        float[][] runs = new float[2][];
        for (int r = 0; r < 2; ++r)
        {
            CNTKLib.ResetRandomSeed(7);
            CNTKLib.ForceDeterministicAlgorithms();
            Mlp m = BuildMlp(cpu);
            Train(m, data, 640, cpu);
            runs[r] = Parameters(m);
        }
        Check(runs[0].SequenceEqual(runs[1]), "two runs with ResetRandomSeed(7) differ");
        Check(CNTKLib.ShouldForceDeterministicAlgorithms(), "ForceDeterministicAlgorithms is on");
    }

    static int Main(string[] args)
    {
        if (args.Length < 3)
        {
            Console.Error.WriteLine("usage: api_test.exe DATA_DIR SCRATCH_DIR TWIN_FILE [SAMPLES]");
            return 2;
        }
        ulong samples = args.Length > 3 ? ulong.Parse(args[3]) : 60000;
        var cpu = DeviceDescriptor.CPUDevice;
        Console.WriteLine(Utils.VersionString() + "; devices: " + string.Join(", ", DeviceDescriptor.AllDevices()));
        Errors(cpu);
        Evaluation(cpu, args[1]);
        TransferLearning(cpu, args[1]);
        AgainstTwin(cpu, args[0], args[2], samples, args[1]);
        Determinism(cpu, args[0]);
        if (failures == 0) Console.WriteLine("api_test: all checks passed");
        else Console.Error.WriteLine("api_test: " + failures + " checks failed");
        return failures == 0 ? 0 : 1;
    }
}
