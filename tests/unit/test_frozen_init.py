"""fast_init: the same signature, values, defaults and immutability as the generated
``__init__`` of a frozen slots dataclass (stream/domain/frozen.py)."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.domain.events import ArtifactEvent, CheckpointEvent, Source
from stream.domain.frozen import fast_init
from stream.domain.outputs import Alert, NodeStatus, Trigger, Verdict

FAST = [Source, ArtifactEvent, CheckpointEvent, Trigger, Alert, NodeStatus, Verdict]


def _generated(cls: type) -> type:
    """The same fields as a plain frozen slots dataclass: the reference ``__init__``."""
    spec = [(f.name, f.type, field(default=f.default)) if f.default is not dataclasses.MISSING else (f.name, f.type)
            for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass("Ref" + cls.__name__, spec, frozen=True, slots=True)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_signature_is_the_generated_one(cls: type) -> None:
    assert cls.__init__.__code__.co_filename == "<string>"  # replaced: not the dataclass one
    ref = inspect.signature(_generated(cls))
    assert [(p.name, p.default, p.kind) for p in inspect.signature(cls).parameters.values()] == [
        (p.name, p.default, p.kind) for p in ref.parameters.values()]


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
@given(data=st.data())
def test_values_defaults_and_freezing(cls: type, data: st.DataObject) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    given_names = required + data.draw(st.lists(st.sampled_from(names), unique=True))
    values = {n: data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=5))) for n in given_names}
    positional = data.draw(st.integers(0, len(required)))
    args = [values[n] for n in names[:positional]]
    kwargs = {n: v for n, v in values.items() if n not in names[:positional]}
    obj, ref = cls(*args, **kwargs), _generated(cls)(*args, **kwargs)
    assert [getattr(obj, n) for n in names] == [getattr(ref, n) for n in names]
    assert obj == dataclasses.replace(obj) and hash(obj) == hash(dataclasses.replace(obj))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, names[0], 1)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_missing_and_unknown_arguments_fail_as_before(cls: type) -> None:
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    if required:
        with pytest.raises(TypeError, match=required[0]):
            cls()
    with pytest.raises(TypeError, match="nope"):
        cls(*range(len(required)), nope=1)


def test_refuses_what_it_cannot_reproduce() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, NotFrozen, Factory, PostInit):
        with pytest.raises(TypeError, match=cls.__name__):
            fast_init(cls)
