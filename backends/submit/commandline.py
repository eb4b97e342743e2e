"""The hyperion-submit command line: ``<local|slurm> --cfg site.yaml [options] -- command``.

Shared by the CLI and the console so both accept exactly the same text. The
command after ``--`` is split off here (jsonargparse would swallow it), the
site file is validated by `load_site` for precise messages, and jsonargparse's
ActionConfigFile merges it under the command line (``--cfg`` moved first so
the command line wins).
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

from backends.errors import InputError, refuse_dash_values
from backends.printable import cut, printable, quoted
from backends.submit.array import MAX_VALUES, SHELL_NAME, parse_array
from backends.submit.config import KEYS, SiteConfig, load_site_text
from backends.submit.env_names import check_env_name
from backends.submit.model import BACKENDS, SubmitOptions
from backends.submit.plan import validate_options
from backends.submit.resources import MAX_GPUS, MAX_THREADS, check_count, check_memory, check_time

PORTABLE = ("output_file", "num_gpus", "num_threads", "mem", "mem_per_cpu", "time", "array",
            "max_jobs_run")
SITE_ONLY = tuple(k for k in KEYS if k not in PORTABLE)


@dataclass(frozen=True)
class SubmitRequest:
    """A validated command line: the site, the options, and whether only to show what would run."""

    site: SiteConfig
    options: SubmitOptions
    dry_run: bool = False


def split_command(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """Submitter tokens and the command: everything after the first ``--`` (maybe nothing: the
    options are judged first, see parse_submit_request)."""
    if "--" not in argv:
        raise InputError("--", "the command must follow a '--' separator: "
                         "hyperion-submit <local|slurm> --cfg site.yaml [options] -- command ...")
    cut = list(argv).index("--")
    return list(argv[:cut]), tuple(argv[cut + 1:])


def _check_command(command: tuple[str, ...]) -> None:
    if not command or not command[0].strip():
        raise InputError("command", "no command after '--'")


def _cfg_first(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(``--cfg`` tokens, the other tokens) so the config can be applied before the CLI."""
    cfg: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--cfg":
            if i + 1 >= len(tokens) or tokens[i + 1].startswith("--"):
                raise InputError("--cfg", "expected a site YAML path")
            cfg += tokens[i:i + 2]
            i += 2
            continue
        if token.startswith("--cfg="):
            cfg += ["--cfg", token[len("--cfg="):]]
        else:
            rest.append(token)
        i += 1
    if not cfg:
        raise InputError("--cfg", "required: the site YAML file (e.g. --cfg conf/submit_test_cluster.yaml)")
    if len(cfg) > 2:
        raise InputError("--cfg", "given more than once; pass one site file")
    return cfg, rest


def _parser():
    from jsonargparse import ActionConfigFile, ArgumentParser

    parser = ArgumentParser(prog="hyperion-submit", exit_on_error=False, allow_abbrev=False,
                            print_config=None)   # not a flag of the contract: it dumped a config, then "arguments: 0"
    parser.add_argument("--cfg", action=ActionConfigFile)
    for key in PORTABLE:
        parser.add_argument("--" + key.replace("_", "-"), dest=key, default=None)
    parser.add_argument("--env", action="append", default=None)
    parser.add_argument("--dry-run", dest="dry_run", action="store_true", default=False)
    for key in SITE_ONLY:  # accepted from the YAML; refused on the command line below
        parser.add_argument("--" + key, dest=key, default=None, help=argparse.SUPPRESS)
    return parser


def _parse(parser, tokens: list[str], cfg_field: str = "cfg"):
    """jsonargparse's parse; its error as one InputError. `cfg_field`: how an error of the site text
    is named (the merged pass's text is the site file's, which the user gave as --cfg)."""
    try:
        return parser.parse_args(tokens)
    except (argparse.ArgumentError, SystemExit, ValueError, TypeError) as err:
        error = _input_error(str(err), tokens)
        if error.field in ("cfg", "--cfg") and cfg_field != error.field:
            raise InputError(cfg_field, error.problem) from None
        raise error from None


def _dash_value(field: str, tokens: list[str]) -> str | None:
    """argparse's 'expected one argument' for `--mem -1G`: the value was there, read as an option."""
    for option, value in zip(tokens, tokens[1:]):
        if option == field and value.startswith("-") and not value.startswith("--"):
            shown = printable(cut(value))
            return (f"expected a value, and '{shown}' reads as an option; a value starting "
                    f"with '-' is given as {field}={shown}")
    return None


def _input_error(message: str, tokens: list[str] = ()) -> InputError:
    text = " ".join(message.split())
    match = re.match(r"unrecognized arguments: (\S+)", text)
    if match:
        return InputError(cut(match[1]), "unknown option (see hyperion-submit --help / the README)")
    match = re.match(r"argument (\S+?)(?:/\S+)?: (.*)", text)
    if match:
        said = _dash_value(match[1], list(tokens)) if match[2] == "expected one argument" else None
        return InputError(match[1], said or match[2])
    match = re.match(r'Parser key "([^"]+)": (.*)', text)
    if match:
        return InputError(match[1], match[2])
    return InputError("arguments", text or "could not parse the command line")


def _refuse_site_only(tokens: list[str]) -> None:
    for token in tokens:
        name = token.partition("=")[0]
        if name.startswith("--") and name[2:].replace("-", "_") in SITE_ONLY:
            raise InputError(name, "is a site YAML key, not a command-line option")


# Options whose second use would silently replace the first: `--array JOB=1:2 --array JOB=3:4` ran 3-4
# only, and a second --output-file moved every log. (A resource option given again is an override.)
SINGLE_USE = {"--array": "give one array (a list is JOB=1:2,4:5)", "--output-file": "give one log path"}


def _refuse_repeated(tokens: list[str]) -> None:
    for option, advice in SINGLE_USE.items():
        given = [token for token in tokens if token == option or token.startswith(option + "=")]
        if len(given) > 1:
            raise InputError(option, f"given more than once; {advice}")


def _env(items: list[str] | None, backend: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not SHELL_NAME.match(key):
            raise InputError("--env", f"{quoted(item)} is not NAME=VALUE with a shell identifier NAME")
        check_env_name(key, backend)
        pairs.append((key, value))
    return tuple(pairs)


def _memory(site: SiteConfig, cli) -> tuple[str | None, str | None]:
    """A command-line memory option replaces the site's memory default of either scope."""
    if cli.mem is not None and cli.mem_per_cpu is not None:
        raise InputError("--mem-per-cpu", "--mem and --mem-per-cpu are mutually exclusive; give only one")
    if cli.mem is not None:
        return check_memory("--mem", cli.mem), None
    if cli.mem_per_cpu is not None:
        return None, check_memory("--mem-per-cpu", cli.mem_per_cpu)
    return site.mem, site.mem_per_cpu


def _given(option: str, tokens: list[str]) -> bool:
    return any(token == option or token.startswith(option + "=") for token in tokens)


def _command_line_said(merged, tokens: list[str]) -> SimpleNamespace:
    """What the command line itself says: each option's value in the merged parse if `tokens` give it
    (--cfg is applied first, so the command line's value is the one kept), else None.

    One jsonargparse parse, not a second one of the command line alone (2-3 ms of every start):
    an option is given only as ``--name VALUE`` or ``--name=VALUE`` (no abbreviations, and a
    ``--name`` in a value's place is argparse's 'expected one argument'), and the site file sets
    none of --output-file, --array, --max-jobs-run, --env or --dry-run (not site keys).
    """
    said = {key: getattr(merged, key) if key not in KEYS or _given("--" + key.replace("_", "-"), tokens) else None
            for key in PORTABLE}
    return SimpleNamespace(**said, env=merged.env, dry_run=merged.dry_run)


def parse_submit_request(argv: Sequence[str], pipes: bool = True) -> SubmitRequest:
    """Parse and validate a full hyperion-submit argv (without the program name); without `pipes`,
    a --cfg that is a pipe is refused at once (the console, whose form lists files, re-reads it
    at every key: a FIFO waited 10 s each time)."""
    head, command = split_command(argv)
    refuse_dash_values(head)                  # the options only: the command's own argv is its own
    if not head or head[0] not in BACKENDS:
        got = quoted(head[0]) if head else "nothing"
        raise InputError("backend", f"expected 'local' or 'slurm' first, got {got}")
    cfg, rest = _cfg_first(head[1:])
    _refuse_site_only(rest)
    _refuse_repeated(rest)
    site, text = load_site_text(cfg[-1], pipes)
    parser = _parser()
    # The text already read and checked, not the path: a pipe (--cfg <(...)) cannot be
    # read twice, and a file may change between two reads.
    # The comment keeps jsonargparse from reading a one-key text with an empty value ("mem:")
    # as a file path ('File does not exist: mem:'); it parses the same YAML otherwise.
    # A BOM is dropped as YAML drops it at the start of a stream: after the comment it was a stray
    # character ("did not find expected <document start>" for a file load_site had accepted).
    merged = _parse(parser, ["--cfg", "# site file\n" + text.removeprefix("\ufeff")] + rest, cfg_field="--cfg")
    cli = _command_line_said(merged, rest)
    # Checked in the order of the console's form, top down, the missing log path and command
    # last: a bad --num-gpus was hidden behind "no command after '--'" until the form was complete.
    num_gpus = check_count("--num-gpus", merged.num_gpus if merged.num_gpus is not None else site.num_gpus, minimum=0, maximum=MAX_GPUS)
    num_threads = check_count("--num-threads", merged.num_threads if merged.num_threads is not None else site.num_threads, minimum=1, maximum=MAX_THREADS)
    mem, mem_per_cpu = _memory(site, cli)
    time = check_time("--time", cli.time) if cli.time is not None else site.time
    array = parse_array(str(cli.array)) if cli.array is not None else None
    max_jobs = cli.max_jobs_run
    max_jobs_run = None if max_jobs is None else check_count("--max-jobs-run", max_jobs, minimum=1, maximum=MAX_VALUES)
    if merged.output_file is None:
        raise InputError("--output-file", "required: the combined stdout/stderr log path")
    env = _env(cli.env, head[0])
    _check_command(command)
    options = SubmitOptions(
        backend=head[0], cfg=site.path, output_file=str(merged.output_file), command=command,
        num_gpus=num_gpus, num_threads=num_threads, mem=mem, mem_per_cpu=mem_per_cpu, time=time,
        array=array, max_jobs_run=max_jobs_run, env=env,
    )
    if cli.num_gpus is None and options.num_gpus > 0:   # the site file's count: say so, not --num-gpus
        site.gpu_options(options.num_gpus, asked=f"num_gpus: {options.num_gpus} in the site file")
    validate_options(site, options)
    return SubmitRequest(site, options, bool(cli.dry_run))


def parse_submit_argv(argv: Sequence[str], pipes: bool = True) -> tuple[SiteConfig, SubmitOptions]:
    request = parse_submit_request(argv, pipes)
    return request.site, request.options
