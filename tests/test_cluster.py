"""Sweeps on a real SLURM cluster (marker ``cluster``; ``make test-cluster``).

``make test-cluster`` brings up a one-node SLURM cluster on this machine with
``.ci/slurm.sh up`` (Debian's slurmctld, slurmd and munge; root and apt needed), runs this
module with ``UQX_CLUSTER=1`` and ``SLURM_CONF`` set, then stops the daemons. Everything
else skips these tests, saying why. What runs here is what the README's SLURM section
shows a user:

* ``dask_jobqueue.SLURMCluster`` scaled to two jobs (``sbatch``'d ``dask worker``) runs a
  reduced App. B sweep whose archive is identical to the local threaded run;
* ``dask scheduler`` plus worker jobs submitted with ``sbatch --array`` run the same sweep
  through ``uqx sweep --scheduler ADDRESS``, identical again;
* a longer run loses one worker job to ``scancel`` (the other finishes its tasks), then
  the rest; the stopped run is completed with ``--resume`` on new worker jobs, and the
  archive is identical to an uninterrupted local run.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from uqx.dataio.netcdf import read_netcdf
from uqx.sweeps import appendix_b, compare
from uqx.sweeps.engine import run_dir_for

pytestmark = pytest.mark.cluster

BIN = Path(sys.executable).parent
SMALL = dict(M=[2000, 4000], N=[10, 20, 40], nu=[3, 6], n_mc=400, seed=8)
# ~10 s on two single-core workers: long enough to cancel worker jobs mid-run
LONG = dict(M=[4000, 16000], N=[10, 40], nu=[3, 4, 6], n_mc=3000, seed=9)
TIMEOUT = 300


def _grid(opts):
    """Command-line options of an appendix-b grid."""
    args = []
    for key in ("M", "N", "nu"):
        args += [f"--{key}", ",".join(str(v) for v in opts[key])]
    return args + ["--n-mc", str(opts["n_mc"]), "--seed", str(opts["seed"])]


def _n_blocks(opts):
    return len(opts["M"]) * len(opts["nu"]) * -(-opts["n_mc"] // 100)


def _identical(a, b):
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


def _slurm(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and p.returncode:
        raise AssertionError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p.stdout.strip()


def _jobs(job_id):
    """States of the (array) job's tasks still known to squeue, {task id: state}."""
    out = _slurm("squeue", "-h", "-j", job_id, "-o", "%i %T", check=False)
    return dict(line.split() for line in out.splitlines() if line.strip())


@pytest.fixture(scope="module")
def slurm():
    """The one-node cluster of ``.ci/slurm.sh``; skips (with the reason) where none is up."""
    reason = os.environ.get("UQX_CLUSTER_SKIP")
    if reason:
        pytest.skip(f"no SLURM cluster: {reason}")
    if os.environ.get("UQX_CLUSTER") != "1":
        pytest.skip("cluster tests run from `make test-cluster`, which brings up a one-node "
                    "SLURM cluster with .ci/slurm.sh (needs root and apt)")
    for exe in ("sinfo", "sbatch", "squeue", "scancel"):
        if shutil.which(exe) is None:
            pytest.fail(f"UQX_CLUSTER=1 but {exe} is not on PATH")
    state = _slurm("sinfo", "-h", "-N", "-o", "%T").split()
    assert state and state[0] in ("idle", "mixed"), f"SLURM node not idle: {state}"
    return state


@pytest.fixture(scope="module")
def local_small(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "small.nc"
    appendix_b(**SMALL, output=out, scheduler="threads")
    return out


def test_slurmcluster_jobs_run_the_sweep_identically(slurm, local_small, tmp_path):
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    t0 = time.time()
    with SLURMCluster(queue="debug", cores=1, processes=1, memory="2GB", walltime="00:10:00",
                      python=sys.executable, interface="lo",
                      log_directory=str(tmp_path / "logs")) as cluster:
        assert "#SBATCH -p debug" in cluster.job_script()
        cluster.scale(jobs=2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            t_up = time.time() - t0
            # each worker is a process of its own SLURM job
            job_ids = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
            assert len(job_ids) == 2 and len(set(job_ids.values())) == 2
            assert None not in job_ids.values()
            for job in job_ids.values():
                assert set(_jobs(job).values()) == {"RUNNING"}
            got = appendix_b(**SMALL, scheduler=client, output=tmp_path / "slurm.nc")
    print(f"SLURMCluster: 2 workers up in {t_up:.1f} s, {time.time() - t0:.1f} s in all")
    _identical(got, read_netcdf(local_small))
    assert compare(tmp_path / "slurm.nc", local_small).identical


class _Scheduler:
    """``dask scheduler --scheduler-file F`` (a subprocess) and its worker jobs."""

    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.file = tmp_path / "sched.json"
        self.jobs = []
        self.log = open(tmp_path / "scheduler.log", "w")  # noqa: SIM115 - closed in stop
        self.proc = subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--scheduler-file", str(self.file),
             "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
            stdout=self.log, stderr=subprocess.STDOUT)
        t0 = time.time()
        while not self.file.is_file() and time.time() - t0 < 60:
            assert self.proc.poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.2)
        self.address = json.loads(self.file.read_text())["address"]

    def submit_workers(self, n=2):
        """``sbatch --array`` of n single-core ``dask worker`` jobs; waits for them."""
        job = _slurm("sbatch", "--parsable", f"--array=1-{n}", "--cpus-per-task=1",
                     "--mem=2G", "--time=00:10:00", "--job-name=uqx-dask-worker",
                     f"--output={self.dir}/worker-%A_%a.out", "--wrap",
                     f"{BIN / 'dask'} worker --scheduler-file {self.file} "
                     "--nworkers 1 --nthreads 1")
        self.jobs.append(job)
        self.wait_workers(n)
        return job

    def wait_workers(self, n):
        from distributed import Client

        with Client(self.address, timeout="20s") as client:
            client.wait_for_workers(n, timeout=120)

    def stop(self):
        for job in self.jobs:
            _slurm("scancel", job, check=False)
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def scheduler(slurm, tmp_path):
    s = _Scheduler(tmp_path)
    try:
        yield s
    finally:
        s.stop()


def _uqx(*args):
    p = subprocess.run([str(BIN / "uqx"), "-q", *map(str, args)], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _wait_blocks(run_dir, n, proc, timeout=TIMEOUT):
    """Wait until the run directory holds at least n blocks; return how many it holds."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        got = len(list(run_dir.glob("*.npz"))) if run_dir.is_dir() else 0
        if got >= n:
            return got
        assert proc.poll() is None, "the sweep ended before its worker jobs were cancelled"
        time.sleep(0.1)
    raise AssertionError(f"{run_dir}: fewer than {n} blocks after {timeout} s")


def test_cli_sweep_on_sbatch_workers_scancel_and_resume(scheduler, local_small, tmp_path):
    t0 = time.time()
    job = scheduler.submit_workers(2)
    print(f"sbatch workers up in {time.time() - t0:.1f} s")
    # 1. the command line on SLURM workers = the local run
    out = tmp_path / "cli.nc"
    _uqx("sweep", "appendix-b", *_grid(SMALL), "--scheduler", scheduler.address, "-o", out)
    assert compare(out, local_small).identical
    _identical(read_netcdf(out), read_netcdf(local_small))

    # 2. a longer run: cancel one worker job, then the other, then stop the client
    out = tmp_path / "long.nc"
    run_dir, total = run_dir_for(out), _n_blocks(LONG)
    cmd = [str(BIN / "uqx"), "-q", "sweep", "appendix-b", *_grid(LONG),
           "--scheduler", scheduler.address, "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        n1 = _wait_blocks(run_dir, total // 8, proc)
        _slurm("scancel", f"{job}_1")
        t_cancel = time.time()
        while _jobs(f"{job}_1") and time.time() - t_cancel < 60:
            time.sleep(0.2)
        assert not _jobs(f"{job}_1"), "scancel did not end worker job 1"
        # the remaining worker job goes on with the tasks of the lost one
        n2 = _wait_blocks(run_dir, n1 + 10, proc)
        _slurm("scancel", job)
        while _jobs(job) and time.time() - t_cancel < 120:
            time.sleep(0.2)
        assert not _jobs(job), "scancel did not end the worker jobs"
        time.sleep(1.0)
        n3 = len(list(run_dir.glob("*.npz")))
        assert proc.poll() is None, "the sweep ended without workers"
    finally:
        proc.send_signal(signal.SIGTERM)  # the user's job is stopped too
        proc.wait(timeout=60)
    print(f"blocks saved: {n1} at the first scancel, {n2} after it, {n3} of {total} at the end")
    assert n1 < n2 <= n3 < total
    assert not out.exists()  # no half-written archive

    # 3. new worker jobs, --resume: the archive of an uninterrupted local run
    scheduler.submit_workers(2)
    t0 = time.time()
    _uqx("sweep", "appendix-b", *_grid(LONG), "--scheduler", scheduler.address, "-o", out,
         "--resume")
    print(f"resume on new worker jobs: {time.time() - t0:.1f} s")
    assert out.exists() and not run_dir.exists()
    ref = tmp_path / "long_local.nc"
    appendix_b(**LONG, output=ref, scheduler="threads")
    assert compare(out, ref).identical
    _identical(read_netcdf(out), read_netcdf(ref))
