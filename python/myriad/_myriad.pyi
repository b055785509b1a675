"""Type stubs of the Rust extension ``myriad._myriad`` (each command takes the scenario's
file name, for messages, and its text, and returns the command's ``--json`` text). Use the
wrappers in ``myriad``; these are its internals."""

from typing import Optional, Sequence

__version__: str
MAX_REPLICAS: int
MAX_REQUESTS: int

class Error(ValueError):
    """Bad input the engine refuses, with the CLI's message."""

def cluster(file: str, text: str) -> str: ...
def train(file: str, text: str, backend: str = "analytical") -> str: ...
def search(
    file: str, text: str, top: int = 10, global_batches: Optional[Sequence[int]] = None
) -> str: ...
def parse_global_batches(s: str) -> list[int]: ...
def plan(file: str, text: str) -> str: ...
def reliability(
    file: str,
    text: str,
    days: Optional[float] = None,
    replicas: Optional[int] = None,
    seed: Optional[int] = None,
    compare: Sequence[str] = ...,
) -> str: ...
def validate(file: str, text: str) -> str: ...
def sweep_csv(file: str, text: str, base: str, k: int = 1, n: int = 1) -> str: ...
def sweep_kinds(file: str, text: str, base: str) -> list[str]: ...
def serve(
    file: str,
    text: str,
    base: str,
    seed: Optional[int] = None,
    requests: Optional[int] = None,
    load_sweep: bool = False,
    search: bool = False,
) -> str: ...
def serve_validate(file: str, text: str) -> str: ...
def sched(
    file: str,
    text: Optional[str],
    base: str,
    openb: Optional[str] = None,
    policies: Optional[Sequence[str]] = None,
    seed: Optional[int] = None,
) -> str: ...
def collective(
    file: str,
    text: str,
    op: str,
    bytes: Optional[str] = None,
    sweep: Optional[str] = None,
    group: str = "all",
    algorithm: str = "auto",
    backend: str = "analytical",
) -> str: ...
def report(kind: str, json: str) -> str: ...
