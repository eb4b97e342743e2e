"""What an sbatch that queued its job said on stderr, as every face shows it: escaped, cut, bounded."""
from __future__ import annotations

from backends.submit.slurm.sbatch import MAX_WARNING_LINES, sbatch_warnings


def test_what_a_successful_sbatch_said_is_escaped_cut_and_bounded():
    assert sbatch_warnings("", "12") == ()
    assert sbatch_warnings("\n  \nsbatch: warning: \x1b[2Jcleared\n", "12") == (
        "sbatch said of job 12: sbatch: warning: \\x1b[2Jcleared",)
    many = sbatch_warnings("".join(f"sbatch: warning: {n} " + "x" * 10_000 + "\n" for n in range(1000)), "12")
    assert len(many) == MAX_WARNING_LINES + 1
    assert many[-1] == "sbatch said of job 12: ... and 995 more line(s)"
    assert all(len(line) < 400 for line in many)
    bidi = sbatch_warnings("\u202e" * 400 + "\n", "12")[0]           # 10 characters an escape: cut once escaped
    assert len(bidi) < 400 and bidi.endswith("... (400 characters)") and "\u202e" not in bidi
