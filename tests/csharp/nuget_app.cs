// A fresh C# program that knows ctk only through its NuGet package: it trains a two-class linear model
// on points drawn here, evaluates it, and says how many of 200 test points it got wrong.
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK;

static class NugetApp
{
    static void Points(Random random, int n, out float[] features, out float[] labels)
    {
        features = new float[2 * n];
        labels = new float[2 * n];
        for (int i = 0; i < n; ++i)
        {
            int c = random.Next(2);
            features[2 * i] = (float)(random.NextDouble() + 2 * c);
            features[2 * i + 1] = (float)(random.NextDouble() - 2 * c);
            labels[2 * i + c] = 1;
        }
    }

    static int Main()
    {
        var cpu = DeviceDescriptor.CPUDevice;
        CNTKLib.ResetRandomSeed(3);
        var x = Variable.InputVariable(new[] { 2 }, DataType.Float, "x");
        var y = Variable.InputVariable(new[] { 2 }, DataType.Float, "y");
        var w = new Parameter(new[] { 2, 2 }, DataType.Float, CNTKLib.GlorotUniformInitializer(), cpu, "w");
        var b = new Parameter(new[] { 2 }, DataType.Float, 0.0, cpu, "b");
        Function z = CNTKLib.Times(w, x) + b;
        var loss = CNTKLib.CrossEntropyWithSoftmax(z, y);
        var error = CNTKLib.ClassificationError(z, y);
        var trainer = Trainer.CreateTrainer(z, loss, error,
            new List<Learner> { Learner.SGDLearner(z.Parameters(), new TrainingParameterScheduleDouble(0.05, 1)) });
        var random = new Random(1);
        for (int step = 0; step < 100; ++step)
        {
            float[] f, l;
            Points(random, 32, out f, out l);
            trainer.TrainMinibatch(new Dictionary<Variable, Value> {
                { x, Value.CreateBatch(new[] { 2 }, f, cpu) }, { y, Value.CreateBatch(new[] { 2 }, l, cpu) } }, false, cpu);
        }
        float[] tf, tl;
        Points(random, 200, out tf, out tl);
        var outputs = new Dictionary<Variable, Value> { { z.Output, null } };
        z.Evaluate(new Dictionary<Variable, Value> { { x, Value.CreateBatch(new[] { 2 }, tf, cpu) } }, outputs, cpu);
        var scores = outputs[z.Output].GetDenseData<float>(z.Output);
        int wrong = scores.Select((s, i) => s.IndexOf(s.Max()) == (tl[2 * i + 1] == 1 ? 1 : 0) ? 0 : 1).Sum();
        Console.WriteLine("nuget_app: {0} of 200 test points misclassified", wrong);
        return wrong <= 10 ? 0 : 1;
    }
}
