"""requirements.lock pins every dependency CI installs, within pyproject's ranges (issue 36)."""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _locked() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line!r}"
            assert "+" not in version, f"a local version label would refuse PyPI's build: {line!r}"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in [*project["dependencies"], *project["optional-dependencies"]["dev"]]]


def test_every_requirement_is_locked_within_its_range() -> None:
    pins = _locked()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock has {name}=={pins[name]}, outside pyproject's {requirement}: run `make lock`"
        )


def test_lock_pins_the_torch_on_disk() -> None:
    # Any other torch release downloads a multi-GB CUDA build on the project's machines.
    assert _locked()["torch"] == Version("2.13.0")


def test_installed_versions_are_the_locked_ones() -> None:
    from importlib.metadata import PackageNotFoundError, version

    pins = _locked()
    for name in ("torch", "numpy", "jax", "transformers", "islpy-barvinok", "numba"):
        try:
            installed = Version(Version(version(name)).base_version)
        except PackageNotFoundError:  # pragma: no cover - the dev extra installs them all
            continue
        assert installed == pins[name], f"{name} {installed} is installed, the lock has {pins[name]}"
