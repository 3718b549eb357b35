"""``@valueclass``: the part of ``@dataclass`` the records read on every start-up use.

Every command pays for what it imports, and :mod:`dataclasses` costs more than
the rest of a ``recall`` put together: it imports :mod:`inspect` (and with it
:mod:`ast`, :mod:`dis`, :mod:`tokenize`) and compiles five or six methods per
class.  This decorator builds a class's ``__init__`` from one small compiled
function (compiled once the class has made :data:`COMPILE_AFTER` instances,
which most never do in one command) and its ``__eq__``, ``__hash__`` and
``__repr__`` from :func:`operator.attrgetter`, importing nothing else.

What it does, and no more:

* fields are the class's own annotations, in order (``ClassVar`` ones are not
  fields; bases are not looked at); a class attribute is the field's default,
  :func:`field` gives one too (``default=`` or a ``default_factory`` called
  per instance), and ``__post_init__``, when the class has one, runs last;
* ``__init__`` takes the fields positionally or by name; ``__eq__`` compares
  instances of exactly the same class field by field; ``__repr__`` is
  ``Name(field=value, ...)``; ``__match_args__`` is the field names;
* frozen (the default): assigning or deleting an attribute raises
  :class:`FrozenInstanceError` and ``__hash__`` hashes the fields; with
  ``frozen=False`` instances are mutable and unhashable, as with dataclasses.

:func:`replace` is ``dataclasses.replace`` for these classes.  Modules off the
start-up path keep using :mod:`dataclasses`.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    _T = TypeVar("_T")

__all__ = ["FrozenInstanceError", "field", "fields", "replace", "valueclass"]

_FIELDS = "__valueclass_fields__"


class FrozenInstanceError(AttributeError):
    """An assignment to, or deletion of, a field of a frozen instance."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


class _Default:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"


_MISSING = _Missing()


def fields(cls_or_instance: object) -> tuple[str, ...]:
    """The field names of a value class (or of an instance of one), in order."""
    names: tuple[str, ...] = getattr(cls_or_instance, _FIELDS)
    return names


def replace(instance: _T, **changes: object) -> _T:
    """A copy of ``instance`` with ``changes`` applied, as ``dataclasses.replace``."""
    names = fields(instance)
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(instance).__name__} has no field {sorted(unknown)[0]!r}")
    values = {name: changes.get(name, getattr(instance, name)) for name in names}
    return type(instance)(**values)


_RESERVED = frozenset({"self", "_d_", "_f_", "_v_", "_MISSING"})
"""Names the compiled ``__init__`` gives its own parameters and globals."""

COMPILE_AFTER = 64
"""How many instances a value class binds with :func:`_bind` before it
compiles its own ``__init__``: compiling one costs about what binding a
hundred instances that way does (and as much as importing a small module),
while a command makes most of the value classes it uses a few times."""


def _init(cls: type, names: list[str]) -> Callable[..., None]:
    """``__init__`` for ``names``: the first :data:`COMPILE_AFTER` instances
    are bound by :func:`_bind`, and then an ``__init__`` as fast to call as
    the one dataclasses writes is compiled and takes its place.  Defaults
    are read (and field order checked) now, at class creation."""
    defaults: dict[str, object] = {}
    factories: dict[str, Callable[[], object]] = {}
    for name in names:
        if name in _RESERVED:
            # The compiled __init__ uses these names itself.
            raise TypeError(f"{cls.__name__}: a field may not be named {name!r}")
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, _Default):
            default = default.value
            setattr(cls, name, default)
        if isinstance(default, _Factory):
            factories[name] = default.make
            delattr(cls, name)
        elif default is not _MISSING:
            defaults[name] = default
        elif defaults or factories:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with")
    post_init = "__post_init__" in cls.__dict__
    qualname = f"{cls.__qualname__}.__init__"

    made = 0

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        nonlocal made
        made += 1
        if made <= COMPILE_AFTER:
            self.__dict__.update(_bind(qualname, names, defaults, factories, args, kwargs))
            if post_init:
                self.__post_init__()  # type: ignore[attr-defined]
            return
        # Enough instances: compile the real __init__, put it in this one's
        # place, and run it.
        scope: dict[str, Any] = {"_v_": defaults, "_f_": factories, "_MISSING": _MISSING}
        exec(_init_source(names, defaults, factories, post_init), scope)
        compiled: Callable[..., None] = scope["__init__"]
        compiled.__qualname__ = qualname
        setattr(cls, "__init__", compiled)  # noqa: B010 -- mypy refuses the assignment
        compiled(self, *args, **kwargs)

    __init__.__qualname__ = qualname
    return __init__


def _init_source(
    names: list[str],
    defaults: dict[str, object],
    factories: dict[str, Callable[[], object]],
    post_init: bool,
) -> str:
    """The source of the compiled ``__init__``: each field a parameter (its
    default read from ``_v_``, a factory's marked ``_MISSING`` and called
    from ``_f_``), stored straight into the instance's ``__dict__``; built
    from the class's own field names only."""
    params, body = [], []
    for name in names:
        if name in factories:
            params.append(f"{name}=_MISSING")
            body.append(f"    _d_[{name!r}] = _f_[{name!r}]() if {name} is _MISSING else {name}")
            continue
        params.append(f"{name}=_v_[{name!r}]" if name in defaults else name)
        body.append(f"    _d_[{name!r}] = {name}")
    if post_init:
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    _d_ = self.__dict__\n"
    return source + ("\n".join(body) if body else "    pass")


def _bind(
    qualname: str,
    names: list[str],
    defaults: dict[str, object],
    factories: dict[str, Callable[[], object]],
    args: tuple[object, ...],
    kwargs: dict[str, object],
) -> dict[str, object]:
    """The fields' values for one call, bound as the compiled ``__init__``
    binds them (positionally or by name, defaults and factories for what is
    not given); a call it would refuse raises :class:`TypeError` here too,
    worded by this function rather than by Python."""
    if len(args) > len(names):
        raise TypeError(
            f"{qualname}() takes {len(names) + 1} positional arguments "
            f"but {len(args) + 1} were given"
        )
    given = dict(zip(names, args, strict=False))  # fewer arguments than fields
    for name, value in kwargs.items():
        if name in given:
            raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
        if name not in names:
            raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
        given[name] = value
    missing = [n for n in names if n not in given and n not in defaults and n not in factories]
    if missing:
        raise TypeError(
            f"{qualname}() missing {len(missing)} required argument"
            f"{'s' if len(missing) > 1 else ''}: {', '.join(map(repr, missing))}"
        )
    values: dict[str, object] = {}
    for name in names:
        if name in given:
            values[name] = given[name]
        elif name in factories:
            values[name] = factories[name]()
        else:
            values[name] = defaults[name]
    return values


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return str(text).startswith(("ClassVar", "typing.ClassVar"))


def _build(cls: type, frozen: bool) -> type:
    # Not inspect.get_annotations: importing inspect is what this module avoids.
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    names = [name for name, note in annotations.items() if not _is_classvar(note)]
    get = attrgetter(*names) if names else (lambda _: ())
    values: Callable[[object], tuple[object, ...]] = (
        (lambda item: (get(item),)) if len(names) == 1 else get
    )

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    def __repr__(self: object) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, values(self), strict=True))
        return f"{type(self).__qualname__}({shown})"

    cls.__init__ = _init(cls, names)  # type: ignore[misc]
    cls.__eq__ = __eq__  # type: ignore[method-assign, assignment]
    cls.__repr__ = __repr__  # type: ignore[method-assign, assignment]
    cls.__match_args__ = tuple(names)  # type: ignore[misc, attr-defined]
    setattr(cls, _FIELDS, tuple(names))
    if frozen:

        def __setattr__(self: object, name: str, value: object) -> None:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: object, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __hash__(self: object) -> int:
            return hash(values(self))

        cls.__setattr__ = __setattr__  # type: ignore[method-assign, assignment]
        cls.__delattr__ = __delattr__  # type: ignore[method-assign, assignment]
        cls.__hash__ = __hash__  # type: ignore[method-assign, assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]
    return cls


if TYPE_CHECKING:
    # What mypy sees: the dataclass_transform of PEP 681 (so fields, defaults,
    # frozenness and __init__ are checked as for a dataclass), without
    # importing typing at run time.

    @overload
    def field(*, default: _T) -> _T: ...
    @overload
    def field(*, default_factory: Callable[[], _T]) -> _T: ...
    def field(*, default: Any = None, default_factory: Any = None) -> Any: ...

    @overload
    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def valueclass(cls: type[_T], /) -> type[_T]: ...
    @overload
    def valueclass(*, frozen: bool = True) -> Callable[[type[_T]], type[_T]]: ...
    def valueclass(cls: Any = None, /, *, frozen: bool = True) -> Any: ...

else:

    def field(*, default=_MISSING, default_factory=_MISSING):
        """A field's default: ``default``, or ``default_factory()`` made per instance."""
        if default_factory is not _MISSING:
            return _Factory(default_factory)
        return _Default(default)

    def valueclass(cls=None, /, *, frozen=True):
        """Make ``cls`` a value class (see the module's docstring)."""
        if cls is None:
            return lambda made: _build(made, frozen)
        return _build(cls, frozen)
