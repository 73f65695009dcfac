"""One step of the AI-in-the-loop workflow: a model learning online.

Each iteration the model predicts a value, the "simulation" gives the
actual one, and the step reports both and the error through pano (the
Python package, to pano-monitor's metrics socket), then learns from it.
Half-way, the step reads its own CPU time back from pano, as a workflow
that reacts to its own figures would (here: it says whether it stays
within its CPU budget and trims its remaining iterations if not).

    python3 step.py --iterations N [--budget SECONDS]
"""

import argparse
import math
import os
import random
import time

import pano


def simulation(x):
    """The process the model learns: a slow sine, with noise."""
    return 2.0 * math.sin(x / 10.0) + 0.5 + random.gauss(0, 0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--budget", type=float, default=60.0, help="CPU seconds the step may use")
    args = p.parse_args()
    wf, me = os.environ["PEGASUS_WF_UUID"], os.environ["PEGASUS_DAG_JOB_ID"]
    random.seed(me)
    # features: sin and cos of the input; weights learnt by stochastic gradient descent
    w = [0.0, 0.0, 0.0]
    rate = 0.05
    n = args.iterations
    i = 0
    while i < n:
        x = i + random.random()
        feats = [1.0, math.sin(x / 10.0), math.cos(x / 10.0)]
        predicted = sum(a * b for a, b in zip(w, feats))
        actual = simulation(x)
        error = predicted - actual
        pano.metric("predicted", predicted, step=i)
        pano.metric("actual", actual, step=i)
        pano.metric("error", abs(error), step=i)
        w = [a - rate * error * b for a, b in zip(w, feats)]
        for _ in range(2000):  # the model's work between two observations
            math.sqrt(random.random())
        i += 1
        if i == n // 2:
            time.sleep(1.2)  # pano-monitor samples the step meanwhile
            mine = pano.job(wf, me)
            cpu = mine.get("cpu_time") or 0.0
            print(f"{me}: half-way, pano reads {cpu:.2f} s of CPU for me "
                  f"({mine['samples']} samples); budget {args.budget:.0f} s", flush=True)
            if cpu * 2 > args.budget:
                n = i + max(1, int((args.budget - cpu) / max(cpu / i, 1e-9)))
                print(f"{me}: over budget at this pace, {n - i} iterations left", flush=True)
    print(f"{me}: {i} iterations, last |error| {abs(error):.3f}, weights "
          f"{', '.join(f'{a:.2f}' for a in w)}", flush=True)


if __name__ == "__main__":
    main()
