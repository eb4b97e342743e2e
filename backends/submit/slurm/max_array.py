"""What to do when sbatch refuses an array window whose indices reach the cluster's MaxArraySize.

sbatch only says "Invalid job array specification": the user cannot tell that the
site file's `max_array_size` (missing, or above the cluster's) is the cause, nor
what to set it to. Only once sbatch refused an array window (never on the success
path) is ``scontrol show config`` asked, bounded in time and output, and when the
window's highest index is at or above MaxArraySize the refusal names the key to set.
Anything unexpected (no scontrol, a hung one, a hostile or huge answer) gives no
advice: the refusal is then sbatch's own words, as before.
"""
from __future__ import annotations


from backends.printable import printable
from backends.submit.config import MAX_ARRAY_SIZE

SCONTROL_ARGV = ("scontrol", "show", "config")
SCONTROL_TIMEOUT = 5.0            # seconds: a refusal is already being told, it must not hang
MAX_CONFIG_BYTES = 1 << 20        # `scontrol show config` is ~8 KB; more is not Slurm's answer
_KEY = "MaxArraySize"


def parse_max_array_size(text: str) -> int | None:
    """MaxArraySize from ``scontrol show config`` text (``MaxArraySize            = 1001``); None
    when it is missing, not a plain number, or outside what Slurm allows (1..4000001)."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or key.strip() != _KEY:
            continue
        value = value.strip()
        if not (value.isascii() and value.isdigit()) or len(value) > len(str(MAX_ARRAY_SIZE)):
            return None
        number = int(value)
        return number if 1 <= number <= MAX_ARRAY_SIZE else None
    return None


def read_command(argv: tuple[str, ...], timeout: float = SCONTROL_TIMEOUT,
                 cap: int = MAX_CONFIG_BYTES) -> str | None:
    """What `argv` prints within `timeout` s (None if it cannot run, fails, hangs or says more than
    `cap` bytes), run as every Slurm client is (`run_client`: its process group killed on a timeout)."""
    from backends.client import run_client

    done = run_client(argv, timeout, cap=cap)
    return done.stdout if done.failure is None and done.returncode == 0 else None


def cluster_max_array_size() -> int | None:
    """The cluster's MaxArraySize as scontrol states it; None when it cannot be known."""
    text = read_command(SCONTROL_ARGV)
    return None if text is None else parse_max_array_size(text)


def array_advice(highest: int, cluster_max: int | None, site_file: str) -> str | None:
    """What the refusal of a window whose highest array index is `highest` adds: the limit and the
    key to set in `site_file` (as the user named it). None when the limit is unknown or not reached."""
    if cluster_max is None or highest < cluster_max:
        return None
    where = printable(site_file) if site_file else "the site file (--cfg)"
    return (f"the cluster's MaxArraySize is {cluster_max} (scontrol show config): set "
            f"max_array_size: {cluster_max} in {where} to split the values into windows")
