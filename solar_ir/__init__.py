"""The SIR core: types, expressions, ops, parser, printer, verifier, diagnostics and the pass manager."""
