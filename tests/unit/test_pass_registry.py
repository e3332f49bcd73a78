"""The pass registry, pipelines and options."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import pytest

from solar.ir.pass_manager import Pass, PassOptionError, split_pipeline
from solar.passes import PASSES, catalog, registry
from solar.passes.catalog import CATALOG, OptionInfo, PassInfo, info_of_class

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


def test_the_catalog_is_what_the_pass_classes_give() -> None:
    """--help, --list-passes and the registry read solar.passes.catalog, derived from the classes (one copy)."""
    classes = pass_classes()
    assert {"fuse", "sol", "lift-einsum"} <= set(classes)
    assert dict(CATALOG) == {name: info_of_class(cls) for name, cls in sorted(classes.items())}
    assert {name: info.target for name, info in CATALOG.items()} == PASSES
    assert CATALOG["fuse"].options == (OptionInfo("mode", "greedy|producer-consumer|none", "'greedy'"),)


def test_the_derived_catalog_is_kept_until_a_pass_file_changes(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "catalog.json"
    monkeypatch.setattr(catalog, "_cache_files", lambda: [cache])
    kept = {"only": {"target": "m:C", "summary": "kept", "options": [], "primary_option": None,
                     "free_options": False}}
    cache.write_text(json.dumps({"key": catalog._key(), "catalog": kept}))
    assert catalog._derive() == {"only": PassInfo("m:C", "kept")}  # read back, no pass imported
    monkeypatch.setattr(catalog, "_key", lambda: [["new_pass.py", 1, 1]])  # a pass file changed
    assert catalog._derive() == dict(CATALOG)
    assert json.loads(cache.read_text())["key"] == [["new_pass.py", 1, 1]]
