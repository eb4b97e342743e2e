"""bench/bench_typing.py, as the README documents it, runs and prints its figures.

The Checkpoint half typed 123456 into max array size while the Submit screen's site file
(conf/submit_test_cluster.yaml, max_array_size 1001) capped it (4 keys: 1234), so the plan never showed the
typed size and the script died with 'never settled' (run_all.py: exit 1)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_typing_checkpoint_prints_its_figures() -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "bench_typing.py"), "--tasks", "0",
                           "--shards", "300", "--keys", "4"],
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    names = re.findall(r"^bench: (\S+) [0-9.e-]+ s baseline", done.stdout, re.M)
    assert names == ["ckpt_key_to_echo_median_300", "ckpt_key_to_echo_max_300", "ckpt_last_key_to_final_300"]
