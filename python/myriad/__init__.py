"""Myriad: a simulator and planner for AI clusters, from Python.

Every function takes a scenario as a path to a ``myriad/1`` file (YAML or JSON) or as a
``dict`` with the same keys, and returns the same object the CLI prints with ``--json``, as
plain Python ``dict``/``list``/``float`` values. Sweeps return pandas DataFrames.

>>> import myriad
>>> t = myriad.train("examples/dgx-superpod-h100.yaml")          # doctest: +SKIP
>>> round(t["step_time_s"], 2), t["fits"]                         # doctest: +SKIP
(8.94, True)
>>> s = {"format": "myriad/1", "cluster": {"accelerator": "h100-sxm", "count": 1024}}
>>> myriad.cluster(s)["switches_total"]                           # doctest: +SKIP
48

The Rust engine runs with the GIL released, so threads (or ``myriad.ray.sweep``) run
several estimates at once.

Errors: bad input (a scenario field, a keyword argument's value) raises ``myriad.Error``, a
``ValueError`` whose message is the CLI's: the file (``<dict>`` for a dict), the field path,
the value and what was expected, e.g. ``<dict>: cluster.count: 1001 does not fill whole
scale-up domains of 8``. An argument of the wrong type raises ``TypeError`` naming it; a
file that cannot be read, the ``OSError`` for its errno (``FileNotFoundError``, ...) with
the path in ``.filename``.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import re
import struct
import sys
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

from . import _myriad

if TYPE_CHECKING:  # pandas is only needed for sweeps
    import pandas

__version__ = _myriad.__version__

Error = _myriad.Error

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]

__all__ = [
    "cluster",
    "train",
    "search",
    "plan",
    "reliability",
    "validate",
    "serve",
    "serve_validate",
    "sched",
    "collective",
    "sweep",
    "report",
    "Error",
    "__version__",
]


def _json(value: Any, name: str) -> str:
    """``value`` as JSON text; a value JSON cannot hold (NaN, infinity, a set, an object)
    is an error naming its field, as the engine names a field it refuses (``json.dumps``
    would write ``NaN``, which no parser takes, or name no field)."""

    # numpy's booleans (a DataFrame's bool cells) are neither bool nor numbers.Real; numpy
    # is imported already wherever one exists.
    np = sys.modules.get("numpy")
    np_bool = (np.bool_,) if np is not None else ()

    def check(v: Any, path: str) -> None:
        if isinstance(v, (str, bool, *np_bool)) or v is None:
            return
        if isinstance(v, numbers.Real):
            if not math.isfinite(v):
                raise Error(
                    f"{name}: {path or '(document)'}: {v} is not a finite number "
                    "(JSON and YAML files hold no NaN or infinity)"
                )
            return
        if isinstance(v, Mapping):
            for k, x in v.items():
                check(x, f"{path}.{k}" if path else str(k))
            return
        if isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                check(x, f"{path}[{i}]")
            return
        raise TypeError(
            f"{name}: {path or '(document)'}: a {type(v).__name__} is not a JSON value "
            "(str, number, bool, None, list or dict)"
        )

    def plain(v: Any) -> Any:  # numpy's booleans and numbers.Real types
        if isinstance(v, np_bool):
            return bool(v)
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            return float(v)
        raise TypeError(f"{type(v).__name__} is not JSON serializable")

    check(value, "")
    return json.dumps(value, allow_nan=False, default=plain)


_U64 = (1 << 64) - 1
_USIZE = (1 << (8 * struct.calcsize("P"))) - 1


def _uint(name: str, v: Any, lo: int = 0, hi: int = _U64, bits: int = 64) -> Optional[int]:
    """``v`` as the engine's unsigned integer of ``bits`` bits (``None`` as it is): a value
    that type cannot hold is an ``Error`` naming ``name`` and the range the engine
    takes (``lo`` to ``hi``; values inside the type but outside the range are the engine's
    to refuse, with its own message), rather than pyo3's nameless ``OverflowError``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: {v!r} is not an integer")
    i = int(v)
    if i < 0 or i >= 1 << bits:
        raise Error(f"{name}: {i} is not an integer from {lo} to {hi}")
    return i


def _str(name: str, v: Any, none: bool = False) -> Optional[str]:
    """``v`` as the engine's text argument ``name`` (``None`` as it is where ``none``): any
    other type is a ``TypeError`` naming ``name``, rather than pyo3's nameless "'int'
    object is not an instance of 'str'"."""
    if v is None and none:
        return None
    if not isinstance(v, str):
        raise TypeError(f"{name}: {v!r} is not a string")
    return v


def _path(v: Any, name: str) -> str:
    """``v`` as a path (str, bytes or a PathLike such as pathlib.Path); any other type is a
    ``TypeError`` naming ``name`` (``os.fsdecode``'s names nothing)."""
    if not isinstance(v, (str, bytes, os.PathLike)):
        raise TypeError(
            f"{name}: a {type(v).__name__} is not a path (str or os.PathLike) or a dict"
        )
    return os.fsdecode(v)


def _text(scenario: Scenario, name: str = "scenario") -> tuple[str, str]:
    """(file name for messages, scenario text)."""
    if isinstance(scenario, Mapping):
        return "<dict>", _json(scenario, "<dict>")
    path = _path(scenario, name)
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def _names(name: str, v: Any) -> list:
    """A list of names given as one string (the CLI's comma-separated text) or an iterable
    of strings; any other type is a ``TypeError`` naming ``name``."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, (bytes, bytearray, Mapping)) or not isinstance(v, Iterable):
        raise TypeError(f"{name}: {v!r} is not a string or a list of strings")
    return [_str(name, x) for x in v]


def cluster(scenario: Scenario) -> dict:
    """Build the cluster: hierarchy, tiers, bill of materials, power and cost
    (``myriad cluster --json``).

    ``scenario``: a ``myriad/1`` file (str or pathlib.Path, YAML or JSON) or a dict with the
    same keys. Raises ``myriad.Error`` naming the field a scenario gets wrong.

    >>> c = myriad.cluster({"format": "myriad/1",
    ...                     "cluster": {"accelerator": "h100-sxm", "count": 1024}})
    >>> c["accelerators"], c["switches"]
    (1024, {'leaf': 32, 'spine': 16})
    """
    return json.loads(_myriad.cluster(*_text(scenario)))


def train(scenario: Scenario, backend: str = "analytical") -> dict:
    """Estimate one training step: time and breakdown, MFU, memory, time to train
    (``myriad train --json``; ``backend`` is its ``--backend``).

    ``scenario``: a ``myriad/1`` file (str or pathlib.Path) or a dict with its keys. The
    result's ``breakdown`` components (``*_s``) add up to ``step_time_s``. ``backend``:
    ``"analytical"`` (the collective model), or ``"flow"``: every collective of the step
    simulated flow by flow on the built topology (every group of a dimension at once, the
    scenario's ``cluster.faults``), which adds ``flow``: each collective simulated and the
    analytical step of the same plan beside it.

    >>> t = myriad.train("examples/dgx-superpod-h100.yaml")
    >>> t["format"], t["model"], t["accelerators"], t["fits"]
    ('myriad-train/1', 'GPT-3 175B', 1024, True)
    >>> 0 < t["mfu"] < 1
    True
    >>> f = myriad.train("examples/dgx-superpod-h100.yaml", backend="flow")
    >>> f["flow"]["backend"], len(f["flow"]["collectives"]) > 0
    ('flow', True)
    >>> f["flow"]["analytical"]["step_time_s"] == t["step_time_s"]
    True
    """
    backend = _str("backend", backend)
    return json.loads(_myriad.train(*_text(scenario), backend))


def _global_batches(gb: Union[int, str, Sequence[int]]) -> list:
    """``global_batch`` as the engine takes it: one batch, a list, or the CLI's text
    (``"512,1024"``, or ``"512..4096"`` doubling), every batch a positive integer."""
    bad = Error(
        f"global_batch: `{gb}` is not a positive batch, a list of them, "
        "or a list (512,1024) or a range (512..4096)"
    )
    if isinstance(gb, str):
        return _myriad.parse_global_batches(gb)  # the CLI's parser
    items: list
    if isinstance(gb, (bytes, bytearray)):
        # Iterated, b"512" was the batches 53, 49 and 50 (its bytes).
        raise bad
    if isinstance(gb, Iterable):
        items = list(gb)
    else:
        items = [gb]
    out = []
    for x in items:
        if isinstance(x, str):
            x = x.strip()
            if not x.isdigit():
                raise bad
        elif isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral):
            if not float(x).is_integer():  # 512.0 is a batch; 512.5 and nan are not
                raise bad
        elif isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise bad
        v = int(x)
        if not 1 <= v <= _U64:  # past u64, pyo3's nameless OverflowError
            raise bad
        out.append(v)
    if not out:
        raise bad
    return out


def search(
    scenario: Scenario,
    top: int = 10,
    global_batch: Union[int, str, Sequence[int], None] = None,
) -> dict:
    """Search every valid parallel plan; the ``top`` fastest (``myriad search --json``;
    ``top`` and ``global_batch`` are its ``--top`` and ``--global-batch``).
    ``global_batch`` replaces the scenario's global batch with the batches to consider: a
    list (``[512, 1024]``), one batch, or the CLI's ``"512,1024"`` or ``"512..4096"``.
    (``seconds`` and ``configs_per_second`` are this run's wall time; every other field is
    the same on every call.)

    >>> r = myriad.search("examples/dgx-superpod-h100.yaml", top=3)
    >>> len(r["top"]), r["feasible"] <= r["evaluated"] <= r["space"]
    (3, True)
    >>> times = [p["step_time_s"] for p in r["top"]]
    >>> times == sorted(times)
    True
    """
    gb = _global_batches(global_batch) if global_batch is not None else None
    top = _uint("top", top, lo=1, hi=_USIZE, bits=8 * struct.calcsize("P"))
    return json.loads(_myriad.search(*_text(scenario), top, gb))


def plan(scenario: Scenario) -> dict:
    """Candidate clusters for the model and token budget, the Pareto front of time
    against cost and the choice (``myriad plan --json``).

    >>> p = myriad.plan("examples/plan-llama3-70b.yaml")
    >>> p["format"], any(c["pareto"] for c in p["candidates"])
    ('myriad-plan/1', True)
    """
    return json.loads(_myriad.plan(*_text(scenario)))


def reliability(
    scenario: Scenario,
    days: Optional[float] = None,
    replicas: Optional[int] = None,
    seed: Optional[int] = None,
    compare: Union[str, Iterable[str]] = (),
) -> dict:
    """Failures, checkpointing, ETTR and goodput by seeded Monte Carlo
    (``myriad reliability --json``; the keywords are its ``--days``, ``--replicas``,
    ``--seed`` and ``--compare``): ``days`` simulates a window of that many days instead of
    the whole run, ``replicas`` and ``seed`` override the scenario's (the same seed gives
    the same result), ``compare`` from ``size``, ``domain``, ``checkpoint`` (a list, or
    the CLI's ``"size,domain"`` or ``"all"``).

    >>> r = myriad.reliability("examples/reliability-llama3.yaml", days=54, replicas=20, seed=7)
    >>> r == myriad.reliability("examples/reliability-llama3.yaml", days=54, replicas=20, seed=7)
    True
    >>> 0 < r["ettr"] <= 1
    True
    """
    cmp = _names("compare", compare)
    if days is not None:
        if isinstance(days, bool) or not isinstance(days, numbers.Real):
            raise TypeError(f"days: {days!r} is not a number")
        try:
            days = float(days)
        except OverflowError:  # an int past a float: Python's message names nothing
            raise Error(f"days: {days} is not a positive number of days") from None
    replicas = _uint("replicas", replicas, lo=1, hi=_myriad.MAX_REPLICAS, bits=32)
    seed = _uint("seed", seed)
    return json.loads(_myriad.reliability(*_text(scenario), days, replicas, seed, cmp))


def validate(measurements: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> dict:
    """Predict every case of a ``myriad-validation/1`` file (path or dict) and compare
    with the measurements (``myriad validate --json``).

    >>> v = myriad.validate("validation/training-heldout-megascale.json")
    >>> case = v["cases"][0]
    >>> v["format"], len(v["cases"]), case["predicted_step_time_s"] > 0
    ('myriad-validation-report/1', 8, True)
    """
    return json.loads(_myriad.validate(*_text(measurements)))


def _base(scenario: Scenario) -> str:
    """The directory files named inside a scenario are relative to."""
    if isinstance(scenario, Mapping):
        return os.getcwd()
    return os.path.dirname(os.path.abspath(os.fsdecode(scenario)))


def serve(
    scenario: Scenario,
    seed: Optional[int] = None,
    requests: Optional[int] = None,
    load_sweep: bool = False,
    search: bool = False,
) -> dict:
    """Simulate the scenario's ``serving`` deployment request by request: throughput,
    TTFT/TPOT percentiles, goodput, KV-cache use (``myriad serve --json``; ``seed`` and
    ``requests`` are its ``--seed`` and ``--requests``, the same seed giving the same
    result); with ``serving.concurrency`` (a closed loop of clients), also
    ``concurrency_sweep``: throughput per accelerator against each user's speed at 1, 2,
    4, ... clients. ``load_sweep=True`` adds ``load_sweep``: latency and throughput at 25%
    to 150% of the arrival rate, which ``report("serve", ...)`` charts as ``--report``
    does. ``search=True`` searches roles, TP/EP and batch limits for the most goodput per
    accelerator instead (``myriad serve --search --json``: ``candidates``, best first, and
    ``no_feasible_candidate``).

    >>> r = myriad.serve("examples/serve-llama3-70b-h100.yaml", requests=200, seed=3)
    >>> r["result"]["completed"], r == myriad.serve("examples/serve-llama3-70b-h100.yaml",
    ...                                             requests=200, seed=3)
    (200, True)
    >>> r["result"]["ttft"]["p50"] <= r["result"]["ttft"]["p99"]
    True
    """
    seed = _uint("seed", seed)
    requests = _uint("requests", requests, lo=1, hi=_myriad.MAX_REQUESTS)
    if not isinstance(load_sweep, bool):
        raise TypeError(f"load_sweep: {load_sweep!r} is not True or False")
    if not isinstance(search, bool):
        raise TypeError(f"search: {search!r} is not True or False")
    file, text = _text(scenario)
    return json.loads(
        _myriad.serve(file, text, _base(scenario), seed, requests, load_sweep, search)
    )


def serve_validate(measurements: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> dict:
    """Predict every row of a ``myriad-measurements/1`` serving file (path or dict)
    (``myriad serve --validate FILE --json``).

    >>> v = myriad.serve_validate("validation/serving-heldout-trtllm-adp.json")
    >>> sorted(v), len(v["cases"])
    (['cases', 'groups', 'metrics', 'summary', 'warnings'], 3)
    """
    return json.loads(_myriad.serve_validate(*_text(measurements)))


def sched(
    scenario: Optional[Scenario] = None,
    openb: Optional[Union[str, "os.PathLike[str]"]] = None,
    policies: Union[str, Sequence[str], None] = None,
    seed: Optional[int] = None,
) -> dict:
    """Run the scenario's ``scheduling`` workload under several policies side by side, or
    replay the Alibaba openb trace in directory ``openb`` (``myriad sched --json``; the
    keywords are its ``--openb``, ``--policies`` and ``--seed``); ``policies``: a list of
    names, or the CLI's ``"fifo,backfill"``.

    >>> r = myriad.sched("examples/sched-llama3-islands.yaml", policies=["fifo", "backfill"], seed=1)
    >>> [p["policy"]["name"] for p in r["policies"]]
    ['fifo', 'backfill']
    """
    if scenario is None and openb is None:
        raise Error("give a scenario or an openb directory")
    seed = _uint("seed", seed)
    file, text = _text(scenario) if scenario is not None else ("<openb>", None)
    base = _base(scenario) if scenario is not None else os.getcwd()
    ob = _path(openb, "openb") if openb is not None else None
    # A string is the CLI's "fifo,backfill".
    pol = _names("policies", policies) if policies is not None else None
    return json.loads(_myriad.sched(file, text, base, ob, pol, seed))


def collective(
    scenario: Scenario,
    op: str,
    bytes: Union[int, float, str, None] = None,
    sweep: Optional[str] = None,
    group: str = "all",
    algorithm: str = "auto",
    backend: str = "analytical",
) -> dict:
    """Time a collective on a group of the scenario's cluster, nccl-tests conventions
    (``myriad collective --json``): ``op`` all-reduce, all-gather, reduce-scatter,
    all-to-all, broadcast, send-recv; ``bytes`` (a whole number of bytes, ``1 << 30``, or a
    size, ``"1GiB"``; a fraction of a byte is an error) or ``sweep`` (``"8B..16GiB"``);
    ``group`` tp, dp, ep, pp, cp, all or ranks ``"0-7"``; ``algorithm`` ring, tree, nvls,
    hierarchical, direct or auto; ``backend`` ``"analytical"`` (the collective model) or
    ``"flow"`` (simulated flow by flow on the routed topology, with the scenario's
    ``cluster.faults``; adds the most loaded ``links`` of the largest size).

    >>> r = myriad.collective("examples/dgx-superpod-h100.yaml", "all-reduce",
    ...                       bytes="1GiB", group="tp")
    >>> r["format"], r["bytes"], r["time_s"] > 0
    ('myriad-collective/1', 1073741824, True)
    >>> f = myriad.collective("examples/dgx-superpod-h100.yaml", "all-reduce",
    ...                       bytes=1 << 30, group="tp", backend="flow")
    >>> f["backend"], f["algorithm"], len(f["links"]) > 0
    ('flow', 'nvls', True)
    """
    if isinstance(bytes, bool) or not isinstance(bytes, (str, numbers.Real, type(None))):
        raise TypeError(f"bytes: {bytes!r} is not a size (a number of bytes or \"1GiB\")")
    b = None if bytes is None else str(bytes)
    op, group, algorithm = _str("op", op), _str("group", group), _str("algorithm", algorithm)
    sweep, backend = _str("sweep", sweep, none=True), _str("backend", backend)
    return json.loads(
        _myriad.collective(*_text(scenario), op, b, sweep, group, algorithm, backend)
    )


def _shard(shard: Union[str, Sequence[int]]) -> tuple[int, int]:
    """``(k, n)`` of a shard given as ``(k, n)`` or the CLI's ``"K/N"``: 1 <= k <= n."""
    if isinstance(shard, str):
        m = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", shard)
        if m is None:
            raise Error(f"shard: `{shard}` is not K/N (shard K of N, 1-based), e.g. \"3/16\"")
        k, n = int(m.group(1)), int(m.group(2))
    else:
        try:
            k, n = shard
        except (TypeError, ValueError):
            raise Error(
                f"shard: {shard!r} is not (k, n) or \"K/N\" (shard K of N, 1-based)"
            ) from None
        k, n = _uint("shard", k, lo=1), _uint("shard", n, lo=1)
        if k is None or n is None:
            raise TypeError(f"shard: {shard!r} is not a pair of integers")
    if not 1 <= n <= _U64:
        raise Error(f"shard: `{k}/{n}`: N must be 1 to {_U64}")
    if not 1 <= k <= n:
        raise Error(f"shard: `{k}/{n}`: K must be 1 to {n} (K is 1-based)")
    return k, n


def sweep(spec: Scenario, shard: Union[str, Sequence[int]] = (1, 1)) -> "pandas.DataFrame":
    """Evaluate a ``myriad-sweep/1`` grid (or shard ``k`` of ``n`` of it: ``(k, n)`` or
    the CLI's ``"K/N"``) and return a pandas DataFrame with the same columns and rows as
    ``myriad sweep`` writes. ``spec``: a spec file (its ``base:`` relative to the file) or
    a dict (its ``base:`` a scenario dict, or a path relative to the working directory).

    Columns are typed as the sweep's Parquet output types them, whatever the rows hold:
    ``row``, integer outputs and varied fields whose values are all integers ``int64``;
    numbers ``float64``; ``fits`` and boolean fields ``bool``; text (and ``error``) strings.
    Where a row failed (its ``error`` set, its outputs empty) an integer column is
    ``Int64`` and a boolean one ``boolean`` (pandas' nullable types).

    >>> df = myriad.sweep("examples/sweep/oversubscription.yaml")
    >>> len(df), str(df["training.vpp"].dtype), str(df["step_time_s"].dtype)
    (8, 'int64', 'float64')
    >>> half = myriad.sweep("examples/sweep/oversubscription.yaml", shard=(1, 2))
    >>> list(half["row"])
    [0, 2, 4, 6]
    """
    k, n = _shard(shard)
    file, text = _text(spec, "spec")
    base = _sweep_base(spec)
    return _frame(_myriad.sweep_csv(file, text, base, k, n), _myriad.sweep_kinds(file, text, base))


def _sweep_base(spec: Scenario, absolute: bool = False) -> str:
    """The folder a spec's ``base:`` path is relative to: the spec file's (as the CLI's
    ``Sweep::load``), or the working directory for a dict."""
    if isinstance(spec, Mapping):
        return os.getcwd() if absolute else ""
    path = _path(spec, "spec")
    return os.path.dirname(os.path.abspath(path) if absolute else path)


def _frame(csv: str, kinds: Sequence[str]) -> "pandas.DataFrame":
    """The DataFrame of ``myriad sweep`` CSV text, each column typed by its kind (``int``,
    ``float``, ``bool``, ``str``): an empty cell is missing, a text cell as written (a
    varied ``"NA"`` or ``"1e3"`` stays a string)."""
    import pandas as pd

    header = next(iter(csv.split("\n", 1)), "")
    text = [c for c, k in zip(_csv_fields(header), kinds) if k == "str"]
    df = pd.read_csv(
        io.StringIO(csv), keep_default_na=False, na_values=[""], dtype={c: object for c in text}
    )
    for col, kind in zip(df.columns, kinds):
        s = df[col]
        missing = bool(s.isna().any())
        try:
            if kind == "int":
                df[col] = s.astype("Int64" if missing else "int64")
            elif kind == "float":
                df[col] = s.astype("float64")
            elif kind == "bool":
                df[col] = s.astype("boolean" if missing else "bool")
        except (OverflowError, TypeError, ValueError):
            pass  # e.g. an integer past int64: left as read
    return df


def _csv_fields(line: str) -> list:
    """The fields of one CSV line (a header's names may be quoted)."""
    import csv as _csv

    return next(_csv.reader([line]), [])


def report(kind: str, result: Mapping[str, Any]) -> str:
    """The self-contained HTML report of a result of ``cluster``, ``train``, ``search``,
    ``plan``, ``reliability``, ``serve`` or ``sched`` (what ``--report FILE.html``
    writes for the same result: the CLI's report also compares cluster sizes for
    ``reliability``, as ``compare="size"`` does, and charts latency against load for
    ``serve``, as ``serve(..., load_sweep=True)`` gives).

    >>> html = myriad.report("train", myriad.train("examples/dgx-superpod-h100.yaml"))
    >>> html.startswith("<!doctype html>"), "<svg" in html
    (True, True)
    """
    kind = _str("kind", kind)
    if not isinstance(result, Mapping):
        # null, a number or a list made a page of dashes without a word.
        raise TypeError(f"result: a {type(result).__name__} is not a command's result (a dict)")
    return _myriad.report(kind, _json(result, "result"))
