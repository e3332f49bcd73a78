"""A hardware target as data: its figures (`Figure`), the peak chosen for some work (`PeakChoice`) and the
`Target` that answers queries by field, precision and unit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .peaks import FASTEST_WIDENED, dtype_precision, norm_precision, norm_unit, peak_chain
from .vocabulary import FIELD_SECTION, PeakUnavailable, Status, TargetError, suggestion

# --------------------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One figure of a target. ``value`` is in the SI base unit (FLOP/s, OP/s, B, B/s, count, W)."""

    field: str  # "compute.bf16_tensor"
    status: Status
    value: float | None = None
    unit: str | None = None  # SI base unit of ``value``
    given: str | None = None  # as written in the file, e.g. "989.4 TFLOP/s"
    source: str | None = None
    ref: str | None = None
    note: str | None = None
    approximate: bool = False
    range: tuple[float, float] | None = None  # SI; the file's range when sources disagree
    line: int | None = None  # where the figure is written in its file (1-based), for error messages

    @property
    def known(self) -> bool:
        return self.status == "known"

    def __str__(self) -> str:
        if not self.known:
            return self.status
        approx = "≈" if self.approximate else ""
        src = f" ({self.source})" if self.source else ""
        return f"{approx}{self.given}{src}"


@dataclass(frozen=True)
class PeakChoice:
    """The compute peak chosen for an operand dtype, and why (for reports)."""

    precision: str
    unit: str  # "vector" | "tensor"
    flop_per_s: float
    figure: Figure
    reason: str

    @property
    def field(self) -> str:
        return f"{self.precision}_{self.unit}"


@dataclass(frozen=True)
class Target:
    """A hardware target. Figures are looked up by bare field name (``fp32_vector``, ``dram_bandwidth``)."""

    name: str
    full_name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...]
    figures: Mapping[str, Figure] = field(hash=False, repr=False)
    references: Mapping[str, str] = field(hash=False, repr=False, default_factory=dict)
    notes: str = ""
    origin: str = ""  # the file it came from
    format: Literal["solar-target", "nvidia-solar-arch"] = "solar-target"
    calibration: Mapping[str, Any] | None = field(hash=False, repr=False, default=None)

    # -- raw figures ---------------------------------------------------------------------------------------
    def figure(self, name: str) -> Figure:
        """The figure ``name`` (present, unknown or unsupported); a field never given is ``unknown``."""
        if name not in FIELD_SECTION:
            raise TargetError(f"{self.name}: no figure named {name!r}{suggestion(name, FIELD_SECTION)}")
        fig = self.figures.get(name)
        if fig is None:
            return Figure(field=f"{FIELD_SECTION[name]}.{name}", status="unknown", note="not given")
        return fig

    def require(self, name: str) -> float:
        """The value of figure ``name`` in SI units, or :class:`PeakUnavailable` saying why not."""
        fig = self.figure(name)
        if fig.known:
            assert fig.value is not None
            return fig.value
        raise PeakUnavailable(f"{self.name}: {fig.field} is {self._why(fig)}", file=self.origin or None,
                              field=fig.field, line=fig.line)

    def _why(self, fig: Figure) -> str:
        if fig.status == "unsupported":
            return "not supported by this device (it has no such unit)"
        if fig.note == "not given":
            return f"not given in {self.origin or 'the target'}"
        why = fig.note or "no source found"
        return f"unknown ({why}); to use it, give the figure in a custom target file (targets/README.md)"

    # -- convenience accessors (SI units; raise PeakUnavailable when unknown) -------------------------------
    @property
    def dram_bandwidth(self) -> float:
        return self.require("dram_bandwidth")

    @property
    def dram_capacity(self) -> float:
        return self.require("dram_capacity")

    @property
    def l2_bytes(self) -> float:
        return self.require("l2")

    @property
    def smem_per_sm(self) -> float:
        return self.require("smem_per_sm")

    @property
    def sm_count(self) -> int:
        return int(self.require("sm_count"))

    @property
    def tdp(self) -> float:
        return self.require("tdp")

    @property
    def shared_memory_total(self) -> float:
        """Shared memory over all SMs (H100 SXM: 132 × 228 KiB ≈ 29.4 MiB)."""
        return self.smem_per_sm * self.sm_count

    # -- compute peaks --------------------------------------------------------------------------------------
    def peak(self, precision: str, unit: str) -> float:
        """Dense peak FLOP/s (OP/s for int8) of ``precision`` on ``unit`` ("vector" or "tensor")."""
        return self.require(f"{norm_precision(precision)}_{norm_unit(unit)}")

    def select_peak(self, dtype: str, *, contraction: bool, allow_tf32: bool = False) -> PeakChoice:
        """Choose the compute peak for work whose operands have ``dtype`` (IR names: f32, bf16, i8 …).

        ``contraction``: tensor-core-eligible work (a multiply combine with an add reduction); everything
        else is vector work. The rules (targets/README.md, "Choosing a peak"):

        * contractions: bf16 → bf16 tensor; f16 → fp16 tensor; f32 → FP32 vector (TF32 tensor when
          ``allow_tf32``; an FP32 *tensor* figure wins when the file gives one, as it is exact FP32);
          tf32 → TF32 tensor; f64 → FP64 tensor; f8 → FP8 tensor; fp4 → FP4 tensor; i8 → INT8 tensor;
          wider integers → FP32 vector (as a proxy). On a TPU, f32 → bf16 tensor: XLA runs f32 dots on the
          MXUs as bf16 passes (one or more), so the bf16 rate bounds them whatever the precision setting.
        * vector work: the ``<precision>_vector`` figure if the file gives one, else FP32 vector (f64 needs
          FP64 vector).
        * a unit the device lacks (``unsupported``) falls through to the next in the chain (narrow floats
          widen: fp4 → fp8 → bf16 tensor → vector); an ``unknown`` figure stops the search with
          :class:`PeakUnavailable`, since using a slower unit could make the bound exceed the true time.
        """
        prec = dtype_precision(dtype)
        chain = peak_chain(prec, contraction=contraction, allow_tf32=allow_tf32, bf16_passes=self.kind == "tpu")
        kind = "contraction" if contraction else "vector work"
        skipped: list[str] = []  # why earlier candidates did not apply, for the reason / error
        for fld, optional in chain:
            fig = self.figures.get(fld)
            if fig is None:
                if not optional:
                    raise PeakUnavailable(f"{self.name}: compute.{fld} is not given in {self.origin}",
                                          file=self.origin or None, field=f"compute.{fld}")
                skipped.append(f"no {fld} figure")
                continue
            if fig.status == "unsupported":
                skipped.append(f"{fld} unsupported")
                continue
            if fig.status == "unknown":
                raise PeakUnavailable(
                    f"{self.name}: no peak for {dtype} {kind}: {fig.field} is {self._why(fig)}",
                    file=self.origin or None, field=fig.field, line=fig.line)
            assert fig.value is not None
            if skipped and contraction and fld in FASTEST_WIDENED.get(prec, ()):
                fld, fig = self._fastest(FASTEST_WIDENED[prec], dtype)
                skipped.append(f"the fastest of {', '.join(FASTEST_WIDENED[prec])}")
            p, u = fld.rsplit("_", 1)
            reason = f"{dtype} {kind} → {p} {u}"
            if skipped:
                reason += f" ({'; '.join(skipped)} on {self.name})"
            return PeakChoice(precision=p, unit=u, flop_per_s=fig.value, figure=fig, reason=reason)
        raise PeakUnavailable(  # unreachable with the shipped chains (FP32/FP64 vector end them)
            f"{self.name}: no peak for {dtype} {kind}: {'; '.join(skipped)}"
        )

    def _fastest(self, fields: tuple[str, ...], dtype: str) -> tuple[str, Figure]:
        """The fastest of the figures the target gives among `fields` (a contraction that runs exactly on each:
        targets/peaks.py FASTEST_WIDENED); an unknown one stops, as it might be the fastest."""
        best: tuple[str, Figure] | None = None
        for fld in fields:
            fig = self.figures.get(fld)
            if fig is None or fig.status == "unsupported":
                continue
            if fig.status == "unknown":
                raise PeakUnavailable(f"{self.name}: no peak for {dtype} contraction: {fig.field} is {self._why(fig)}",
                                      file=self.origin or None, field=fig.field, line=fig.line)
            assert fig.value is not None
            if best is None or fig.value > (best[1].value or 0.0):
                best = (fld, fig)
        assert best is not None  # the caller found one of them usable
        return best

    # -- export ---------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data (SI values, sources) for JSON reports."""
        figs: dict[str, Any] = {}
        for name, fig in self.figures.items():
            figs[name] = {"status": fig.status, "value": fig.value, "unit": fig.unit, "source": fig.source}
        return {"name": self.name, "full_name": self.full_name, "vendor": self.vendor, "kind": self.kind,
                "origin": self.origin, "format": self.format, "figures": figs}
