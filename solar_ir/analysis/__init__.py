"""SOLAR passes/analysis."""
