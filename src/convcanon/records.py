"""`NamedTuple`: `typing.NamedTuple` as type checkers see it, built faster at run time.

`typing.NamedTuple` checks every field's annotation when the class is made; under postponed
annotations each is a string compiled into a `ForwardRef`, ~0.3 ms a class: ~9 ms of a
`convcanon-opt` run's ~80 ms for the 30 classes the HLO pass defines. Here the class is the same
`collections.namedtuple` with the body's methods, properties and docstring, and its
annotations kept as written (nothing here reads them at run time). Only the class form is
provided, not `NamedTuple("Name", [...])`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    # as typing.NamedTuple: names a body may not define, and names not copied from it
    _PROHIBITED = frozenset(
        {
            "__new__",
            "__init__",
            "__slots__",
            "__getnewargs__",
            "_fields",
            "_field_defaults",
            "_make",
            "_replace",
            "_asdict",
            "_source",
        }
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcls, typename, bases, namespace):
            if namespace.get("__module__") == __name__ and typename == "NamedTuple":
                return super().__new__(mcls, typename, bases, namespace)
            annotations = dict(namespace.get("__annotations__", {}))
            defaulted: list[str] = []  # as typing's: a default field may not precede one without
            for field in annotations:
                if field in namespace:
                    defaulted.append(field)
                elif defaulted:
                    raise TypeError(
                        f"Non-default namedtuple field {field} cannot follow default field"
                        f"{'s' if len(defaulted) > 1 else ''} {', '.join(defaulted)}"
                    )
            cls = collections.namedtuple(
                typename,
                list(annotations),
                defaults=[namespace[field] for field in defaulted],
                module=namespace["__module__"],
            )
            cls.__annotations__ = cls.__new__.__annotations__ = annotations
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in annotations:
                    setattr(cls, key, value)
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        pass
