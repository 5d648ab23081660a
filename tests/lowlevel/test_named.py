"""corral's NamedTuple behaves as typing.NamedTuple does for every use corral makes of it
(construction, defaults, errors, repr, equality, hashing, ordering, `_replace`, `_asdict`,
`_make`, pickling, matching, methods and properties), and costs far less to define."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.lowlevel.named import NamedTuple


class Ours(NamedTuple):
    """A job, as an example."""

    pid: int
    name: str | None
    ports: tuple[int, ...] = ()
    cwd: str = "/"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.pid}"

    def moved(self, cwd: str) -> Ours:
        return self._replace(cwd=cwd)


class Theirs(typing.NamedTuple):
    pid: int
    name: str | None
    ports: tuple[int, ...] = ()
    cwd: str = "/"


values = st.tuples(st.integers(), st.none() | st.text(), st.tuples(st.integers()), st.text())


@given(values)
def test_same_as_typing_named_tuple(fields: tuple[int, str | None, tuple[int], str]) -> None:
    ours, theirs = Ours(*fields), Theirs(*fields)
    same: object = ours
    assert tuple(ours) == tuple(theirs) and same == theirs and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs).replace("Theirs", "Ours")
    assert ours._asdict() == theirs._asdict()
    assert tuple(ours._replace(pid=7)) == tuple(theirs._replace(pid=7))
    assert Ours._make(fields) == ours and pickle.loads(pickle.dumps(ours)) == ours
    assert tuple(Ours(pid=fields[0], name=fields[1])) == Theirs(pid=fields[0], name=fields[1])
    assert (ours < Ours(*fields)) is False and sorted([ours, ours]) == [ours, ours]


def test_fields_defaults_methods_and_errors() -> None:
    job = Ours(1, "vite")
    assert (job.pid, job.name, job.ports, job.cwd) == (1, "vite", (), "/")
    assert Ours._fields == Theirs._fields and Ours._field_defaults == Theirs._field_defaults
    assert job.label == "vite@1" and job.moved("/srv") == Ours(1, "vite", (), "/srv")
    assert Ours.__doc__ == "A job, as an example." and Ours.__module__ == __name__
    assert not hasattr(job, "__dict__")
    match job:
        case Ours(pid, name):
            assert (pid, name) == (1, "vite")
    make: Any = Ours
    replace: Any = job._replace
    for bad in (lambda: make(1), lambda: make(1, "a", (), "/", 5), lambda: make(1, "a", x=2),
                lambda: make(1, "a", pid=3), lambda: replace(nope=1),
                lambda: Ours._make([1])):  # fmt: skip
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(AttributeError):
        job.pid = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="without a default follows one"):

        class Wrong(NamedTuple):
            a: int = 0
            b: int  # type: ignore[misc]


def test_defining_one_loads_no_typing() -> None:
    code = (
        "from __future__ import annotations\n"
        "import sys\n"
        f"sys.path.insert(0, {_src()!r})\n"
        "from corral.lowlevel.named import NamedTuple\n"
        "class A(NamedTuple):\n    a: int\n    b: str = ''\n"
        "print(A(1), 'typing' in sys.modules, 'collections' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out == "A(a=1, b='') False False\n"


def _src() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2] / "src")
