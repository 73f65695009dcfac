"""An AI-in-the-loop workflow on pano, after Dragon Telemetry's demo.

Runs STEPS steps one after another, each under pano-monitor (its process
tree sampled, its metrics sent through the monitor's socket), each a model
that learns online and reports its prediction, the actual value and the
error every iteration (step.py). Events go wherever pano is configured to
send them: the broker (pano.amqp.url), else the embedded store. At the end
it reads the workflow back through pano and prints where to look.

    python3 workflow.py [--steps 3] [--iterations 200] [--monitor PATH]

Needs pano-monitor (on PATH, or --monitor) and the pano package (pip
install ./python, or PYTHONPATH=python).
"""

import argparse
import os
import shutil
import subprocess
import sys
import uuid

import pano


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--monitor", default=shutil.which("pano-monitor"))
    args = p.parse_args()
    if not args.monitor:
        sys.exit("workflow.py: no pano-monitor on PATH (give --monitor)")
    wf = os.environ.get("PEGASUS_WF_UUID") or str(uuid.uuid4())
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PEGASUS_WF_UUID=wf, PEGASUS_WF_LABEL="ai-in-the-loop",
               PEGASUS_XFORMATION="learn")
    for k in range(1, args.steps + 1):
        env["PEGASUS_DAG_JOB_ID"] = f"learn_ID{k:02d}"
        subprocess.run([args.monitor, "-i", "0.5", "--", sys.executable, os.path.join(here, "step.py"),
                        "--iterations", str(args.iterations)], env=env, check=True)
    status = pano.status(wf)
    print(f"workflow {wf}: {status['jobs']['succeeded']} of {status['jobs']['total']} steps succeeded")
    for job in pano.jobs(wf):
        print(f"  {job['id']}: {job['duration']:.1f} s, {job['cpu_time']:.2f} s of CPU")
    print(f"pano-query job {wf} learn_ID01     # the step, its metrics among its events")
    print(f"pano-explorer, then http://127.0.0.1:8095/#/wf/{wf}/job/learn_ID01")


if __name__ == "__main__":
    main()
