#!/usr/bin/env python3
"""All-reduce benchmark driver: typeflow vs Gloo vs Open MPI vs a plain TCP ring.

Runs every implementation for each process count in the same session, ROUNDS
times interleaved, keeps the best p50 per (impl, np, size) (the machine may be
shared), and prints per size and peer:

  <workload> typeflow=<us> <peer>=<us> ratio=<peer/typeflow> busbw_typeflow=<GB/s> busbw_<peer>=<GB/s> p99_...

then, per process count, the machine's tail floor at the smallest size (a
FLOOR line from bench_dist_floor; at 2 processes also FLOOR_TCP, a bare TCP
exchange of that size; see bench_floor.cpp).

usage: run_allreduce_bench.py BUILD_DIR [--np 2,4] [--min 4096] [--max 67108864] [--rounds 2] [--bind] [--out FILE]

--bind runs every task on cores of its own, its share of the machine's
(typeflow-launch --bind-cores; mpirun --bind-to core --map-by slot:PE=share),
for machines with at least as many cores as tasks.
"""
import argparse, os, re, shutil, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--np", default="2,4")
ap.add_argument("--min", type=int, default=4096)
ap.add_argument("--max", type=int, default=64 << 20)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--bind", action="store_true")
ap.add_argument("--out")
a = ap.parse_args()
b = os.path.abspath(a.build)
launch = os.path.join(b, "typeflow-launch")

def cmd(impl, n):
    sz = [str(a.min), str(a.max)]
    launcher = [launch, "-n", str(n), "--timeout", "600"] + (["--bind-cores"] if a.bind else [])
    if impl == "typeflow":
        return launcher + [os.path.join(b, "bench_dist_typeflow")] + sz
    if impl == "tcpring":
        return launcher + [os.path.join(b, "bench_dist_tcp_ring")] + sz
    if impl == "gloo":
        store = tempfile.mkdtemp(prefix="gloo-store-")
        return launcher + [os.path.join(b, "bench_dist_gloo"), store] + sz
    if impl == "openmpi":
        share = max(1, len(os.sched_getaffinity(0)) // n)
        bind = ["--use-hwthread-cpus", "--bind-to", "core", "--map-by", f"slot:PE={share}"] if a.bind else ["--oversubscribe", "--bind-to", "none"]
        return ["mpirun", "--allow-run-as-root", "-np", str(n)] + bind + [
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo",
                os.path.join(b, "bench_dist_mpi")] + sz
    raise ValueError(impl)

impls = [i for i in ["typeflow", "gloo", "openmpi", "tcpring"]
         if i in ("typeflow", "tcpring") or os.path.exists(os.path.join(b, "bench_dist_" + ("mpi" if i == "openmpi" else i)))]
best = {}
pat = re.compile(r"RESULT impl=(\S+) np=(\d+) bytes=(\d+) p50_us=(\S+) p99_us=(\S+) algbw_GBps=(\S+) busbw_GBps=(\S+)")
for rnd in range(a.rounds):
    for n in [int(x) for x in a.np.split(",")]:
        for impl in impls:
            c = cmd(impl, n)
            print("#", " ".join(c), file=sys.stderr, flush=True)
            p = subprocess.run(c, capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)
                if impl == "typeflow":
                    sys.exit(f"{impl} np={n} failed with {p.returncode}")
                # A peer that fails (Gloo at 4 processes aborts now and then)
                # loses this round only; its sizes that finished still count.
                print(f"# WARNING: {impl} np={n} round {rnd + 1} failed with {p.returncode}", file=sys.stderr, flush=True)
            for m in pat.finditer(p.stdout):
                k = (m[1], int(m[2]), int(m[3]))
                v = dict(p50=float(m[4]), p99=float(m[5]), busbw=float(m[7]))
                if k not in best or v["p50"] < best[k]["p50"]:
                    best[k] = v

lines = []
for n in [int(x) for x in a.np.split(",")]:
    size = a.min
    while size <= a.max:
        t = best.get(("typeflow", n, size))
        for peer in impls[1:]:
            q = best.get((peer, n, size))
            if not t or not q:
                continue
            lines.append(f"allreduce_f32_sum_np{n}_{size}B typeflow={t['p50']:.1f} {peer}={q['p50']:.1f} "
                         f"ratio={q['p50'] / t['p50']:.2f} busbw_typeflow={t['busbw']:.3f} busbw_{peer}={q['busbw']:.3f} "
                         f"p99_typeflow={t['p99']:.1f} p99_{peer}={q['p99']:.1f}")
        size *= 4
# The machine's floor for the smallest size's tail: the same number of
# processes time busy windows as long as typeflow's p50 (bench_floor.cpp);
# p99/p50 of the slowest task's window is what a collective with no overhead
# of its own would measure on this machine.
floor = os.path.join(b, "bench_dist_floor")
if os.path.exists(floor):
    for n in [int(x) for x in a.np.split(",")]:
        t = best.get(("typeflow", n, a.min))
        if t and n > (os.cpu_count() or 1):
            # More tasks than CPUs: the windows are time-sliced, and the
            # figure would be the scheduler's quantum, not a floor.
            lines.append(f"FLOOR tasks={n} skipped: more tasks than the machine's {os.cpu_count()} CPUs")
        elif t:
            p = subprocess.run([floor, f"{t['p50']:.1f}", str(n), "20000", str(a.min if n == 2 else 0)],
                               capture_output=True, text=True)
            lines += [l for l in p.stdout.splitlines() if l.startswith("FLOOR")]
            if p.returncode != 0:
                print(f"# WARNING: bench_dist_floor failed with {p.returncode}", file=sys.stderr, flush=True)
print("\n".join(lines))
if a.out:
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
