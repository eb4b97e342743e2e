"""The site configuration: a flat YAML file of defaults and sbatch policy.

One file per site (conf/submit_*.yaml). Loading validates everything the site
controls, so a bad file is reported once, before any job exists; only what the
GPU policy means for a run (default_gpu_type defined, {num_gpus} asked of Slurm,
one --gres) is checked when a run uses it, so a CPU run is not refused for it.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import yaml

from backends.errors import InputError, SiteError
from backends.fileio import UnreadableFile, read_bounded
from backends.printable import cut, printable, quoted
from backends.submit.resources import MAX_GPUS, MAX_THREADS, check_count, check_memory, check_time
from backends.submit.site_options import check_options, gres_items

KEYS = ("num_gpus", "num_threads", "mem", "mem_per_cpu", "time", "sbatch_command",
        "base_options", "cpu_options", "default_gpu_type", "gpu_types", "max_array_size",
        "poll_interval")
MAX_SITE_BYTES = 64 * 1024   # a real site file is well under 2 KiB
MAX_DEPTH = 8                # gpu_types.NAME.options is the deepest a site file goes (4)
MAX_INT_DIGITS = 18          # any larger integer is a typo or an attack (and fits in 64 bits)
MAX_ARRAY_SIZE = 4_000_001   # Slurm's own ceiling for MaxArraySize
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_RESOLVER = yaml.SafeLoader("")
# what a scalar of each tag must read as: `num_threads: !!bool maybe` was a KeyError traceback
_TYPED_TAGS = {_INT_TAG: "an integer", _FLOAT_TAG: "a number", "tag:yaml.org,2002:bool": "true or false",
               "tag:yaml.org,2002:timestamp": "a date"}
# A site may ask for slower polling than the default pace, not for none at all.
MAX_POLL_INTERVAL = 3600.0


@dataclass(frozen=True)
class SiteConfig:
    """Validated site defaults (overridable on the command line) and sbatch policy."""

    num_gpus: int = 0
    num_threads: int = 1
    mem: str | None = None
    mem_per_cpu: str | None = None
    time: str | None = None
    sbatch_command: str = "sbatch"
    base_options: tuple[str, ...] = ()
    cpu_options: tuple[str, ...] = ()
    default_gpu_type: str | None = None
    gpu_types: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    max_array_size: int | None = None
    poll_interval: float | None = None   # seconds: the least time between two polls of Slurm
    path: str = ""                       # resolved, for the record
    shown: str = field(default="", compare=False)   # as --cfg gave it: what errors say, as at load

    @property
    def where(self) -> str:
        """The site file as errors name it: as the user typed it (errors at load do so too)."""
        return printable(self.shown or self.path)

    def gpu_options(self, num_gpus: int, asked: str | None = None) -> tuple[str, ...]:
        """The default GPU type's options with ``{num_gpus}`` expanded; `asked` says where the GPU
        count came from (``--num-gpus N`` unless said)."""
        if self.default_gpu_type is None:
            raise InputError("default_gpu_type", f"GPUs were requested ({asked or f'--num-gpus {num_gpus}'}) "
                             f"but {self.where or 'the site file'} sets no default_gpu_type")
        if self.default_gpu_type not in self.gpu_types:
            known = cut(", ".join(sorted(self.gpu_types)), 200) or "none"
            raise self._refused("default_gpu_type", f"{quoted(self.default_gpu_type)} is not defined under "
                                f"gpu_types (defined: {known})")
        options = self.gpu_types[self.default_gpu_type]
        if not any("{num_gpus}" in option for option in options):
            # --num-gpus would get a torchrun prefix for N processes and no GPU from Slurm. Asked only
            # here, as for default_gpu_type: a CPU-only run never uses gpu_types (the contract's rule).
            raise self._refused(f"gpu_types.{self.default_gpu_type}.options", "no option holds {num_gpus}, "
                                "so Slurm would not be asked for the GPUs --num-gpus requests "
                                "(e.g. --gres=gpu:v100:{num_gpus})")
        return expand(options, num_gpus)

    def _refused(self, field: str, problem: str) -> SiteError:
        """A problem of this site file found when a run uses it, said with the file as at load."""
        return SiteError(field, f"{problem} (in the site file {self.where})" if self.where else problem)

    def resource_options(self, num_gpus: int) -> tuple[str, ...]:
        """cpu_options for a CPU job, else the GPU type's options (the contract's rule)."""
        return self.gpu_options(num_gpus) if num_gpus > 0 else expand(self.cpu_options, num_gpus)

    def base_for(self, num_gpus: int) -> tuple[str, ...]:
        """base_options with ``{num_gpus}`` expanded: the contract permits it in every site option."""
        return expand(self.base_options, num_gpus)

    def sbatch_options(self, num_gpus: int) -> tuple[str, ...]:
        """base_options then the CPU or GPU policy's options, refused if more than one sets --gres.

        sbatch keeps only the last --gres it is given, so a second one would
        silently drop the first (a GPU type's --gres would drop base_options'
        --gres=lustre:1, or the other way round drop the GPUs).
        """
        policy = ((f"gpu_types.{self.default_gpu_type}.options", self.gpu_types.get(self.default_gpu_type or "", ()))
                  if num_gpus > 0 else ("cpu_options", self.cpu_options))
        found = [(field, item) for field, items in (("base_options", self.base_options), policy)
                 for item in gres_items(items)]
        if len(found) > 1:
            (field, first), (other, second) = found[0], found[1]
            where = "that list" if other == field else other
            raise self._refused(field, f"{quoted(first)} sets --gres and {where} sets it again ({quoted(second)}); sbatch "
                                f"keeps only the last --gres, which would replace {quoted(first)}: give every "
                                f"generic resource in one --gres of {other}, e.g. {quoted(_joined_gres(second, first))}")
        return (*self.base_for(num_gpus), *self.resource_options(num_gpus))


def expand(items: tuple[str, ...], num_gpus: int) -> tuple[str, ...]:
    """Site option items with the one placeholder, ``{num_gpus}``, replaced by the effective count."""
    return tuple(item.replace("{num_gpus}", str(num_gpus)) for item in items)


def _joined_gres(first: str, second: str) -> str:
    """``--gres=A,B`` from two --gres items (each ``--gres=V`` or ``--gres V``), for a message."""
    values = [item.partition("=")[2] if "=" in item.split(" ")[0] else item.partition(" ")[2] for item in (first, second)]
    return f"--gres={','.join(values)}"


def _gpu_types(raw: object) -> Mapping[str, tuple[str, ...]]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, Mapping):
        raise InputError("gpu_types", f"expected a mapping of name -> {{options: [...]}}, got {quoted(raw)}")
    types: dict[str, tuple[str, ...]] = {}
    for name, entry in raw.items():
        where = f"gpu_types.{cut(str(name))}"
        if not isinstance(entry, Mapping):
            raise InputError(where, f"expected a mapping with an 'options' list, got {quoted(entry)}")
        extra = sorted(set(entry) - {"options"})
        if extra:
            raise InputError(f"{where}.{extra[0]}", "unknown key (only 'options' is allowed)")
        types[str(name)] = check_options(f"{where}.options", entry.get("options"), allow_gpu=True)
    return MappingProxyType(types)


def _seconds(key: str, value: object) -> float | None:
    """A positive number of seconds (int or float), at most MAX_POLL_INTERVAL."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InputError(key, f"expected a number of seconds, got {quoted(value)}")
    if not 0 < value <= MAX_POLL_INTERVAL:
        raise InputError(key, f"must be above 0 and at most {MAX_POLL_INTERVAL:g} seconds, got {quoted(value)}")
    return float(value)


def _text(key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(key, f"expected a non-empty string, got {quoted(value)}")
    return value.strip()


def _check_plain_text(value: object, field: str = "--cfg", depth: int = 0) -> None:
    """No control or bidi character in any key or string value (the console passes edited values here)."""
    if depth > MAX_DEPTH:
        raise InputError(field, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if printable(value) != value:
            shown = printable(value if len(value) <= 80 else value[:80] + "...")
            raise InputError(field, f"\"{shown}\" holds a control, bidi or invisible character; site values are plain text")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            name = cut(printable(str(key))) if field == "--cfg" else f"{field}.{cut(printable(str(key)))}"
            _check_plain_text(str(key), name, depth + 1)
            _check_plain_text(item, name, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_plain_text(item, field, depth + 1)


def site_from_mapping(raw: Mapping[str, object], path: str = "") -> SiteConfig:
    """Validate an already-read YAML mapping (the console passes edited values here)."""
    _check_plain_text(raw)
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        raise InputError(cut(str(unknown[0])), f"unknown key (known: {', '.join(KEYS)})")
    if raw.get("mem") is not None and raw.get("mem_per_cpu") is not None:
        raise InputError("mem_per_cpu", "the site file sets both mem and mem_per_cpu; keep at most one memory scope")
    sbatch = _text("sbatch_command", raw.get("sbatch_command", "sbatch")) or "sbatch"
    if any(ch.isspace() for ch in sbatch):
        raise InputError("sbatch_command", f"{quoted(sbatch)} must be one program name or path (no arguments)")
    max_array = raw.get("max_array_size")
    return SiteConfig(
        # `num_gpus:` left empty is unset, as every other key (it was "expected an integer, got None")
        num_gpus=check_count("num_gpus", _or(raw.get("num_gpus"), 0), minimum=0, maximum=MAX_GPUS),
        num_threads=check_count("num_threads", _or(raw.get("num_threads"), 1), minimum=1, maximum=MAX_THREADS),
        mem=check_memory("mem", raw.get("mem")),
        mem_per_cpu=check_memory("mem_per_cpu", raw.get("mem_per_cpu")),
        time=check_time("time", raw.get("time"), from_yaml=True),
        sbatch_command=sbatch,
        base_options=check_options("base_options", raw.get("base_options")),
        cpu_options=check_options("cpu_options", raw.get("cpu_options")),
        default_gpu_type=_text("default_gpu_type", raw.get("default_gpu_type")),
        gpu_types=_gpu_types(raw.get("gpu_types")),
        max_array_size=None if max_array is None else check_count("max_array_size", max_array, minimum=1,
                                                                   maximum=MAX_ARRAY_SIZE),
        poll_interval=_seconds("poll_interval", raw.get("poll_interval")),
        path=path,
    )


def _or(value: object, default: object) -> object:
    return default if value is None else value


def _yaml_problem(err: yaml.YAMLError) -> str:
    """PyYAML's own problem and where it is (its str() starts with context, not the cause)."""
    problem, mark = getattr(err, "problem", None), getattr(err, "problem_mark", None)
    context = getattr(err, "context", None)
    if problem and problem.startswith("but ") and context:   # "but found another document" alone
        problem = f"{context}, {problem}"
    if problem and mark is not None:
        return f"{printable(problem)} (line {mark.line + 1}, column {mark.column + 1})"
    return printable(str(err).splitlines()[0]) if str(err) else type(err).__name__


def _where(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"


class _Frame:
    """One open mapping or sequence while the event stream is walked: its field name and position."""

    def __init__(self, field: str, is_mapping: bool) -> None:
        self.field = field
        self.is_mapping = is_mapping
        self.key: str | None = None      # the key whose value comes next (mappings)
        self.keys: set[str] = set()
        self.index = 0                   # the next item (sequences)


def _child_field(frame: _Frame | None) -> str:
    """The field name of the node that comes next in `frame` (a sequence item keeps its sequence's name)."""
    if frame is None:
        return "--cfg"
    if not frame.is_mapping:
        return frame.field
    key = cut(printable(frame.key or ""))
    return key if frame.field == "--cfg" else f"{frame.field}.{key}"


def _check_scalar(field: str, event: yaml.ScalarEvent, frame: _Frame | None) -> None:
    value = event.value
    item = f"item {frame.index + 1} " if frame is not None and not frame.is_mapping else ""
    if printable(value) != value:
        shown = printable(value if len(value) <= 80 else value[:80] + "...")
        raise InputError(field, f"{item}\"{shown}\" holds a control, bidi or invisible character "
                         f"({_where(event)}); site values are plain text")
    is_int = event.tag == _INT_TAG or (event.tag is None and event.implicit[0]
                                       and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _INT_TAG)
    if is_int and _int_digits(value) > MAX_INT_DIGITS:
        raise InputError(field, f"{item}a number of {_int_digits(value)} digits "
                         f"({_where(event)}); site numbers have at most {MAX_INT_DIGITS}")
    tag = event.tag if event.tag not in (None, "!") else (
        _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) if event.tag is None and event.implicit[0] else None)
    if tag in _TYPED_TAGS:
        try:   # `!!int ""`, `!!float ""` (IndexError), `!!timestamp x` (AttributeError), `0x_` (ValueError)
            _RESOLVER.yaml_constructors[tag](_RESOLVER, yaml.ScalarNode(tag, value))
        except (ValueError, KeyError, IndexError, AttributeError, TypeError, OverflowError):
            raise InputError(field, f"{item}YAML cannot read {quoted(value)} ({_where(event)}) as "
                             f"{_TYPED_TAGS[tag]}") from None
    # `poll_interval: 1:30.5` is a YAML 1.1 base-60 float (90.5), as `1:30` is a base-60 integer
    is_float = not is_int and ":" in value and (event.tag == _FLOAT_TAG or (
        event.tag is None and event.implicit[0]
        and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _FLOAT_TAG))
    kind = _int_base(value) if (is_int or is_float) and field != "time" else None   # time says so itself
    if kind is not None:
        build = _RESOLVER.construct_yaml_float if is_float else _RESOLVER.construct_yaml_int
        number = build(yaml.ScalarNode(_FLOAT_TAG if is_float else _INT_TAG, value))
        raise InputError(field, f"{item}YAML reads {value} ({_where(event)}) as the {kind} number {number}; "
                         "write the number in plain decimal digits")


def _int_digits(text: str) -> int:
    """How many digits an integer's text holds: `0x` + 50000 `f` is 50000 (the `f`s are no isdigit(),
    and their decimal, 60206 digits, was past what Python converts: a bare ValueError, no field said)."""
    digits = text.replace("_", "").lstrip("+-")
    if digits[:2].lower() == "0x":
        return sum(ch in "0123456789abcdefABCDEF" for ch in digits[2:])
    return sum(ch.isdigit() for ch in (digits[2:] if digits[:2].lower() == "0b" else digits))


def _int_base(text: str) -> str | None:
    """Which base other than ten YAML 1.1 reads an integer's text in, if it does: `mem: 0100` was
    --mem=64 (octal), `num_threads: 1:00` 60 (base 60), with no word said."""
    digits = text.replace("_", "").lstrip("+-")
    if ":" in digits:
        return "base-60"
    if digits[:2].lower() in ("0x", "0b"):
        return "hexadecimal" if digits[1] in "xX" else "binary"
    return "octal" if len(digits) > 1 and digits[0] == "0" else None


def check_yaml_events(text: str) -> list[yaml.Event]:
    """Refuse, before PyYAML builds anything, what a site file never needs and an attacker uses;
    the events read, for `_EventLoader` to build the value from without parsing the text again.

    Walks the event stream (no recursion, so deep nesting cannot overflow the
    stack): anchors and aliases (an alias bomb expands to gigabytes), nesting
    deeper than MAX_DEPTH, a key given twice (PyYAML keeps the last silently),
    control and bidi characters in any key or value, and integers too long
    for any sane setting (Python refuses to convert more than 4300 digits).
    """
    stack: list[_Frame] = []
    events: list[yaml.Event] = []
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        events.append(event)
        frame = stack[-1] if stack else None
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            _advance(stack[-1] if stack else None)
            continue
        if not isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent,
                                  yaml.AliasEvent)):
            continue
        is_key = frame is not None and frame.is_mapping and frame.key is None
        field = frame.field if is_key else _child_field(frame)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise InputError(field, f"YAML anchors and aliases are not allowed in a site file ({_where(event)})")
        if is_key:
            if not isinstance(event, yaml.ScalarEvent):
                raise InputError("--cfg", f"a key that is not plain text ({_where(event)})")
            frame.key = event.value
            if event.value == "<<" and event.style is None or event.tag == "tag:yaml.org,2002:merge":
                # a merge sets keys from inside it: `<<: [{num_threads: 4}, {num_threads: 7}]` gave 3 values
                raise InputError("<<", f"YAML merge keys are not allowed in a site file ({_where(event)}); "
                                 "write each key once")
            _check_scalar(_child_field(frame), event, None)
            if event.value in frame.keys:
                raise InputError(_child_field(frame), f"key given twice ({_where(event)}); keep one")
            frame.keys.add(event.value)
            continue
        if isinstance(event, yaml.ScalarEvent):
            _check_scalar(field, event, frame)
            _advance(frame)
            continue
        if len(stack) >= MAX_DEPTH:
            raise InputError(field, f"nested deeper than {MAX_DEPTH} levels ({_where(event)})")
        stack.append(_Frame(field, isinstance(event, yaml.MappingStartEvent)))
    return events


class _EventLoader(yaml.SafeLoader):
    """yaml.safe_load's composer, constructor and resolver, fed events already parsed.

    The pure Python parser is the slow part of loading a site file, and the
    checks above have just run it over the whole text: the value is built from
    their events rather than from a second parse (about a millisecond of every
    hyperion-submit start). A subclass of SafeLoader, so that whatever it
    resolves and constructs, it still does.
    """

    def __init__(self, events: list[yaml.Event]) -> None:   # no reader, scanner or parser
        self._events, self._next = events, 0
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    def check_event(self, *choices: type) -> bool:
        if self._next >= len(self._events):
            return False
        return not choices or isinstance(self._events[self._next], choices)

    def peek_event(self) -> yaml.Event | None:
        return self._events[self._next] if self._next < len(self._events) else None

    def get_event(self) -> yaml.Event | None:
        event = self.peek_event()
        if event is not None:
            self._next += 1
        return event

    def dispose(self) -> None:
        self._events = []


def _advance(frame: _Frame | None) -> None:
    """A value (or item) of `frame` is complete."""
    if frame is None:
        return
    if frame.is_mapping:
        frame.key = None
    else:
        frame.index += 1


def _decode(path: str | Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError("--cfg", f"{printable(str(path))} is not UTF-8 text (byte 0x{err.object[err.start]:02x} "
                         f"at offset {err.start})") from None


def read_site_text(path: str | Path, pipes: bool = True) -> str:
    """The text of a site file: a regular file or, with `pipes`, a pipe (``--cfg <(...)``) of at most
    MAX_SITE_BYTES. The console's site list holds files: a FIFO there is refused, not waited for.

    A FIFO nobody writes to, /dev/zero, a directory or a symlink loop is one
    InputError("--cfg", ...), never a hang or an unbounded read.
    """
    if not str(path).strip():
        raise InputError("--cfg", "expected a site YAML path, got ''")
    try:
        data = read_bounded(path, MAX_SITE_BYTES, allow_pipe=pipes)
    except UnreadableFile as err:
        raise InputError("--cfg", f"cannot read {printable(str(path))}: {err}") from None
    if not data and _is_pipe(path):
        raise InputError("--cfg", f"cannot read {printable(str(path))}: a pipe or FIFO that no program "
                         "wrote anything to")
    return _decode(path, data)


def _is_pipe(path: str | Path) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def parse_site_text(text: str, path: str | Path) -> Mapping[str, object]:
    """The YAML mapping of a site file's text; InputError naming the field for anything hostile.

    An empty (or comment-only) file is refused: it is almost always a file
    truncated or not yet written, and jsonargparse would reject it later anyway.
    """
    shown = printable(str(path))
    try:
        raw = _EventLoader(check_yaml_events(text)).get_single_data()   # as yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError("--cfg", f"{shown} is not valid YAML: {_yaml_problem(err)}") from None
    except InputError:
        raise
    except (RecursionError, ValueError, OverflowError) as err:   # belt and braces: never a traceback
        raise InputError("--cfg", f"{shown} cannot be read as a site file ({type(err).__name__})") from None
    if raw is None:
        raise InputError("--cfg", f"{shown} is empty; a site file holds keys such as num_gpus, "
                         "base_options and cpu_options (see conf/submit_coe_v100.yaml)")
    if not isinstance(raw, Mapping):
        raise InputError("--cfg", f"{shown} must hold a mapping of keys, got {type(raw).__name__}")
    return raw


def read_yaml(path: str | Path) -> Mapping[str, object]:
    """The YAML mapping of a site file; InputError("--cfg", ...) if unreadable."""
    return parse_site_text(read_site_text(path), path)


def _site_path(path: str | Path) -> str:
    """Where the site file is, for the record: resolved for a file, as given for a pipe (/dev/fd/63)."""
    return os.path.abspath(path) if _is_pipe(path) else str(Path(path).resolve())


def load_site_text(path: str | Path, pipes: bool = True) -> tuple[SiteConfig, str]:
    """The validated site and the text it came from (read once: a pipe cannot be read twice)."""
    text = read_site_text(path, pipes)
    try:
        site = site_from_mapping(parse_site_text(text, path), _site_path(path))
        return replace(site, shown=str(path)), text
    except SiteError:
        raise
    except InputError as err:
        where = printable(str(path))
        problem = err.problem if where in err.problem else f"{err.problem} (in the site file {where})"
        raise SiteError(err.field, problem) from None


def load_site(path: str | Path) -> SiteConfig:
    """Read and validate a site YAML file (raises InputError naming the bad key)."""
    return load_site_text(path)[0]
