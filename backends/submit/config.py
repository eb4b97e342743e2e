"""The site configuration: a flat YAML file of defaults and sbatch policy.

One file per site (conf/submit_*.yaml). Loading validates everything the site
controls, so a bad file is reported once, before any job exists.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from backends.errors import InputError
from backends.submit.resources import check_count, check_memory, check_time
from backends.submit.site_options import check_options

KEYS = ("num_gpus", "num_threads", "mem", "mem_per_cpu", "time", "sbatch_command",
        "base_options", "cpu_options", "default_gpu_type", "gpu_types", "max_array_size",
        "poll_interval")
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
    path: str = ""

    def gpu_options(self, num_gpus: int) -> tuple[str, ...]:
        """The default GPU type's options with ``{num_gpus}`` expanded."""
        if self.default_gpu_type is None:
            raise InputError("default_gpu_type", f"GPUs were requested (--num-gpus {num_gpus}) but "
                             f"{self.path or 'the site file'} sets no default_gpu_type")
        if self.default_gpu_type not in self.gpu_types:
            known = ", ".join(sorted(self.gpu_types)) or "none"
            raise InputError("default_gpu_type", f"{self.default_gpu_type!r} is not defined under "
                             f"gpu_types (defined: {known})")
        return tuple(o.replace("{num_gpus}", str(num_gpus)) for o in self.gpu_types[self.default_gpu_type])

    def resource_options(self, num_gpus: int) -> tuple[str, ...]:
        """cpu_options for a CPU job, else the GPU type's options (the contract's rule)."""
        return self.gpu_options(num_gpus) if num_gpus > 0 else self.cpu_options


def _gpu_types(raw: object) -> Mapping[str, tuple[str, ...]]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, Mapping):
        raise InputError("gpu_types", f"expected a mapping of name -> {{options: [...]}}, got {raw!r}")
    types: dict[str, tuple[str, ...]] = {}
    for name, entry in raw.items():
        where = f"gpu_types.{name}"
        if not isinstance(entry, Mapping):
            raise InputError(where, f"expected a mapping with an 'options' list, got {entry!r}")
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
        raise InputError(key, f"expected a number of seconds, got {value!r}")
    if not 0 < value <= MAX_POLL_INTERVAL:
        raise InputError(key, f"must be above 0 and at most {MAX_POLL_INTERVAL:g} seconds, got {value!r}")
    return float(value)


def _text(key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(key, f"expected a non-empty string, got {value!r}")
    return value.strip()


def site_from_mapping(raw: Mapping[str, object], path: str = "") -> SiteConfig:
    """Validate an already-read YAML mapping (the console passes edited values here)."""
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        raise InputError(str(unknown[0]), f"unknown key in {path or 'the site file'} (known: {', '.join(KEYS)})")
    if raw.get("mem") is not None and raw.get("mem_per_cpu") is not None:
        raise InputError("mem_per_cpu", "the site file sets both mem and mem_per_cpu; keep at most one memory scope")
    sbatch = _text("sbatch_command", raw.get("sbatch_command", "sbatch")) or "sbatch"
    if any(ch.isspace() for ch in sbatch):
        raise InputError("sbatch_command", f"{sbatch!r} must be one program name or path (no arguments)")
    max_array = raw.get("max_array_size")
    return SiteConfig(
        num_gpus=check_count("num_gpus", raw.get("num_gpus", 0), minimum=0),
        num_threads=check_count("num_threads", raw.get("num_threads", 1), minimum=1),
        mem=check_memory("mem", raw.get("mem")),
        mem_per_cpu=check_memory("mem_per_cpu", raw.get("mem_per_cpu")),
        time=check_time("time", raw.get("time"), from_yaml=True),
        sbatch_command=sbatch,
        base_options=check_options("base_options", raw.get("base_options")),
        cpu_options=check_options("cpu_options", raw.get("cpu_options")),
        default_gpu_type=_text("default_gpu_type", raw.get("default_gpu_type")),
        gpu_types=_gpu_types(raw.get("gpu_types")),
        max_array_size=None if max_array is None else check_count("max_array_size", max_array, minimum=1),
        poll_interval=_seconds("poll_interval", raw.get("poll_interval")),
        path=path,
    )


def _yaml_problem(err: yaml.YAMLError) -> str:
    """PyYAML's own problem and where it is (its str() starts with context, not the cause)."""
    problem, mark = getattr(err, "problem", None), getattr(err, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(err).splitlines()[0]


def read_yaml(path: str | Path) -> Mapping[str, object]:
    """The YAML mapping of a site file; InputError("--cfg", ...) if unreadable.

    An empty (or comment-only) file is refused: it is almost always a file
    truncated or not yet written, and jsonargparse would reject it later anyway.
    """
    if not str(path).strip():
        raise InputError("--cfg", "expected a site YAML path, got ''")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InputError("--cfg", f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise InputError("--cfg", f"{path} is not UTF-8 text (byte 0x{err.object[err.start]:02x} "
                         f"at offset {err.start})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError("--cfg", f"{path} is not valid YAML: {_yaml_problem(err)}") from None
    if raw is None:
        raise InputError("--cfg", f"{path} is empty; a site file holds keys such as num_gpus, "
                         "base_options and cpu_options (see conf/submit_coe_v100.yaml)")
    if not isinstance(raw, Mapping):
        raise InputError("--cfg", f"{path} must hold a mapping of keys, got {type(raw).__name__}")
    return raw


def load_site(path: str | Path) -> SiteConfig:
    """Read and validate a site YAML file (raises InputError naming the bad key)."""
    absolute = str(Path(path).resolve())
    return site_from_mapping(read_yaml(path), absolute)
