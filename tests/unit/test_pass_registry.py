"""The pass registry, pipelines and options."""

from __future__ import annotations

import dataclasses

import pytest

from solar.ir.pass_manager import Pass, PassOptionError, split_pipeline
from solar.passes import PASSES, registry


@pytest.mark.parametrize("name", sorted(PASSES))
def test_every_registry_key_is_the_class_name(name: str) -> None:
    cls = registry.load(name)
    assert issubclass(cls, Pass)
    assert cls.name == name
    assert cls.summary, f"pass {name} needs a one-line summary for --list-passes"
    doc = cls.__doc__ or ""
    assert "Before" in doc or "unchanged" in doc, f"pass {name}'s docstring should show IR before and after"
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_split_pipeline_handles_braces_and_commas() -> None:
    assert split_pipeline("a,b{x=1 y=2},c{z=3,w=4}, d") == [
        ("a", {}), ("b", {"x": "1", "y": "2"}), ("c", {"z": "3", "w": "4"}), ("d", {})]


@pytest.mark.parametrize("text", ["a{x=1", "a}", "a{x=1}}"])
def test_unbalanced_pipelines_are_errors(text: str) -> None:
    with pytest.raises(PassOptionError):
        split_pipeline(text)


def test_unknown_pass_suggests_the_closest() -> None:
    with pytest.raises(PassOptionError, match="did you mean 'inline'"):
        registry.parse_pipeline("inlin")


def test_unknown_option_suggests_the_closest() -> None:
    with pytest.raises(PassOptionError, match="did you mean 'entry'"):
        registry.parse_pipeline("symbol-dce{entyr=main}")


def test_options_are_coerced_and_described() -> None:
    (p,) = registry.parse_pipeline("symbol-dce{entry=main}")
    assert p.entry == "main"  # type: ignore[attr-defined]
    assert p.describe() == "symbol-dce{entry=main}"
    (q,) = registry.parse_pipeline("bind-params{M=4 N=8}")
    assert q.options == {"M": "4", "N": "8"}  # type: ignore[attr-defined]


def test_primary_option() -> None:
    p = registry.create("symbol-dce", primary="forward")
    assert p.entry == "forward"  # type: ignore[attr-defined]
    with pytest.raises(PassOptionError, match="takes no value"):
        registry.create("inline", primary="x")


def test_the_catalog_equals_the_pass_classes() -> None:
    """--help and --list-passes read solar.passes.catalog so that they import no pass; it must say what the
    classes say (after changing a pass, `python -m solar.passes.catalog` prints the new table)."""
    from solar.passes.catalog import CATALOG, info_of_class

    assert sorted(CATALOG) == registry.names()
    for name in registry.names():
        assert CATALOG[name] == info_of_class(registry.load(name)), name
