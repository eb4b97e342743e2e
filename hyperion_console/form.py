"""The Submit form's fields as a hyperion-submit argv, so the core parses them as the CLI does.

Blank fields are left out, so the site YAML's defaults apply exactly as on the
command line; nothing here validates values: the core's InputError does.
"""
from __future__ import annotations

from dataclasses import dataclass

from backends.errors import InputError, SiteError

# form field -> hyperion-submit option (memory is special: its scope picks the option)
OPTION_OF: dict[str, str] = {
    "num_gpus": "--num-gpus",
    "num_threads": "--num-threads",
    "time": "--time",
    "array": "--array",
    "max_jobs_run": "--max-jobs-run",
    "output_file": "--output-file",
}
MEM_SCOPES: dict[str, str] = {"node": "--mem", "cpu": "--mem-per-cpu"}


@dataclass(frozen=True)
class FormValues:
    backend: str
    cfg: str
    num_gpus: str = ""
    num_threads: str = ""
    mem: str = ""
    mem_scope: str = "node"
    time: str = ""
    array: str = ""
    max_jobs_run: str = ""
    output_file: str = ""
    env: str = ""
    command: str = ""


def form_argv(form: FormValues) -> list[str]:
    """`[backend, --cfg, PATH, ..., --, command...]` (no program name)."""
    argv = [form.backend, "--cfg", form.cfg]
    # --option=VALUE: a value starting with "-" ("-5G") is then the option's, and the core says what is
    # wrong with it, rather than "expected one argument"
    for field, option in OPTION_OF.items():
        value = getattr(form, field).strip()
        if value:
            argv.append(f"{option}={value}")
    if form.mem.strip():
        argv.append(f"{MEM_SCOPES[form.mem_scope]}={form.mem.strip()}")
    argv += [f"--env={item}" for item in _words("env", form.env)]
    return argv + ["--", *_words("command", form.command)]


def _words(field: str, text: str) -> list[str]:
    """The field split as a shell would split it (quotes kept together), nothing expanded."""
    try:
        return shell_words(text)
    except ValueError as exc:
        raise InputError(field, f"cannot split into words: {exc}") from exc


# What a backslash escapes inside double quotes (POSIX); shlex knows only " and \, so a
# command pasted from a shell, `sh -c "echo \$RANK"`, printed a literal $RANK.
DOUBLE_QUOTED_ESCAPES = '$`"\\\n'
BLANKS = " \t\r\n"      # shlex.split's, as before


def shell_words(text: str) -> list[str]:
    """Words as a POSIX shell makes them, nothing expanded: '...' literal, "..." where a backslash
    escapes only $ ` " \\ and a newline, and outside quotes a backslash escapes any character.
    ValueError with shlex's words for a quote left open."""
    words: list[str] = []
    word: list[str] | None = None      # None: between words
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote and word is not None:    # a quote opens a word
            if ch == quote:
                quote = ""
            elif quote == '"' and ch == "\\" and text[i + 1:i + 2] and text[i + 1] in DOUBLE_QUOTED_ESCAPES:
                i += 1
                if text[i] != "\n":
                    word.append(text[i])
            else:
                word.append(ch)
        elif ch == "\\":
            i += 1                        # a backslash ending the text is itself, as in bash
            if text[i - 1:i + 1] != "\\\n":     # a backslash-newline joins two lines
                word = word if word is not None else []
                word.append(text[i] if i < len(text) else "\\")
        elif ch in "'\"":
            quote, word = ch, word if word is not None else []
        elif ch in BLANKS:
            if word is not None:
                words.append("".join(word))
            word = None
        else:
            word = word if word is not None else []
            word.append(ch)
        i += 1
    if quote:
        raise ValueError("No closing quotation")
    return words + ([] if word is None else ["".join(word)])


def field_of_error(error: BaseException) -> str | None:
    """The form field an error names (`--mem-per-cpu` -> `mem`); the site selector for any problem of
    the site file (its `time` key is not the time field)."""
    if isinstance(error, SiteError):
        return "cfg"
    name = str(getattr(error, "field", "")).strip().lstrip("-").replace("-", "_")
    if name in {"mem", "mem_per_cpu", "memory"}:
        return "mem"
    if name in {"cfg", "site", "config"}:
        return "cfg"
    if name in OPTION_OF or name in {"command", "env"}:
        return name
    return None
