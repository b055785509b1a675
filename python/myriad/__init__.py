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
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _myriad

__version__ = _myriad.__version__

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
                raise ValueError(
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
    that type cannot hold is a ``ValueError`` naming ``name`` and the range the engine
    takes (``lo`` to ``hi``; values inside the type but outside the range are the engine's
    to refuse, with its own message), rather than pyo3's nameless ``OverflowError``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: {v!r} is not an integer")
    i = int(v)
    if i < 0 or i >= 1 << bits:
        raise ValueError(f"{name}: {i} is not an integer from {lo} to {hi}")
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


def _text(scenario: Scenario) -> tuple[str, str]:
    """(file name for messages, scenario text)."""
    if isinstance(scenario, Mapping):
        return "<dict>", _json(scenario, "<dict>")
    path = os.fsdecode(scenario)  # str, bytes or a PathLike such as pathlib.Path
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def cluster(scenario: Scenario) -> dict:
    """Build the cluster: hierarchy, tiers, bill of materials, power and cost
    (``myriad cluster --json``)."""
    return json.loads(_myriad.cluster(*_text(scenario)))


def train(scenario: Scenario) -> dict:
    """Estimate one training step: time and breakdown, MFU, memory, time to train
    (``myriad train --json``, analytical backend)."""
    return json.loads(_myriad.train(*_text(scenario)))


def _global_batches(gb: Union[int, str, Sequence[int]]) -> list:
    """``global_batch`` as the engine takes it: one batch, a list, or the CLI's text
    (``"512,1024"``, or ``"512..4096"`` doubling), every batch a positive integer."""
    bad = ValueError(
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
    """Search every valid parallel plan; the ``top`` fastest (``myriad search --json``).
    ``global_batch`` replaces the scenario's global batch with the batches to consider: a
    list (``[512, 1024]``), one batch, or the CLI's ``"512,1024"`` or ``"512..4096"``."""
    gb = _global_batches(global_batch) if global_batch is not None else None
    top = _uint("top", top, hi=_USIZE, bits=8 * struct.calcsize("P"))
    return json.loads(_myriad.search(*_text(scenario), top, gb))


def plan(scenario: Scenario) -> dict:
    """Candidate clusters for the model and token budget, the Pareto front of time
    against cost and the choice (``myriad plan --json``)."""
    return json.loads(_myriad.plan(*_text(scenario)))


def reliability(
    scenario: Scenario,
    days: Optional[float] = None,
    replicas: Optional[int] = None,
    seed: Optional[int] = None,
    compare: Union[str, Iterable[str]] = (),
) -> dict:
    """Failures, checkpointing, ETTR and goodput by seeded Monte Carlo
    (``myriad reliability --json``); ``compare`` from ``size``, ``domain``,
    ``checkpoint`` (a list, or the CLI's ``"size,domain"`` or ``"all"``)."""
    cmp = [compare] if isinstance(compare, str) else list(compare)
    cmp = [_str("compare", c) for c in cmp]
    if days is not None:
        if isinstance(days, bool) or not isinstance(days, numbers.Real):
            raise TypeError(f"days: {days!r} is not a number")
        try:
            days = float(days)
        except OverflowError:  # an int past a float: Python's message names nothing
            raise ValueError(f"days: {days} is not a positive number of days") from None
    replicas = _uint("replicas", replicas, lo=1, hi=_myriad.MAX_REPLICAS, bits=32)
    seed = _uint("seed", seed)
    return json.loads(_myriad.reliability(*_text(scenario), days, replicas, seed, cmp))


def validate(measurements: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> dict:
    """Predict every case of a ``myriad-validation/1`` file (path or dict) and compare
    with the measurements (``myriad validate --json``)."""
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
) -> dict:
    """Simulate the scenario's ``serving`` deployment request by request: throughput,
    TTFT/TPOT percentiles, goodput, KV-cache use (``myriad serve --json``); with
    ``serving.concurrency`` (a closed loop of clients), also ``concurrency_sweep``:
    throughput per accelerator against each user's speed at 1, 2, 4, ... clients.
    ``load_sweep=True`` adds ``load_sweep``: latency and throughput at 25% to 150% of the
    arrival rate, which ``report("serve", ...)`` charts as ``--report`` does."""
    seed = _uint("seed", seed)
    requests = _uint("requests", requests, lo=1, hi=_myriad.MAX_REQUESTS)
    if not isinstance(load_sweep, bool):
        raise TypeError(f"load_sweep: {load_sweep!r} is not True or False")
    file, text = _text(scenario)
    return json.loads(_myriad.serve(file, text, _base(scenario), seed, requests, load_sweep))


def serve_validate(measurements: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> dict:
    """Predict every row of a ``myriad-measurements/1`` serving file (path or dict)
    (``myriad serve --validate FILE --json``)."""
    return json.loads(_myriad.serve_validate(*_text(measurements)))


def sched(
    scenario: Optional[Scenario] = None,
    openb: Optional[Union[str, "os.PathLike[str]"]] = None,
    policies: Union[str, Sequence[str], None] = None,
    seed: Optional[int] = None,
) -> dict:
    """Run the scenario's ``scheduling`` workload under several policies side by side, or
    replay the Alibaba openb trace in directory ``openb`` (``myriad sched --json``);
    ``policies``: a list of names, or the CLI's ``"fifo,backfill"``."""
    if scenario is None and openb is None:
        raise ValueError("give a scenario or an openb directory")
    seed = _uint("seed", seed)
    file, text = _text(scenario) if scenario is not None else ("<openb>", None)
    base = _base(scenario) if scenario is not None else os.getcwd()
    ob = os.fsdecode(openb) if openb is not None else None
    if isinstance(policies, str):
        pol: Optional[list] = [policies]  # the CLI's "fifo,backfill"
    else:
        pol = [_str("policies", p) for p in policies] if policies is not None else None
    return json.loads(_myriad.sched(file, text, base, ob, pol, seed))


def collective(
    scenario: Scenario,
    op: str,
    bytes: Union[int, float, str, None] = None,
    sweep: Optional[str] = None,
    group: str = "all",
    algorithm: str = "auto",
) -> dict:
    """Time a collective on a group of the scenario's cluster with the analytical model,
    nccl-tests conventions (``myriad collective --json``): ``op`` all-reduce, all-gather,
    reduce-scatter, all-to-all, broadcast, send-recv; ``bytes`` (``1 << 30`` or ``"1GiB"``)
    or ``sweep`` (``"8B..16GiB"``); ``group`` tp, dp, ep, pp, cp, all or ranks ``"0-7"``.
    (The flow-level backend is the CLI's ``--backend flow``.)"""
    b = None if bytes is None else str(bytes)
    op, group, algorithm = _str("op", op), _str("group", group), _str("algorithm", algorithm)
    sweep = _str("sweep", sweep, none=True)
    return json.loads(_myriad.collective(*_text(scenario), op, b, sweep, group, algorithm))


def _shard(shard: Union[str, Sequence[int]]) -> tuple[int, int]:
    """``(k, n)`` of a shard given as ``(k, n)`` or the CLI's ``"K/N"``: 1 <= k <= n."""
    if isinstance(shard, str):
        m = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", shard)
        if m is None:
            raise ValueError(f"shard: `{shard}` is not K/N (shard K of N, 1-based), e.g. \"3/16\"")
        k, n = int(m.group(1)), int(m.group(2))
    else:
        try:
            k, n = shard
        except (TypeError, ValueError):
            raise ValueError(
                f"shard: {shard!r} is not (k, n) or \"K/N\" (shard K of N, 1-based)"
            ) from None
        k, n = _uint("shard", k, lo=1), _uint("shard", n, lo=1)
        if k is None or n is None:
            raise TypeError(f"shard: {shard!r} is not a pair of integers")
    if not 1 <= n <= _U64:
        raise ValueError(f"shard: `{k}/{n}`: N must be 1 to {_U64}")
    if not 1 <= k <= n:
        raise ValueError(f"shard: `{k}/{n}`: K must be 1 to {n} (K is 1-based)")
    return k, n


def sweep(spec: Union[str, "os.PathLike[str]"], shard: Union[str, Sequence[int]] = (1, 1)):
    """Evaluate a ``myriad-sweep/1`` grid (or shard ``k`` of ``n`` of it: ``(k, n)`` or
    the CLI's ``"K/N"``) and return a pandas DataFrame with the same columns as
    ``myriad sweep`` writes."""
    k, n = _shard(shard)
    path = os.fsdecode(spec)
    # A missing or unreadable spec is the OSError open() gives for a scenario file.
    with open(path, "rb"):
        pass
    return _frame(_myriad.sweep_csv(path, k, n))


def _frame(csv: str):
    """The DataFrame of ``myriad sweep`` CSV text: an empty cell is missing, any other
    text as written (a varied ``"NA"`` stays a string)."""
    import pandas as pd

    return pd.read_csv(io.StringIO(csv), keep_default_na=False, na_values=[""])


def report(kind: str, result: Mapping[str, Any]) -> str:
    """The self-contained HTML report of a result of ``cluster``, ``train``, ``search``,
    ``plan``, ``reliability``, ``serve`` or ``sched`` (what ``--report FILE.html``
    writes for the same result: the CLI's report also compares cluster sizes for
    ``reliability``, as ``compare="size"`` does, and charts latency against load for
    ``serve``, as ``serve(..., load_sweep=True)`` gives)."""
    kind = _str("kind", kind)
    if not isinstance(result, Mapping):
        # null, a number or a list made a page of dashes without a word.
        raise TypeError(f"result: a {type(result).__name__} is not a command's result (a dict)")
    return _myriad.report(kind, _json(result, "result"))
