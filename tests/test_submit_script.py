"""The Slurm batch script and sbatch argv: what a task really receives.

The property test runs each rendered script under a real bash with a fake
SLURM_ARRAY_TASK_ID and checks the arguments the program sees.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.logheader import parse_ended, running_line
from backends.ranges import Window
from backends.submit.array import ArraySpec
from backends.submit.config import load_site
from backends.submit.model import SubmitOptions
from backends.submit.slurm.argv import sbatch_argv
from backends.submit.slurm.script import render_script

REPO = Path(__file__).resolve().parents[1]
DUMPER = """\
import json, os, sys
with open(os.environ["DUMP_TO"], "w", encoding="utf-8") as out:
    json.dump({"argv": sys.argv[1:], "env": os.environ.get("ODD_VALUE"),
               "job": os.environ.get("JOB")}, out)
sys.exit(int(os.environ["EXIT_WITH"]))
"""
SPECIAL = ["", "JOB", "$JOB", "${JOB}", "'", '"', "\\", "`id`", "$(id)", "\n", "--x", "-",
           "--", "-n", "~", "*", "?", "{a,b}", "[0]=x", "a=b", "FOO=bar", "!", "#", ";", "&&",
           "JOBJOB", "xJOB", "JOBx", "JO", "OB", "é漢字🙂", " ", "\t", "\r\n", "%q", "-e"]
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
WORD = st.text(CHARS, max_size=10)
ARG = st.one_of(
    WORD,
    st.sampled_from(SPECIAL),
    st.lists(st.one_of(WORD, st.sampled_from(SPECIAL)), min_size=2, max_size=4).map("JOB".join),
)


def _options(tmp: Path, command: tuple[str, ...], **changes) -> SubmitOptions:
    base = SubmitOptions(backend="slurm", cfg=str(REPO / "conf" / "submit_test_cluster.yaml"),
                         output_file=str(tmp / "log" / "JOB" / "task.JOB.log"), command=command,
                         array=ArraySpec("JOB", (1,)))
    return replace(base, **changes)


def _run(script: str, tmp: Path, env: dict[str, str]) -> int:
    path = tmp / "job.sh"
    path.write_text(script, encoding="utf-8")
    full = {**os.environ, **env}
    full.pop("JOB", None)
    return subprocess.run(["bash", str(path)], env=full, cwd=tmp, timeout=30).returncode


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.lists(ARG, max_size=8), task=st.integers(0, 1000),
       offset=st.sampled_from([0, 1001, 4004]), odd=st.one_of(WORD, st.sampled_from(SPECIAL)),
       exit_with=st.sampled_from([0, 1, 3]))
def test_rendered_script_passes_every_argument_verbatim(args, task, offset, odd, exit_with):
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "dump.py").write_text(DUMPER)
        dump = tmp / "argv.json"
        command = (sys.executable, str(tmp / "dump.py"), *args)
        options = _options(tmp, command, env=(("DUMP_TO", str(dump)), ("ODD_VALUE", odd),
                                              ("EXIT_WITH", str(exit_with))))
        rc = _run(render_script(options, offset), tmp, {"SLURM_ARRAY_TASK_ID": str(task)})

        value = str(task + offset)
        got = json.loads(dump.read_text(encoding="utf-8"))
        expected = [arg.replace("JOB", value) for arg in args]
        assert got == {"argv": expected, "env": odd, "job": value}
        assert rc == exit_with
        log = (tmp / "log" / value / f"task.{value}.log").read_bytes().decode("utf-8")
        assert log.startswith(running_line([sys.executable, str(tmp / "dump.py"), *expected]) + "\n")
        assert parse_ended(log.splitlines()[-1])[0] == exit_with


@pytest.mark.parametrize("name", ["JOB", "n", "x1b"])
def test_the_log_header_is_one_line_whatever_an_argument_holds(tmp_path, monkeypatch, name):
    """The header's command was shlex.join's: an argument holding a newline spanned two lines of the
    log. It is `running_line` (ANSI-C quoting) of the arguments the task ran, on one line, also for
    an array name whose letters the quoting writes (`n` of ``\\n``, `x1b` of ``\\x1b``)."""
    (tmp_path / "D").write_text(DUMPER)
    (tmp_path / "P").symlink_to(sys.executable)     # paths without the name's letters: it is substituted
    monkeypatch.chdir(tmp_path)
    args = ("a\nb", f"{name}\n{name}", "\x1b[31m", f"\t{name}'", "plain", f"x{name}y")
    options = _options(tmp_path, ("./P", "D", *args), array=ArraySpec(name, (7,)), output_file=f"t.{name}.log",
                       env=(("DUMP_TO", str(tmp_path / "argv.json")), ("EXIT_WITH", "0")))
    assert _run(render_script(options, 0), tmp_path, {"SLURM_ARRAY_TASK_ID": "7"}) == 0
    expected = [arg.replace(name, "7") for arg in args]
    assert json.loads((tmp_path / "argv.json").read_text())["argv"] == expected
    lines = (tmp_path / "t.7.log").read_text().splitlines()
    assert lines[0] == running_line(["./P", "D", *expected]), lines
    assert "\n" not in lines[0] and lines[1].startswith("# Started at ")


def test_array_name_like_the_scripts_own_variables_reaches_the_program(tmp_path):
    name = "hyperion_start"   # the log header's start-time variable before it got the _hyperion_ prefix
    show = "import os; print('value', os.environ['hyperion_' 'start'])"   # split: not substituted
    options = _options(tmp_path, (sys.executable, "-c", show), array=ArraySpec(name, (1, 2)),
                       output_file=str(tmp_path / f"t.{name}.log"))
    assert _run(render_script(options, 0), tmp_path, {"SLURM_ARRAY_TASK_ID": "2"}) == 0
    lines = (tmp_path / "t.2.log").read_text().splitlines()
    assert lines[2] == "value 2"
    assert parse_ended(lines[-1])[2] < 60


@pytest.mark.parametrize("offset,env,seen", [
    (1001, (), "1003"),                                    # the logical shard, not Slurm's physical 2
    (0, (), "2"),                                          # the same as SLURM_ARRAY_TASK_ID there
    (1001, (("NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX", "7"),), "7"),   # the user's --env wins
])
@pytest.mark.parametrize("inherited", [None, "5"])
def test_a_window_at_an_offset_tells_curator_its_logical_shard(tmp_path, offset, env, seen, inherited):
    """A Curator pipeline reads its shard from NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX, else
    SLURM_ARRAY_TASK_ID: in a window at offset 1001, task 2 (SHARD=1003) ran shard 2. A value left
    in the submitting shell (sbatch --export=ALL) made every task of an offset-0 window run it."""
    show = ("import os; print('shard', os.environ.get('NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX', 'unset'), "
            "os.environ.get('HYPERION_ARRAY_SHARD_INDEX', 'unset'))")
    options = _options(tmp_path, (sys.executable, "-c", show), array=ArraySpec("JOB", (1003,)),
                       output_file=str(tmp_path / "t.JOB.log"), env=env)
    left = {"NEMO_CURATOR_SLURM_ARRAY_SHARD_INDEX": inherited, "HYPERION_ARRAY_SHARD_INDEX": inherited}
    slurm = {"SLURM_ARRAY_TASK_ID": "2"} | (left if inherited else {})
    assert _run(render_script(options, offset), tmp_path, slurm) == 0
    ours = str(2 + offset)      # sharding.arrayenv's own name: one left in the shell won there too
    assert (tmp_path / f"t.{2 + offset}.log").read_text().splitlines()[2] == f"shard {seen} {ours}"


def test_non_array_script_keeps_the_name_literal(tmp_path):
    (tmp_path / "dump.py").write_text(DUMPER)
    dump = tmp_path / "argv.json"
    options = _options(tmp_path, (sys.executable, str(tmp_path / "dump.py"), "JOB", "a$JOB"),
                       array=None, output_file=str(tmp_path / "single.log"),
                       env=(("DUMP_TO", str(dump)), ("EXIT_WITH", "0")))
    script = render_script(options, 0)
    assert "SLURM_ARRAY_TASK_ID" not in script
    assert _run(script, tmp_path, {}) == 0
    assert json.loads(dump.read_text())["argv"] == ["JOB", "a$JOB"]
    lines = (tmp_path / "single.log").read_text().splitlines()
    assert lines[0] == running_line([sys.executable, str(tmp_path / "dump.py"), "JOB", "a$JOB"])
    assert lines[1].startswith("# Started at ")
    assert parse_ended(lines[-1])[0] == 0


def test_more_than_one_gpu_prefixes_torchrun_and_leaves_cuda_alone(tmp_path):
    options = _options(tmp_path, ("train", "--num-gpus", "2"), num_gpus=2)
    script = render_script(options, 0)
    assert "  torchrun\n  --standalone\n  --nnodes=1\n  --nproc-per-node=2\n  train\n" in script
    assert "CUDA_VISIBLE_DEVICES" not in script
    assert "conda" not in script and "free-gpu" not in script
    one = render_script(replace(options, num_gpus=1), 0)
    assert "torchrun" not in one


# --- sbatch argv against the contract's examples --------------------------------------------

def _site(name: str):
    return load_site(REPO / "conf" / name)


def test_coe_v100_gpu_array_argv():
    site = _site("submit_coe_v100.yaml")
    options = SubmitOptions(backend="slurm", cfg="conf/submit_coe_v100.yaml",
                            output_file="/exp/xvector/log/extract.JOB.log",
                            command=("hyperion-extract-wav2xvectors", "--part-idx", "JOB"),
                            num_gpus=1, num_threads=2, mem="8G", time="168:00:00",
                            array=ArraySpec("JOB", tuple(range(1, 101))), max_jobs_run=10)
    argv = sbatch_argv(site, options, Window(0, tuple(range(1, 101))), Path("/exp/xvector/log/q/extract.JOB.sh"))
    assert argv == [
        "sbatch", "--parsable", "--export=ALL", "--job-name=extract.JOB",
        "--output=/exp/xvector/log/q/slurm-%A_%a.out", "--error=/exp/xvector/log/q/slurm-%A_%a.err",
        "--open-mode=append",
        "--array=1-100%10", "--cpus-per-task=2", "--mem=8G", "--time=168:00:00",
        "--nodes=1", "--ntasks-per-node=1", "--partition=gpu", "--gres=gpu:v100:1",
        "/exp/xvector/log/q/extract.JOB.sh",
    ]


def test_coe_v100_cpu_job_argv_uses_cpu_options_and_plain_slurm_files():
    site = _site("submit_coe_v100.yaml")
    options = SubmitOptions(backend="slurm", cfg="x", output_file="/exp/log/train.log",
                            command=("train",), mem_per_cpu="2G", time="1:00:00")
    argv = sbatch_argv(site, options, None, "exp/log/q/train.sh")
    assert argv == [
        "sbatch", "--parsable", "--export=ALL", "--job-name=train",
        "--output=/exp/log/q/slurm-%j.out", "--error=/exp/log/q/slurm-%j.err", "--open-mode=append",
        "--cpus-per-task=1", "--mem-per-cpu=2G", "--time=1:00:00",
        "--nodes=1", "--ntasks-per-node=1", "--partition=cpu", "exp/log/q/train.sh",
    ]


@pytest.mark.parametrize("num_gpus, policy", [
    (0, ["--partition=gpu", "--exclude=c04,c05,c23,c24,c25"]),
    (2, ["--partition=gpu", "--gpus=2", "--exclude=c04,c05,c17,c20,c24,c25,c26,c27"]),
])
def test_clsp_policy_options(num_gpus, policy):
    site = _site("submit_clsp.yaml")
    options = SubmitOptions(backend="slurm", cfg="x", output_file="log/a.log", command=("a",),
                            num_gpus=num_gpus, mem="8G", time="168:00:00")
    argv = sbatch_argv(site, options, None, "log/q/a.sh")
    assert argv[-1 - len(policy):-1] == policy
    assert argv[-3 - len(policy):-1 - len(policy)] == ["--nodes=1", "--ntasks-per-node=1"]
    assert not any(a.startswith("--gres") for a in argv)


def test_windows_with_offsets_get_physical_array_expressions():
    site = _site("submit_test_cluster.yaml")
    values = (999, 1000, 1001, 1002, 1003)
    options = SubmitOptions(backend="slurm", cfg="x", output_file="log/t.JOB.log", command=("t",),
                            array=ArraySpec("JOB", values), max_jobs_run=2)
    first = Window(0, (999, 1000))
    second = Window(1001, (1001, 1002, 1003))
    assert "--array=999-1000%2" in sbatch_argv(site, options, first, "s.sh")
    assert "--array=0-2%2" in sbatch_argv(site, options, second, "s.sh")
    without = replace(options, max_jobs_run=None)
    assert "--array=0-2" in sbatch_argv(site, without, second, "s.sh")
    script = render_script(options, 1001)
    assert "JOB=$(( SLURM_ARRAY_TASK_ID + 1001 ))" in script
