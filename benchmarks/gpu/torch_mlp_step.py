"""PyTorch peer benchmark: one training step of an MLP 784-256-128-10 (or of the lectures' CNN) on a GPU.

Measures a full SGD training step (zero_grad(set_to_none=True), forward
Linear+ReLU, Linear+ReLU, Linear, mean softmax cross-entropy, backward,
torch.optim.SGD lr=0.01 step) in true float32 (TF32 off); with --model cnn,
the lectures' CNN in NHWC (channels_last): Conv2d(1, 32, 3)+ReLU,
MaxPool2d(2), Flatten, Linear(5408, 64)+ReLU, Linear(64, 10), mean softmax
cross-entropy, torch.optim.Adam lr=1e-3 (bench_gpu's cnn_step_gpu). Three variants:
  eager       plain PyTorch
  compile     torch.compile(step_fn), default mode
  compile_ro  torch.compile(step_fn, mode="reduce-overhead") (CUDA graphs)
Inputs: 4 pre-generated random batches (fixed seed), rotated each step.
Time: after warm-up, 5 repeats of 200 steps timed with torch.cuda.Event;
the median per-step time in microseconds is reported. "launches" is the number
of CUDA-side profiler events (kernels, memcpy, memset) per step over 10
profiled steps (for compile_ro that counts the kernels replayed by the graph).

    python3 benchmarks/gpu/torch_mlp_step.py [--model mlp|cnn] [--batches 256,4096] [--variants eager,compile,compile_ro]

Prints per (variant, batch) `torch_mlp_step variant=<v> batch=<B> us=<median> launches=<n>`
(`torch_cnn_step ...` with --model cnn)
(or `... error=<msg>`); exits 0 with a "skipped" line when there is no CUDA device.
"""
import argparse
import statistics
import sys

N_STEPS, REPEATS, N_BATCHES, PROF_STEPS = 200, 5, 4, 10


def build(torch, variant, batch, kind="mlp"):
    torch.manual_seed(0)
    nn = torch.nn
    if kind == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(5408, 64),
                              nn.ReLU(), nn.Linear(64, 10)).cuda().to(memory_format=torch.channels_last)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        xs = [torch.rand(batch, 1, 28, 28, device="cuda").to(memory_format=torch.channels_last)
              for _ in range(N_BATCHES)]
    else:
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        xs = [torch.randn(batch, 784, device="cuda") for _ in range(N_BATCHES)]
    ys = [torch.randint(0, 10, (batch,), device="cuda") for _ in range(N_BATCHES)]

    def step_fn(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    if variant == "eager":
        fn = step_fn
    elif variant == "compile":
        fn = torch.compile(step_fn)
    elif variant == "compile_ro":
        compiled = torch.compile(step_fn, mode="reduce-overhead")

        def fn(x, y):
            torch.compiler.cudagraph_mark_step_begin()
            compiled(x, y)
    else:
        raise ValueError(f"unknown variant {variant}")
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % N_BATCHES
        fn(xs[i], ys[i])
    return step


def time_us(torch, step):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPEATS):
        torch.cuda.synchronize()
        start.record()
        for _ in range(N_STEPS):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / N_STEPS)
    return statistics.median(times)


def count_launches(torch, step):
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(PROF_STEPS):
                step()
            torch.cuda.synchronize()
        cuda = torch.autograd.DeviceType.CUDA
        n = sum(1 for e in prof.events() if e.device_type == cuda)
        return f"{n / PROF_STEPS:g}"
    except Exception:  # profiler trouble must not sink the timing
        return "nan"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--batches", default=None, help="default: 256,4096 (mlp), 64 (cnn)")
    ap.add_argument("--variants", default="eager,compile,compile_ro")
    args = ap.parse_args()
    name = f"torch_{args.model}_step"
    batches = args.batches or ("64" if args.model == "cnn" else "256,4096")
    try:
        import torch
    except ImportError:
        print(f"{name} skipped: torch not installed", flush=True)
        return 0
    if not torch.cuda.is_available():
        print(f"{name} skipped: no CUDA device", flush=True)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"{name} torch={torch.__version__} cuda={torch.version.cuda} "
          f"device={torch.cuda.get_device_name().replace(' ', '_')} "
          f"matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32} "
          f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}", flush=True)
    for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
        for batch in [int(b) for b in batches.split(",") if b.strip()]:
            tag = f"{name} variant={variant} batch={batch}"
            try:
                torch._dynamo.reset()
                step = build(torch, variant, batch, args.model)
                for _ in range(20 if variant == "eager" else 30):
                    step()
                torch.cuda.synchronize()
                us = time_us(torch, step)
                print(f"{tag} us={us:.1f} launches={count_launches(torch, step)}", flush=True)
            except Exception as e:
                msg = " ".join(f"{type(e).__name__}: {e}".split())[:300]
                print(f"{tag} error={msg}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
