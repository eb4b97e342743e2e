"""The Slurm cluster a record's jobs were queued on, when a site file's ``--clusters``/``-M`` sent
them to another than the local one.

sbatch --parsable answers ``1234;NAME`` for such a job: the name is kept in the attempt's record
(`SubmitRecord.cluster`; absent or null: the local cluster, as every record before it was kept),
and every squeue, sacct, scancel and scontrol about that record's jobs asks that cluster
(`on_cluster`), where without it they asked the local one and knew no such job. A name read from
a file reaches argv, so it must be a plain Slurm name (`cluster_name`); a list (``a,b``, sbatch
queued windows on more than one) is each name checked.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing: a local status loads no typing
if TYPE_CHECKING:
    from typing import Any

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")   # [A-Za-z0-9], not \w: no other script's letters
CLUSTER_CLIENTS = frozenset({"squeue", "sacct", "scancel", "scontrol"})


def is_cluster_name(value: object) -> bool:
    """Whether `value` is one Slurm cluster name, or a comma list of them (``a,b``). ``all`` (any
    case) is none: ``-M all`` asks every cluster (``scancel -M all J`` cancels J on each), and sbatch
    never answers it."""
    return isinstance(value, str) and all(_NAME.match(part) and part.lower() != "all"
                                          for part in value.split(","))


def same_cluster(one: str | None, other: str | None) -> bool:
    """Whether two cluster values (None: the local cluster) name the same cluster(s): Slurm takes a
    name in any case (``squeue -M LocalCluster`` asks localcluster), so ``-M`` typed in another case
    than sbatch answered is no other cluster."""
    return (one or "").lower() == (other or "").lower() and (one is None) == (other is None)


def cluster_words(cluster: str | None) -> str:
    """``cluster NAME`` or ``the local cluster``: where a job was looked for, in a line that says
    Slurm knows no such job (the user may have meant another cluster: -M NAME)."""
    return f"cluster {cluster}" if cluster else "the local cluster"


def clusters_of(names: Sequence[str | None]) -> str | None:
    """One value for the clusters several sbatch answers named: None when none named one (the local
    cluster), else the distinct names in their first order joined with commas."""
    seen = list(dict.fromkeys(name for name in names if name))
    return ",".join(seen) if seen else None


def on_cluster(argv: Sequence[str], cluster: str | None) -> list[str]:
    """`argv` asking `cluster` (``-M NAME`` after the client's name) when it is a Slurm client that
    takes it; as it is for None (the local cluster) or another program. ValueError for a name that
    is not one (it would reach argv)."""
    if cluster is None or not argv or argv[0] not in CLUSTER_CLIENTS:
        return list(argv)
    if not is_cluster_name(cluster):
        raise ValueError(f"not a Slurm cluster name: {cluster[:80]!r}")
    return [argv[0], "-M", cluster, *argv[1:]]


def copyable(argv: Sequence[str], cluster: str | None) -> str:
    """The command line a user copies to ask about (or cancel) jobs on `cluster`: `argv` with
    ``-M NAME`` (`on_cluster`), each word shell-quoted; a name that is no cluster name is left out
    (nothing read from a file is printed as a command word unchecked)."""
    from backends.shellwords import shell_quote

    words = on_cluster(argv, cluster) if is_cluster_name(cluster) else list(argv)
    return " ".join(shell_quote(word) for word in words)


def without_cluster_lines(text: str) -> str:
    """An answer of a client asked with -M without the ``CLUSTER: NAME`` line some Slurm versions
    print before each cluster's rows (even with -h): it is no row."""
    if "CLUSTER: " not in text:
        return text
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("CLUSTER: "))


class OnCluster:
    """A runner (argv -> result) that asks `cluster`: each argv through `on_cluster`, and each
    answer's ``CLUSTER:`` lines dropped (`without_cluster_lines`)."""

    def __init__(self, runner: Callable[[Sequence[str]], Any], cluster: str) -> None:
        self.runner, self.cluster = runner, cluster

    def __call__(self, argv: Sequence[str]) -> Any:
        result = self.runner(on_cluster(argv, self.cluster))
        stdout = getattr(result, "stdout", None)
        if isinstance(stdout, str) and "CLUSTER: " in stdout:
            import dataclasses

            if dataclasses.is_dataclass(result):
                return dataclasses.replace(result, stdout=without_cluster_lines(stdout))
        return result


def for_cluster(runner: Callable[[Sequence[str]], Any], cluster: str | None) -> Callable[[Sequence[str]], Any]:
    """`runner` asking `cluster` (the runner itself for the local cluster, or when it already asks it)."""
    if cluster is None or (isinstance(runner, OnCluster) and same_cluster(runner.cluster, cluster)):
        return runner
    return OnCluster(runner, cluster)
