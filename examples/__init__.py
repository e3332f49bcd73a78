"""The bundled example programs as package data (`solar.examples`): the LLM translator's prompt shows some
of them as worked examples, read from the installed package, so each file in this folder is its only copy."""
