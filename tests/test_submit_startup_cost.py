"""What a hyperion-submit start does once, or not at all, that it did twice (issue 14, speed): the dry run's own
share of its start-up, over Python and jsonargparse, is loading the site file and our modules."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import TEST_SITE

from backends.submit.config import load_site


def test_the_site_file_is_parsed_once(tmp_path, monkeypatch):
    """The checks walk PyYAML's events; the value is built from those events, not from a second parse."""
    parsers = []
    init = yaml.parser.Parser.__init__
    monkeypatch.setattr(yaml.parser.Parser, "__init__", lambda self: (parsers.append(self), init(self))[1])
    site = load_site(TEST_SITE)
    assert len(parsers) == 1
    assert site.max_array_size == 1001 and site.cpu_options == ("--partition=cpu",)
    assert site.gpu_types["v100"] == ("--partition=gpu", "--gres=gpu:v100:{num_gpus}")


def test_a_site_file_of_two_documents_is_refused_as_before(tmp_path):
    site = tmp_path / "site.yaml"
    site.write_text(TEST_SITE.read_text() + "---\nnum_gpus: 1\n")
    result = subprocess.run(["hyperion-submit", "local", "--cfg", str(site), "--output-file", "t.log", "--dry-run",
                             "--", "true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(f"hyperion-submit: error: --cfg: {site} is not valid YAML: "
                                    "expected a single document in the stream, but found another document (line ")
    assert "Traceback" not in result.stderr and not (tmp_path / "q").exists()


def test_a_dry_run_compiles_only_the_one_line_escape_pattern(tmp_path):
    """The multi-line and surrogate-only patterns (half a millisecond each) wait for their first use."""
    code = (
        "import re, sys\n"
        "seen = []\n"
        "compile_ = re.compile\n"
        "re.compile = lambda pattern, flags=0: (seen.append(pattern), compile_(pattern, flags))[1]\n"
        "from backends.cli.submit import main\n"
        f"status = main(['slurm', '--cfg', {str(TEST_SITE)!r}, '--dry-run', '--array', 'JOB=1:3',\n"
        "               '--output-file', 'log/t.JOB.log', '--', 'echo', 'hi'])\n"
        "print(status, sum(isinstance(p, str) and '\\ud800' in p for p in seen), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert "sbatch" in result.stdout
    assert result.stderr.split()[-2:] == ["0", "1"], result.stderr


def test_a_local_run_collects_no_garbage_while_starting_and_as_usual_while_its_tasks_run(tmp_path):
    """The start-up's long-lived objects (jsonargparse, our classes) were walked by some 40 collections
    before the first task ran (7-11 ms of a 100-task run); they are frozen for the run instead, its
    own garbage still collected, and an in-process caller gets its collector back as it was."""
    code = (
        "import gc, sys\n"
        "in_main, unfrozen = [], []\n"
        "def seen(phase, info):\n"
        "    if phase == 'start' and in_main and not gc.get_freeze_count():\n"
        "        unfrozen.append(info['generation'])\n"
        "gc.callbacks.append(seen)\n"
        "from backends.cli.submit import main\n"
        "from backends.submit.local import run\n"
        "real, first = run.run_task, []\n"
        "def run_task(*args, **kwargs):\n"
        "    first.append(gc.isenabled())\n"
        "    return real(*args, **kwargs)\n"
        "run.run_task = run_task\n"
        "in_main.append(True)\n"
        f"status = main(['local', '--cfg', {str(TEST_SITE)!r}, '--array', 'JOB=1:5',\n"
        "               '--output-file', 'log/t.JOB.log', '--', 'true'])\n"
        "in_main.clear()\n"
        "print(status, len(unfrozen), all(first), gc.isenabled(), gc.get_freeze_count(), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}   # this checkout's code
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL, env=env)
    assert "JOB=5: ok" in result.stdout, result.stderr
    # status 0; no collection walked the start-up's objects; the collector on while the tasks ran;
    # after main: on again, nothing left frozen
    assert result.stderr.split()[-5:] == ["0", "0", "True", "True", "0"], result.stderr


def test_a_submission_looks_into_no_sibling_folder_that_cannot_be_its_own_with_a_name(tmp_path):
    """``/scratch/user7/exp/log/t.log`` looked for a q/ under each folder beside user7 (a NAME folder
    such as ``userJOB`` could write its logs): on a shared /scratch, thousands of look-ups at every
    submission. Only the folders that are user7 with a NAME in place of its number are looked into."""
    for sibling in ("u1", "u2", "alice", "bob3", "user8x", "userJOB"):
        (tmp_path / sibling).mkdir()
    exp = tmp_path / "user7" / "exp"
    exp.mkdir(parents=True)
    code = (
        "import os, sys\n"
        "seen = []\n"
        "scandir = os.scandir\n"
        "os.scandir = lambda path='.': (seen.append(os.fspath(path)), scandir(path))[1]\n"
        "from backends.cli.submit import main\n"
        f"status = main(['local', '--cfg', {str(TEST_SITE)!r}, '--output-file', 'log/t.log', '--', 'true'])\n"
        "print(status, *sorted(seen), sep='\\n', file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}   # this checkout's code
    result = subprocess.run([sys.executable, "-c", code], cwd=exp, capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL, env=env)
    assert "task: ok" in result.stdout, result.stderr
    status, *looked = result.stderr.splitlines()
    assert status == "0"
    beside = [os.path.relpath(p, tmp_path) for p in looked if not p.startswith(str(tmp_path / "user7"))]
    assert beside == [".", "userJOB/exp/log/q"], looked     # the listing of tmp_path, and userJOB's q/ alone


def test_the_command_line_is_parsed_once_with_the_site_file_under_it(tmp_path, monkeypatch):
    """jsonargparse parsed the command line twice, alone and under --cfg's site file (2-3 ms of every start);
    what the command line itself says (which memory scope, whose --time) is read from the one parse."""
    import jsonargparse

    from backends.submit.commandline import parse_submit_request

    parses = []
    parse = jsonargparse.ArgumentParser.parse_args
    monkeypatch.setattr(jsonargparse.ArgumentParser, "parse_args",
                        lambda self, *args, **kwargs: (parses.append(args), parse(self, *args, **kwargs))[1])
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "site.yaml"
    site.write_text(TEST_SITE.read_text())

    def request(*options):
        parses.clear()
        got = parse_submit_request(["slurm", "--cfg", str(site), "--output-file", "log/t.JOB.log", *options,
                                    "--", "true"])
        return len(parses), got.options, got.dry_run

    assert request() == (1, request()[1], False)
    count, options, dry = request("--mem-per-cpu=2G", "--time", "01:00:00", "--dry-run", "--array", "JOB=1:3")
    assert (count, dry) == (1, True)
    assert (options.mem, options.mem_per_cpu, options.time) == (None, "2G", "01:00:00")   # the site's mem: 100M replaced
    count, options, _ = request("--mem", "8G", "--num-threads", "2", "--max-jobs-run", "2", "--array", "JOB=1:3",
                                "--env", "A=1", "--env=B=2")
    assert count == 1
    assert (options.mem, options.mem_per_cpu, options.time, options.num_threads) == ("8G", None, "00:10:00", 2)
    assert (options.max_jobs_run, options.env, options.array.values) == (2, (("A", "1"), ("B", "2")), (1, 2, 3))
