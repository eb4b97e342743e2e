"""Where an array's literal NAME substitution changes text the user likely did not mean it to.

The contract replaces every literal occurrence of NAME in every command argument and in
--output-file with the task's value, as slurm.pl does. So with ``--array JOB=1:12``,
``bash -c 'test $JOB -ne 3'`` runs ``test $1 -ne 3`` (the shell's first positional parameter,
empty: every task failed) and ``echo $SLURM_JOB_ID`` runs ``echo $SLURM_1_ID``. The README says
so; nothing said it to the user, and the console's form called such a command "valid". A
warning, not a refusal: the substitution is the contract's and stays exactly as it is.

Two cases are warned about, each once (the first place it is seen, how many more):
- NAME right after ``$`` or ``${``: a shell reads ``$1`` there, never the value.
- NAME inside a longer name: joined to a letter or digit (``JOBS``, ``NJOBS``; ``--num-parts``
  with NAME ``n``), or joined by ``_`` to a name written as a variable is (upper case:
  ``SLURM_JOB_ID``, ``MY_JOB``; or after ``$``: ``$out_JOB``). A lower-case file name joined by
  ``_`` (``xvector_JOB.ark``) is the recipe idiom, as ``extract.JOB.log`` and ``--part-idx JOB``
  are, and is not warned about.
Pure: text in, lines out (not escaped: each face shows them its own way).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backends.printable import cut
from backends.submit.model import SubmitPlan, substitute

MAX_LINES = 3          # a command full of $JOB is said in a few lines, not one per word
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SHOWN = 60            # the argument quoted in full up to this length, else around the word
_AROUND = 24           # characters shown either side of the word in a longer argument


@dataclass
class _Case:
    word: str           # as written: `$JOB`, `${JOB}`, `SLURM_JOB_ID`, `$SLURM_JOB_ID`
    dollar: bool        # NAME itself after $ / ${ (not a longer name)
    where: str          # `command word 3 ('...')` or `--output-file ('...')`
    in_command: bool
    more: int = 0       # further places the same word is found


def plan_notes(plan: SubmitPlan) -> tuple[str, ...]:
    """`substitution_notes` of a plan (hyperion-submit's and the console's preview alike), with the
    value its first task gets."""
    options = plan.options
    if options.array is None or not plan.tasks or plan.tasks[0].value is None:
        return ()
    return substitution_notes(options.array.name, plan.tasks[0].value, options.command, options.output_file)


def substitution_notes(name: str, value: int, command: Sequence[str], output_file: str = "") -> tuple[str, ...]:
    """One line per distinct word where NAME's substitution (by `value`) is likely not what was
    meant (see the module's docstring), at most MAX_LINES; () when there is none."""
    cases: dict[str, _Case] = {}
    places = [(f"command word {i}", word, True) for i, word in enumerate(command, 1)]
    if output_file:
        places.append(("--output-file", output_file, False))
    for label, text, in_command in places:
        for word, dollar, at in _suspicious(text, name):
            case = cases.get(word)
            if case is None:
                cases[word] = _Case(word, dollar, f"{label} ({_excerpt(text, at, len(word))})", in_command)
            else:
                case.more += 1
    lines = [_line(case, name, value) for case in cases.values()]
    if len(lines) > MAX_LINES:
        left = len(lines) - (MAX_LINES - 1)
        lines = lines[:MAX_LINES - 1] + [
            f"and {left} more words where {name} is replaced after $ or inside a longer name "
            "(--dry-run shows each task's command)"]
    return tuple(lines)


def _suspicious(text: str, name: str) -> list[tuple[str, bool, int]]:
    """Each (word as written, whether it is NAME itself after $, where the word starts) in `text`."""
    found: list[tuple[str, bool, int]] = []
    at = text.find(name)
    while at >= 0:
        left, right = at, at + len(name)
        while left > 0 and text[left - 1] in _WORD_CHARS:
            left -= 1
        while right < len(text) and text[right] in _WORD_CHARS:
            right += 1
        word = text[left:right]
        prefix = "${" if text[max(left - 2, 0):left] == "${" else "$" if text[left - 1:left] == "$" else ""
        suffix = "}" if prefix == "${" and text[right:right + 1] == "}" else ""
        if prefix or word != name and _longer_name(word, name):
            found.append((prefix + word + suffix, word == name, left - len(prefix)))
        at = text.find(name, right)             # the next word (str.replace's walk is the same)
    return found


def _longer_name(word: str, name: str) -> bool:
    """NAME inside `word` is joined to a letter or digit (JOBS), or `word` is written as a variable
    is, in upper case (SLURM_JOB_ID); not a lower-case name joined by `_` (xvector_JOB)."""
    if not any(c.islower() for c in word):
        return True
    at = word.find(name)
    while at >= 0:
        if word[at - 1:at] not in ("", "_") or word[at + len(name):at + len(name) + 1] not in ("", "_"):
            return True
        at = word.find(name, at + len(name))
    return False


def _excerpt(text: str, at: int, size: int) -> str:
    """`text` quoted, in full when short, else the part around the word at `at` with `...`."""
    if len(text) <= _SHOWN:
        return f"'{text}'"
    begin, end = max(at - _AROUND, 0), min(at + size + _AROUND, len(text))
    if size > _SHOWN:                            # a hostile 100 KB word is not repeated
        end = at + _SHOWN
    return f"'{'...' if begin else ''}{text[begin:end]}{'...' if end < len(text) else ''}'"


def _line(case: _Case, name: str, value: int) -> str:
    word = cut(case.word, _SHOWN)
    becomes = cut(substitute(case.word, name, value), _SHOWN)
    more = f" (and {case.more} more place{'s' if case.more > 1 else ''})" if case.more else ""
    if case.dollar:
        when = "before the shell sees it" if case.in_command else "in the log's name"
        return (f"{case.where} has {word}{more}: it becomes {becomes} {when}, as --array replaces every "
                f"{name} (write {name} alone: the value is already in the text)")
    return (f"{case.where} has {word}{more}: it becomes {becomes}, as --array replaces every {name}, "
            f"even inside a longer name (pick an array NAME found nowhere else)")
