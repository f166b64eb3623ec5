#!/usr/bin/env python3
"""cuba_brian2.py -- the CUBA network (Vogels & Abbott 2005, as in Brian2's
examples) built and run with Brian2, written out for `trevo net bench --cuba`.

The network: 4000 leaky integrate-and-fire neurons with current-based
synapses, 3200 excitatory and 800 inhibitory, each pair connected with
probability 0.02, dt 0.1 ms, exact integration. Connectivity and initial
potentials are drawn here with numpy from --seed and handed to Brian2, so that
they can be written out before the run whatever the target.

Output (--out): a text file, every number in SI units (volts, seconds), every
float printed with 17 significant digits:
    cuba-brian2 1
    target NAME
    n N n_exc NE
    dt DT steps STEPS
    tau_m T tau_exc T tau_inh T
    threshold V reset V rest V refractory_steps R
    w_exc W w_inh W
    v0 N            then N lines: the initial potential of each neuron
    conns C         then C lines "i j", sorted by i (i < NE: excitatory)
    spikes S        then S lines "step i" in the order Brian2 recorded them
    run_seconds X      the simulation loop's wall time as Brian2 measured it
                       (numpy, cython: the sum of its profile)
    run_cpu_seconds X  the simulation loop's CPU time (cpp_standalone: measured
                       in the generated program around the run; numpy, cython:
                       the process's CPU time over net.run, code generation
                       included)
    wall_seconds X     the whole run (code generation and compilation included)

Usage: cuba_brian2.py --out FILE [--seconds S] [--seed N]
                      [--target numpy|cython|cpp_standalone]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np


def build_and_run(args):
    import brian2 as b2

    ms, mV, second = b2.ms, b2.mV, b2.second
    workdir = tempfile.mkdtemp(prefix="cuba_")
    if args.target == "cpp_standalone":
        b2.set_device("cpp_standalone", build_on_run=False)
        b2.prefs.devices.cpp_standalone.openmp_threads = 0
    else:
        b2.prefs.codegen.target = args.target
    dt = 0.1 * ms
    b2.defaultclock.dt = dt
    n, n_exc = 4000, 3200
    taum, taue, taui = 20 * ms, 5 * ms, 10 * ms
    vt, vr, el = -50 * mV, -60 * mV, -49 * mV
    we = (60 * 0.27 / 10) * mV
    wi = (-20 * 4.5 / 10) * mV
    rng = np.random.RandomState(args.seed)
    v0 = float(vr) + rng.rand(n) * (float(vt) - float(vr))
    src, dst = [], []
    for i in range(n):
        js = np.nonzero(rng.rand(n) < 0.02)[0]
        src.append(np.full(len(js), i, dtype=np.int64))
        dst.append(js)
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    eqs = """
    dv/dt  = (ge + gi - (v - el)) / taum : volt (unless refractory)
    dge/dt = -ge / taue : volt
    dgi/dt = -gi / taui : volt
    """
    ns = dict(taum=taum, taue=taue, taui=taui, vt=vt, vr=vr, el=el, we=we, wi=wi)
    group = b2.NeuronGroup(n, eqs, threshold="v > vt", reset="v = vr", refractory=5 * ms,
                           method="exact", namespace=ns)
    group.v = v0 * b2.volt
    group.ge = 0 * mV
    group.gi = 0 * mV
    exc = src < n_exc
    ce = b2.Synapses(group, group, on_pre="ge += we", namespace=ns)
    ce.connect(i=src[exc], j=dst[exc])
    ci = b2.Synapses(group, group, on_pre="gi += wi", namespace=ns)
    ci.connect(i=src[~exc], j=dst[~exc])
    mon = b2.SpikeMonitor(group)
    net = b2.Network(group, ce, ci, mon)
    t0 = time.perf_counter()
    cpu_file = os.path.join(workdir, "run_cpu_seconds")
    run_cpu = float("nan")
    if args.target == "cpp_standalone":
        # the simulation loop's CPU time, measured inside the generated program
        b2.device.insert_code("main", "struct timespec trevo_c0;"
                              " clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &trevo_c0);")
        net.run(args.seconds * second)
        b2.device.insert_code("main", "struct timespec trevo_c1;"
                              " clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &trevo_c1);"
                              " FILE *trevo_f = fopen(\"%s\", \"w\");"
                              " fprintf(trevo_f, \"%%.9f\\n\", (double)(trevo_c1.tv_sec -"
                              " trevo_c0.tv_sec) + 1e-9 * (double)(trevo_c1.tv_nsec -"
                              " trevo_c0.tv_nsec)); fclose(trevo_f);" % cpu_file)
        b2.device.build(directory=os.path.join(workdir, "standalone"))
        run_seconds = float(b2.device._last_run_time)
        with open(cpu_file) as f:
            run_cpu = float(f.read())
    else:
        c0 = time.process_time()
        net.run(args.seconds * second, profile=True)
        run_seconds = sum(float(t) for _, t in net.profiling_info)
        run_cpu = time.process_time() - c0  # code generation included
    wall = time.perf_counter() - t0
    steps = int(round(args.seconds / float(dt)))
    spike_steps = np.rint(np.asarray(mon.t / second) / float(dt)).astype(np.int64)
    spike_idx = np.asarray(mon.i, dtype=np.int64)
    return dict(n=n, n_exc=n_exc, dt=float(dt), steps=steps, taum=float(taum),
                taue=float(taue), taui=float(taui), vt=float(vt), vr=float(vr), el=float(el),
                ref_steps=int(round(float(5 * ms) / float(dt))), we=float(we), wi=float(wi),
                v0=v0, src=src, dst=dst, spike_steps=spike_steps, spike_idx=spike_idx,
                run_seconds=run_seconds, run_cpu=run_cpu, wall=wall)


def write(path, target, r):
    f17 = "%.17g"
    with open(path + ".tmp", "w") as f:
        f.write("cuba-brian2 1\ntarget %s\n" % target)
        f.write("n %d n_exc %d\n" % (r["n"], r["n_exc"]))
        f.write(("dt " + f17 + " steps %d\n") % (r["dt"], r["steps"]))
        f.write(("tau_m " + f17 + " tau_exc " + f17 + " tau_inh " + f17 + "\n")
                % (r["taum"], r["taue"], r["taui"]))
        f.write(("threshold " + f17 + " reset " + f17 + " rest " + f17 +
                 " refractory_steps %d\n") % (r["vt"], r["vr"], r["el"], r["ref_steps"]))
        f.write(("w_exc " + f17 + " w_inh " + f17 + "\n") % (r["we"], r["wi"]))
        f.write("v0 %d\n" % len(r["v0"]))
        f.write("".join((f17 + "\n") % v for v in r["v0"]))
        f.write("conns %d\n" % len(r["src"]))
        f.write("".join("%d %d\n" % (i, j) for i, j in zip(r["src"], r["dst"])))
        f.write("spikes %d\n" % len(r["spike_idx"]))
        f.write("".join("%d %d\n" % (s, i) for s, i in zip(r["spike_steps"], r["spike_idx"])))
        f.write(("run_seconds " + f17 + "\nrun_cpu_seconds " + f17 + "\nwall_seconds " + f17 +
                 "\n") % (r["run_seconds"], r["run_cpu"], r["wall"]))
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target", default="cython",
                    choices=["numpy", "cython", "cpp_standalone"])
    args = ap.parse_args()
    try:
        import brian2  # noqa: F401
    except ImportError:
        sys.stderr.write("cuba_brian2.py: brian2 is not installed (Debian: python3-brian)\n")
        return 3
    r = build_and_run(args)
    write(args.out, args.target, r)
    sys.stderr.write("cuba_brian2.py: %s, %d spikes, run %.3f s (wall %.1f s)\n"
                     % (args.target, len(r["spike_idx"]), r["run_seconds"], r["wall"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
