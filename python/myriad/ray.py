"""Sweeps as Ray tasks: ``myriad.ray.sweep(spec, address=...)``.

The grid is cut into shards exactly as ``myriad sweep --shard K/N`` cuts it (row ``i`` goes
to shard ``i mod N``); each shard is one Ray task that runs the Rust engine on one core
(``num_cpus=1``), and the driver merges the shards' rows back into row order. The spec file
(and the scenario it names as ``base``) must be readable at the same path on every worker,
e.g. on a shared filesystem. Without Ray, ``myriad sweep --shard`` under Slurm or Kubernetes
is the dependency-free path.
"""

from __future__ import annotations

import os
from typing import Optional

import myriad


def _shard(spec: str, k: int, n: int) -> str:
    """Shard ``k`` of ``n`` as CSV text (header and rows), typed only once merged: a
    shard's own DataFrame types a column by the shard's rows alone (``error`` all empty
    in one shard is float, text in another)."""
    with open(spec, "rb"):  # a missing spec: FileNotFoundError, as myriad.sweep
        pass
    return myriad._myriad.sweep_csv(spec, k, n)


def _merge(parts: "list[str]") -> str:
    """The shards' CSV texts as one, rows in grid order (the first field is the row)."""
    header = parts[0].split("\n", 1)[0]
    rows = [line for p in parts for line in p.split("\n")[1:] if line]
    rows.sort(key=lambda line: int(line.split(",", 1)[0]))
    return "\n".join([header, *rows]) + "\n"


def sweep(
    spec: "str | os.PathLike[str]",
    address: Optional[str] = None,
    shards: Optional[int] = None,
    **init_kwargs,
):
    """Evaluate the sweep ``spec`` as Ray tasks and return the merged pandas DataFrame,
    rows in grid order (identical to a single-process ``myriad.sweep(spec)``).

    ``address``: the Ray cluster to join (``"auto"``, ``"ray://host:10001"``); ``None``
    starts or joins a local instance. ``shards``: tasks to cut the grid into (default:
    the cluster's CPUs). Extra keyword arguments go to ``ray.init``.
    """
    import ray

    if shards is not None:
        shards = myriad._uint("shards", shards, lo=1)
        if shards == 0:
            raise ValueError(f"shards: 0 is not an integer from 1 to {myriad._U64}")
    started = False
    if not ray.is_initialized():
        ray.init(address=address, **init_kwargs)
        started = True
    try:
        n = shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(num_cpus=1)(_shard)
        path = os.path.abspath(os.fsdecode(spec))
        parts = ray.get([task.remote(path, k, n) for k in range(1, n + 1)])
        # Typed once, from all rows, as myriad.sweep types them.
        return myriad._frame(_merge(parts))
    finally:
        if started:
            ray.shutdown()
