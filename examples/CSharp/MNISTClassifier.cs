// An MNIST classifier in C# with CNTK's C# API on ctk: an MLP or a small ConvNet built from CNTKLib's
// ops, trained on the CTF files `ctk data mnist` writes (Debian's Fashion-MNIST in CNTK's MNIST layout),
// saved, loaded back and scored on the test file.
// Build: mcs -r:Cntk.Core.Managed.dll -out:MNISTClassifier.exe MNISTClassifier.cs
// Usage: mono MNISTClassifier.exe --data DIR [--conv] [--epochs N] [--epoch-size N] [--model PATH]
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using CNTK;

static class MNISTClassifier
{
    const int ImageSize = 28 * 28, NumClasses = 10;

    // A fully connected layer on a flat input: W x + b.
    static Function Dense(Variable input, int outputDim, DeviceDescriptor device, string name = "")
    {
        if (input.Shape.Rank != 1) input = CNTKLib.Reshape(input, new[] { input.Shape.TotalSize });
        var w = new Parameter(new[] { outputDim, input.Shape[0] }, DataType.Float, CNTKLib.GlorotUniformInitializer(), device, name + "W");
        var b = new Parameter(new[] { outputDim }, DataType.Float, 0.0, device, name + "b");
        return CNTKLib.Plus(CNTKLib.Times(w, input), b, name);
    }

    // 3x3 convolution with ReLU (padded), then 3x3 max pooling with stride 2.
    static Function ConvPool(Variable input, int inChannels, int outChannels, DeviceDescriptor device)
    {
        var w = new Parameter(new[] { 3, 3, inChannels, outChannels }, DataType.Float, CNTKLib.GlorotUniformInitializer(0.26, -1, 2), device);
        var conv = CNTKLib.ReLU(CNTKLib.Convolution(w, input, new[] { 1, 1, inChannels }));
        return CNTKLib.Pooling(conv, PoolingType.Max, new[] { 3, 3 }, new[] { 2, 2 }, new[] { true });
    }

    static int Main(string[] args)
    {
        string data = null, modelPath = null;
        bool conv = false;
        int epochs = 5;
        ulong epochSize = 60000;
        for (int i = 0; i < args.Length; ++i)
        {
            if (args[i] == "--data") data = args[++i];
            else if (args[i] == "--conv") conv = true;
            else if (args[i] == "--epochs") epochs = int.Parse(args[++i]);
            else if (args[i] == "--epoch-size") epochSize = ulong.Parse(args[++i]);
            else if (args[i] == "--model") modelPath = args[++i];
            else { Console.Error.WriteLine("usage: MNISTClassifier.exe --data DIR [--conv] [--epochs N] [--epoch-size N] [--model PATH]"); return 2; }
        }
        if (data == null) { Console.Error.WriteLine("MNISTClassifier: --data DIR is required (write it with `ctk data mnist`)"); return 2; }
        modelPath = modelPath ?? (conv ? "MNISTConvolution.model" : "MNISTMLP.model");
        var device = DeviceDescriptor.CPUDevice;
        CNTKLib.ResetRandomSeed(1);

        // Inputs: the image (28x28x1 for the ConvNet, 784 for the MLP) and its one-hot label.
        int[] imageShape = conv ? new[] { 28, 28, 1 } : new[] { ImageSize };
        var features = Variable.InputVariable(imageShape, DataType.Float, "features");
        var labels = Variable.InputVariable(new[] { NumClasses }, DataType.Float, "labels");
        var scaled = CNTKLib.ElementTimes(Constant.Scalar<float>(1.0f / 256, device), features);
        Function z = conv
            ? Dense(ConvPool(ConvPool(scaled, 1, 8, device), 8, 16, device), NumClasses, device, "classifierOutput")
            : Dense(CNTKLib.ReLU(Dense(scaled, 200, device, "hidden")), NumClasses, device, "classifierOutput");
        var loss = CNTKLib.CrossEntropyWithSoftmax(z, labels, "loss");
        var error = CNTKLib.ClassificationError(z, labels, "error");

        var streams = new[] { new StreamConfiguration("features", ImageSize), new StreamConfiguration("labels", NumClasses) };
        var train = MinibatchSource.TextFormatMinibatchSource(Path.Combine(data, "Train-28x28_cntk_text.txt"), streams, MinibatchSource.InfinitelyRepeat);
        var featureStream = train.StreamInfo("features");
        var labelStream = train.StreamInfo("labels");
        var learner = Learner.SGDLearner(z.Parameters(), new TrainingParameterScheduleDouble(0.003125, 1));
        // Progress in CNTK's log format every 100 minibatches (ctk's overload of CreateTrainer).
        var trainer = Trainer.CreateTrainer(z, loss, error, new List<Learner> { learner }, 100);

        const uint minibatchSize = 64;
        ulong seen = 0;
        for (int epoch = 1; epoch <= epochs; ++epoch)
        {
            ulong target = (ulong)epoch * epochSize;
            while (seen < target)
            {
                var mb = train.GetNextMinibatch((uint)Math.Min(minibatchSize, target - seen), device);
                trainer.TrainMinibatch(new Dictionary<Variable, MinibatchData> { { features, mb[featureStream] }, { labels, mb[labelStream] } }, device);
                seen += trainer.PreviousMinibatchSampleCount();
            }
            trainer.SummarizeTrainingProgress();
        }
        z.Save(modelPath);

        // The saved model, loaded back, scored on the whole test file.
        Function model = Function.Load(modelPath, device);
        Variable input = model.Arguments.Single(a => a.Name == "features");
        Variable output = model.Outputs.Single(o => o.Name == "classifierOutput");
        var test = MinibatchSource.TextFormatMinibatchSource(Path.Combine(data, "Test-28x28_cntk_text.txt"), streams, MinibatchSource.FullDataSweep, false);
        int total = 0, wrong = 0;
        while (true)
        {
            var mb = test.GetNextMinibatch(1000, device);
            if (mb.Count == 0) break;
            var outputs = new Dictionary<Variable, Value> { { output, null } };
            model.Evaluate(new Dictionary<Variable, Value> { { input, mb[test.StreamInfo("features")].data } }, outputs, device);
            var scores = outputs[output].GetDenseData<float>(output);
            var expected = mb[test.StreamInfo("labels")].data.GetDenseData<float>(labels);
            wrong += scores.Zip(expected, (s, l) => s.IndexOf(s.Max()) == l.IndexOf(1f) ? 0 : 1).Sum();
            total += scores.Count;
        }
        Console.WriteLine("Saved {0}; test error: {1:F2}% of {2} images", modelPath, 100.0 * wrong / total, total);
        return 0;
    }
}
