"""The max array size a retry's windows use when none is given: the site file's `max_array_size`.

A retry of a checkpoint's missing shards submitted on a cluster must keep its
array indices below the cluster's MaxArraySize, which the site file already
states. `hyperion-checkpoint retry --cfg SITE` and the console's Retry tab (the
site file of the submit record it shows) start from it through this module, and
say where the limit came from; a smaller limit typed or given with --max-array-size
wins, a larger one is capped as a Resubmit caps it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from backends.submit.config import load_site_text


@dataclass(frozen=True)
class ArrayLimit:
    """A largest array size and the site file it came from; `value` None: no limit is known."""

    value: int | None
    path: str = ""            # the site file, "" when the limit came from none
    kind: str = "site file"   # what the file is to the user: the console's "Submit screen's site file"
    why: str = ""             # without a site file, why there is none (where one was looked for)

    @property
    def source(self) -> str:
        """`site file conf/x.yaml`, what the user is told, or "" for no site file."""
        return f"{self.kind} {shown_path(self.path)}" if self.path else ""

    def describe(self) -> str:
        """`1001 (site file conf/x.yaml)`, `none (site file conf/y.yaml sets no max_array_size)`,
        `none (WHY no site file)`, `none`. A bare "none" beside the console's max array size, with no
        site file anywhere, did not say that no limit was known nor where it would have come from."""
        if self.value is None:
            if self.path:
                return f"none ({self.source} sets no max_array_size)"
            return f"none ({self.why})" if self.why else "none"
        return f"{self.value} ({self.source})" if self.path else str(self.value)


NO_LIMIT = ArrayLimit(None)


def shown_path(path: str) -> str:
    """`path` as the user would type it: relative when under the working directory (records hold
    absolute site paths, whole screen lines long), absolute otherwise."""
    try:
        relative = os.path.relpath(path)
    except (ValueError, OSError):     # another drive, the working directory gone: the path as it is
        return path
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def site_array_limit(cfg: str, pipes: bool = True) -> ArrayLimit:
    """The site file's max_array_size; InputError when the site file cannot be read (a limit
    silently dropped would plan windows the cluster refuses). Without `pipes` a FIFO is refused at
    once: the console reads only files (a FIFO a writer holds open froze it 10 s a key)."""
    site = load_site_text(cfg, pipes)[0]
    return ArrayLimit(site.max_array_size, site.shown or site.path)


def retry_limit(given: int | None, site: ArrayLimit) -> int | None:
    """The max array size a retry plans with: the smaller of the one given (typed, --max-array-size)
    and the site's; a larger one given would plan windows the cluster refuses."""
    known = [limit for limit in (given, site.value) if limit is not None]
    return min(known) if known else None
