"""The documentation as package data (`solar.docs`): the LLM translator's prompt reads the IR reference,
ir.md, from the installed package, so the file in this folder is its only copy."""
