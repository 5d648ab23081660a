"""`NamedTuple` for corral's value classes, cheap to define: `class Job(NamedTuple): …` makes
the tuple subclass `collections.namedtuple` would make (named fields, defaults, `_replace`,
`_asdict`, `_fields`, `_make`, a repr, equality, hashing and ordering as tuples), without
importing `typing` and without `typing.NamedTuple`'s cost at class creation: it turns every
string annotation into a ForwardRef by compiling it, and namedtuple `exec`s a constructor;
about 0.25 ms a class, 30 classes on the hook's wrapped path. Type checkers see
`typing.NamedTuple` itself.

Fields are the class's annotations, in order; a field with a value in the class body has that
default (defaults come last). Modules defining such classes use `from __future__ import
annotations` (annotations as text, never evaluated); a class body without plain annotations
(a later Python's lazy ones) is made by `typing.NamedTuple`, correctly but at its full cost.
"""

from __future__ import annotations

__all__ = ["NamedTuple"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from _collections import _tuplegetter

    def _new_of(name: str, fields: tuple[str, ...], defaults: dict[str, object]):
        size = len(fields)

        def __new__(cls, *args, **kwargs):
            if not kwargs and len(args) == size:
                return tuple.__new__(cls, args)
            if len(args) > size:
                raise TypeError(f"{name}() takes {size} fields but {len(args)} were given")
            values = list(args)
            for field in fields[len(args) :]:
                if field in kwargs:
                    values.append(kwargs.pop(field))
                elif field in defaults:
                    values.append(defaults[field])
                else:
                    raise TypeError(f"{name}() missing the field {field!r}")
            if kwargs:
                field = next(iter(kwargs))
                why = "got the field twice" if field in fields else "has no field"
                raise TypeError(f"{name}() {why} {field!r}")
            return tuple.__new__(cls, values)

        return __new__

    def _repr(self):
        shown = ", ".join(f"{f}={v!r}" for f, v in zip(self._fields, self, strict=True))
        return f"{type(self).__name__}({shown})"

    def _replace(self, **changes):
        values = [changes.pop(f, v) for f, v in zip(self._fields, self, strict=True)]
        if changes:
            raise TypeError(f"{type(self).__name__} has no field {next(iter(changes))!r}")
        return tuple.__new__(type(self), values)

    def _asdict(self):
        return dict(zip(self._fields, self, strict=True))

    def _getnewargs(self):
        return tuple(self)

    @classmethod
    def _make(cls, iterable):
        values = tuple(iterable)
        if len(values) != len(cls._fields):
            raise TypeError(f"{cls.__name__}._make takes {len(cls._fields)} values")
        return tuple.__new__(cls, values)

    class _Maker(type):
        def __new__(mcls, name, bases, namespace):
            if namespace.get("_corral_named_root"):
                return super().__new__(mcls, name, bases, namespace)
            annotations = namespace.get("__annotations__")
            if annotations is None:  # lazily evaluated annotations: typing's own way
                import typing

                return typing.NamedTupleMeta(name, (typing._NamedTuple,), namespace)
            fields = tuple(annotations)
            defaults = {f: namespace[f] for f in fields if f in namespace}
            seen_default = False
            for field in fields:
                if field in defaults:
                    seen_default = True
                elif seen_default:
                    raise TypeError(f"{name}: field {field!r} without a default follows one")
            body = {k: v for k, v in namespace.items() if k not in defaults}
            body.update(
                __slots__=(),
                __new__=_new_of(name, fields, defaults),
                __repr__=body.get("__repr__", _repr),
                __getnewargs__=_getnewargs,
                __match_args__=fields,
                _fields=fields,
                _field_defaults=defaults,
                _replace=_replace,
                _asdict=_asdict,
                _make=_make,
            )
            for at, field in enumerate(fields):
                body[field] = _tuplegetter(at, f"Alias for field number {at}")
            return type(name, (tuple,), body)

    class NamedTuple(metaclass=_Maker):
        _corral_named_root = True
