"""Sweeps as Ray tasks: ``myriad.ray.sweep(spec, address=...)``.

The grid is cut into shards exactly as ``myriad sweep --shard K/N`` cuts it (row ``i`` goes
to shard ``i mod N``); each shard is one Ray task that runs the Rust engine on one core
(``num_cpus=1``), and the driver merges the shards' rows back into row order. The spec file
(and the scenario it names as ``base``) must be readable at the same path on every worker,
e.g. on a shared filesystem. Without Ray, ``myriad sweep --shard`` under Slurm or Kubernetes
is the dependency-free path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import myriad

if TYPE_CHECKING:
    import pandas


def _shard(file: str, text: str, base: str, k: int, n: int) -> str:
    """Shard ``k`` of ``n`` as CSV text (header and rows), typed only once merged: a
    shard's own DataFrame types a column by the shard's rows alone (``error`` all empty
    in one shard is float, text in another)."""
    return myriad._myriad.sweep_csv(file, text, base, k, n)


def _merge(parts: "list[str]") -> str:
    """The shards' CSV texts as one, rows in grid order (the first field is the row)."""
    header = parts[0].split("\n", 1)[0]
    rows = [line for p in parts for line in p.split("\n")[1:] if line]
    rows.sort(key=lambda line: int(line.split(",", 1)[0]))
    return "\n".join([header, *rows]) + "\n"


def sweep(
    spec: "myriad.Scenario",
    address: Optional[str] = None,
    shards: Optional[int] = None,
    **init_kwargs,
) -> "pandas.DataFrame":
    """Evaluate the sweep ``spec`` (a file or a dict, as ``myriad.sweep`` takes) as Ray
    tasks and return the merged pandas DataFrame, rows in grid order and columns typed as
    a single-process ``myriad.sweep(spec)`` (identical to it).

    ``address``: the Ray cluster to join (``"auto"``, ``"ray://host:10001"``); ``None``
    starts or joins a local instance. ``shards``: tasks to cut the grid into (default:
    the cluster's CPUs). Extra keyword arguments go to ``ray.init``.

    >>> import myriad.ray
    >>> spec = "examples/sweep/oversubscription.yaml"
    >>> df = myriad.ray.sweep(spec, shards=2, num_cpus=2)  # doctest: +SKIP
    >>> df.equals(myriad.sweep(spec))                      # doctest: +SKIP
    True
    """
    import ray

    if shards is not None:
        shards = myriad._uint("shards", shards, lo=1)
        if shards == 0:
            raise myriad.Error(f"shards: 0 is not an integer from 1 to {myriad._U64}")
    # Checked before Ray starts. The spec's text travels with the tasks; its base scenario
    # file (if a path) is read by each worker, at its absolute path.
    file, text = myriad._text(spec, "spec")
    base = myriad._sweep_base(spec, absolute=True)
    kinds = myriad._myriad.sweep_kinds(file, text, base)
    started = False
    if not ray.is_initialized():
        ray.init(address=address, **init_kwargs)
        started = True
    try:
        n = shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(num_cpus=1)(_shard)
        parts = ray.get([task.remote(file, text, base, k, n) for k in range(1, n + 1)])
        # Typed once, from all rows, as myriad.sweep types them.
        return myriad._frame(_merge(parts), kinds)
    finally:
        if started:
            ray.shutdown()
