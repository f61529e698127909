// Evaluation cost per call from C# (bench/csharp_overhead.py compares it with bench/eval_overhead.cpp):
// the same model, batch and data, a Value made from a float[] every call as CNTK's C# examples do.
// Usage: mono eval_overhead.exe --model PATH --batch N --min-time SECONDS [--threads N] [--borrow 1]
using System;
using System.Collections.Generic;
using System.Diagnostics;
using CNTK;

static class EvalOverhead
{
    static int Main(string[] args)
    {
        string model = null;
        int batch = 1, threads = 1;
        double minTime = 2;
        bool borrow = false;
        for (int i = 0; i + 1 < args.Length; i += 2)
        {
            if (args[i] == "--model") model = args[i + 1];
            else if (args[i] == "--batch") batch = int.Parse(args[i + 1]);
            else if (args[i] == "--min-time") minTime = double.Parse(args[i + 1]);
            else if (args[i] == "--threads") threads = int.Parse(args[i + 1]);
            else if (args[i] == "--borrow") borrow = args[i + 1] == "1";
        }
        Utils.SetMaxNumCPUThreads(threads);
        var cpu = DeviceDescriptor.CPUDevice;
        Function f = Function.Load(model, cpu);
        Variable x = f.Arguments[0];
        Variable z = f.Output;
        var shape = x.Shape;
        float[] data = new float[batch * 784];
        for (int i = 0; i < data.Length; ++i) data[i] = i % 255;
        Action call = () =>
        {
            using (Value input = Value.CreateBatch(shape, data, cpu, borrow))
            {
                var outputs = new Dictionary<Variable, Value> { { z, null } };
                f.Evaluate(new Dictionary<Variable, Value> { { x, input } }, outputs, cpu);
                outputs[z].Dispose();
            }
        };
        for (int i = 0; i < 20; ++i) call();
        long calls = 0;
        var watch = Stopwatch.StartNew();
        while (watch.Elapsed.TotalSeconds < minTime)
        {
            for (int i = 0; i < 50; ++i) call();
            calls += 50;
        }
        Console.WriteLine("{{\"us_per_call\": {0:F3}, \"calls\": {1}}}", 1e6 * watch.Elapsed.TotalSeconds / calls, calls);
        return 0;
    }
}
