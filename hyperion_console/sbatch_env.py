"""The line every preview that leads to an sbatch shows when the user's environment holds SBATCH_*
variables the core does not pass on (backends.submit.site_options.OWNED_INPUT_VARIABLES).

Submit, the Jobs screen's Retry and the Checkpoint screen's Resubmit all end in the core's one
sbatch call, which drops them; `hyperion-submit slurm`, `hyperion-jobs retry` and
`hyperion-checkpoint resubmit` say so on stderr in these words, so every preview says it too.
"""
from __future__ import annotations

import os
from typing import Mapping

from backends.submit.site_options import ignored_inputs_line

PROG = "hyperion-submit"      # the CLIs' line comes from hyperion-submit's core, whichever CLI runs it


def ignored_sbatch_line(backend: str, environ: Mapping[str, str] | None = None) -> str | None:
    """`# hyperion-submit: not passing SBATCH_GRES ... to sbatch: ...` for a Slurm plan; None when
    nothing is dropped or nothing goes to sbatch."""
    if backend != "slurm":
        return None
    line = ignored_inputs_line(os.environ if environ is None else environ)
    return None if line is None else f"# {PROG}: {line}"
