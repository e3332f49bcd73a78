"""The pass registry, pipelines and options."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from solar.ir.pass_manager import Pass, PassOptionError, split_pipeline
from solar.passes import PASSES, registry
from solar.passes.catalog import CATALOG, OptionInfo, PassInfo, catalog_entry, info_of_class

REPO = Path(__file__).resolve().parents[2]


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


def pass_classes() -> dict[str, type[Pass]]:
    """Every pass class defined in passes/, by its flag, found by importing each module of the folder."""
    found: dict[str, type[Pass]] = {}
    for path in sorted((REPO / "passes").glob("*.py")):
        module = importlib.import_module(f"solar.passes.{path.stem}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Pass) and value.__module__ == module.__name__
                    and getattr(value, "name", "")):
                found[value.name] = value
    return found


def test_the_catalog_lists_every_pass_class_as_it_is() -> None:
    """--help, --list-passes and the registry read solar.passes.catalog, the one list of passes, so that
    they import no pass; each entry must be what its class gives. On a difference, the message is the
    entry to paste into CATALOG."""
    classes = pass_classes()
    assert {"fuse", "sol", "lift-einsum"} <= set(classes)
    wrong = [catalog_entry(name, info_of_class(cls)) for name, cls in sorted(classes.items())
             if CATALOG.get(name) != info_of_class(cls)]
    assert not wrong, "add (or replace) in CATALOG, passes/catalog.py:\n" + "\n".join(wrong)
    stale = sorted(set(CATALOG) - set(classes))
    assert not stale, f"CATALOG lists passes no class defines; remove them: {', '.join(stale)}"
    assert {name: info.target for name, info in CATALOG.items()} == PASSES


def test_a_catalog_entry_is_python_that_gives_itself_back() -> None:
    info = info_of_class(pass_classes()["sol"])
    namespace = {"PassInfo": PassInfo, "OptionInfo": OptionInfo}
    text = catalog_entry("sol", info)
    assert text.startswith('    "sol": PassInfo(\n        "solar.passes.sol:SOL",\n')
    assert all(len(line) <= 120 for line in text.splitlines())
    assert eval("{" + text + "}", namespace) == {"sol": info}
