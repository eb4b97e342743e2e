"""Commands shown for pasting hold their arguments exactly: a control character is spelled in
bash's ANSI-C quoting, on one line, and bash reads back the same bytes."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import TEST_SITE, run_cli

from backends.printable import UNSAFE
from backends.shellwords import shell_join, shell_join_around

HOSTILE = ["plain", "two words", "esc\x1b[31mred", "line\nbreak", "tab\there\rcr", "it's", "back\\slash",
           "\x1b12", "q'\x1b\\", "\udce9t\udce9", "\u202eevil", "", "$HOME", "\\x1b", "nel\x85csi\x9b",
           "\ufeffbom", "zero\u200bwidth"]


def _words_bash_reads(line: str, locale: str = "C.UTF-8") -> list[str]:
    """The arguments bash makes of `line`, as a user pasting it would get them."""
    out = subprocess.run(["bash", "-c", f'for a in {line}; do printf "%s\\0" "$a"; done'],
                         capture_output=True, check=True, env={**os.environ, "LC_ALL": locale}).stdout
    return [os.fsdecode(word) for word in out.split(b"\0")[:-1]]


@pytest.mark.parametrize("name", ["JOB", "n", "t", "x1b", "e9"])
@pytest.mark.parametrize("digits", ["0", "7", "1003"])
def test_the_join_cut_at_a_name_gives_the_join_of_the_substituted_words(name, digits):
    """The Slurm log header splices the array value into the joined command: cut in the quoted text,
    a name among the escapes' letters (`n` of ``\\n``) would have been replaced there too."""
    words = [*HOSTILE, name, f"a{name}b", f"{name}\n{name}'", f"\x1b{name}", f"{name} {name}"]
    assert digits.join(shell_join_around(words, name)) == shell_join(w.replace(name, digits) for w in words)


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_bash_reads_back_every_hostile_word_from_one_visible_line(locale):
    line = shell_join(HOSTILE)
    assert "\n" not in line and not UNSAFE.search(line)
    assert _words_bash_reads(line, locale) == HOSTILE


def test_a_dry_runs_command_lines_paste_back_to_the_arguments_given(tmp_path, cli_env):
    command = ["printf", "%s\\n", "esc\x1b[31mred", "line\nbreak"]
    result = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--dry-run", "--output-file", "t.log", "--", *command,
                     cwd=tmp_path, env=cli_env)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    task_line = next(line for line in result.stdout.splitlines() if line.startswith("  printf "))
    assert _words_bash_reads(task_line.strip()) == command
    given = next(line for line in result.stdout.splitlines() if line.startswith("# command line: "))
    assert _words_bash_reads(given[len("# command line: "):])[-2:] == command[-2:]


def test_a_failed_runs_retry_preview_names_the_command_as_it_ran(tmp_path, cli_env):
    """The user's session: a local task given a coloured marker fails; the retry's preview
    shows the command it would run, and that line pasted runs the same arguments."""
    command = ["bash", "-c", "echo \"$1\"; exit 3", "-", "esc\x1b[31mred"]
    run = run_cli("hyperion-submit", "local", "--cfg", str(TEST_SITE), "--output-file", "logs/t.log", "--",
                  *command, cwd=tmp_path, env=cli_env)
    assert run.returncode == 1 and "exit code 3" in run.stderr, run.stderr
    preview = run_cli("hyperion-jobs", "retry", str(tmp_path / "logs" / "q" / "t.submit.json"), "--dry-run",
                      cwd=tmp_path, env=cli_env)
    assert preview.returncode == 0, preview.stderr
    assert "\x1b" not in preview.stdout
    line = next(line.strip() for line in preview.stdout.splitlines() if line.strip().startswith("command: "))
    words = _words_bash_reads(line[len("command: "):])
    assert words[0] == "hyperion-submit" and words[-len(command):] == command
